//! Messages of the 5.x protocol into the stored form (RocketMQ proxy's `GrpcConverter` and
//! its send path): which property each system property becomes. The way back, a stored
//! message as a client receives it, is [`crate::delivered`].

use std::net::SocketAddr;

use rocketpy_protocol::flag::message as sysflag;
use rocketpy_protocol::message::properties::{self, keys};

use crate::pb::{self, Code};
use crate::status::ProxyError;

/// Largest body the proxy accepts (RocketMQ proxy's `maxMessageSize`, 4 MiB).
pub const MAX_BODY_SIZE: usize = 4 * 1024 * 1024;
/// Most bytes of user properties a message may carry.
const MAX_USER_PROPERTY_BYTES: usize = 16 * 1024;
/// Most user properties a message may carry.
const MAX_USER_PROPERTIES: usize = 128;
/// Longest message group.
const MAX_MESSAGE_GROUP: usize = 64;

/// Declares [`RESERVED`] and [`is_reserved`] from one list, so they cannot disagree.
macro_rules! reserved_names {
    ($($name:literal,)*) => {
        /// Property names the broker and clients reserve (`MessageConst.STRING_HASH_SET`): a
        /// user property may not use them, and on the way back they are not user properties.
        pub const RESERVED: &[&str] = &[$($name),*];

        /// Whether `name` is a reserved property name. Every property of every received
        /// message is checked: a `match` on string literals compiles to length tests and a
        /// compare only for names of the same length (a binary search compared bytes at
        /// each of its ~6 steps, 3 % of a receive).
        pub fn is_reserved(name: &str) -> bool {
            matches!(name, $($name)|*)
        }
    };
}

reserved_names! {
    "1ST_POP_TIME",
    "ARRIVE_TIME",
    "BORN_TIMESTAMP",
    "BUYER_ID",
    "CLUSTER",
    "CONSUME_START_TIME",
    "CORRECTION_FLAG",
    "CORRELATION_ID",
    "DELAY",
    "DLQ_ORIGIN_MESSAGE_ID",
    "DLQ_ORIGIN_TOPIC",
    "DUP_INFO",
    "EXTEND_UNIQ_INFO",
    "INNER_MULTI_QUEUE_OFFSET",
    "INSTANCE_ID",
    "KEYS",
    "MAX_OFFSET",
    "MAX_RECONSUME_TIMES",
    "MIN_OFFSET",
    "MQ2_FLAG",
    "MSG_REGION",
    "MSG_TYPE",
    "ORIGIN_MESSAGE_ID",
    "PGROUP",
    "POP_CK",
    "POP_CK_OFFSET",
    "PUSH_REPLY_TIME",
    "REAL_QID",
    "REAL_TOPIC",
    "RECONSUME_TIME",
    "REPLY_TO_CLIENT",
    "RETRY_TOPIC",
    "TAGS",
    "TIMER_DELAY_LEVEL",
    "TIMER_DELAY_MS",
    "TIMER_DELAY_SEC",
    "TIMER_DELIVER_MS",
    "TIMER_DEL_UNIQKEY",
    "TIMER_DEQUEUE_MS",
    "TIMER_ENQUEUE_MS",
    "TIMER_OUT_MS",
    "TIMER_ROLL_TIMES",
    "TRACE_ON",
    "TRANSFER_FLAG",
    "TRAN_MSG",
    "TRAN_PREPARED_QUEUE_OFFSET",
    "TTL",
    "UNIQ_KEY",
    "WAIT",
    "__BORNHOST",
    "__CRC32#",
}

/// The born host property a 5.x message carries.
pub(crate) const BORN_HOST: &str = "__BORNHOST";
/// Its born time in ms.
const BORN_TIMESTAMP: &str = "BORN_TIMESTAMP";

/// A resource's name as brokers know it: `namespace%name` in a namespace.
pub fn wrap(resource: &pb::Resource) -> String {
    if resource.resource_namespace.is_empty() {
        resource.name.clone()
    } else {
        format!("{}%{}", resource.resource_namespace, resource.name)
    }
}

/// A message ready for SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE.
#[derive(Debug, Clone)]
pub struct Outgoing {
    /// The topic as brokers know it.
    pub topic: String,
    /// Encoded properties.
    pub properties: String,
    /// The body as sent (compressed when the client said GZIP).
    pub body: bytes::Bytes,
    /// SYSFLAG: compressed, transaction prepared.
    pub sys_flag: i32,
    /// Born time (ms).
    pub born_timestamp: i64,
    /// The client's message id (UNIQ_KEY).
    pub message_id: String,
    /// Its message group, for FIFO queue choice.
    pub message_group: Option<String>,
    /// A transactional (half) message.
    pub transactional: bool,
}

fn millis(ts: &prost_types::Timestamp) -> i64 {
    ts.seconds
        .saturating_mul(1000)
        .saturating_add(i64::from(ts.nanos) / 1_000_000)
}

/// A timestamp of `ms` since the epoch.
pub fn timestamp(ms: i64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

/// A duration's milliseconds.
pub fn duration_ms(d: &prost_types::Duration) -> i64 {
    d.seconds
        .saturating_mul(1000)
        .saturating_add(i64::from(d.nanos) / 1_000_000)
}

/// A duration of `ms`.
pub fn duration(ms: i64) -> prost_types::Duration {
    prost_types::Duration {
        seconds: ms / 1000,
        nanos: ((ms % 1000) * 1_000_000) as i32,
    }
}

fn bad(code: Code, message: impl Into<String>) -> ProxyError {
    ProxyError::new(code, message)
}

/// Checks a 5.x message and turns it into the stored form: user properties, then TAGS,
/// KEYS, UNIQ_KEY, the transaction, timer, FIFO and trace properties, as RocketMQ's proxy
/// writes them.
pub fn outgoing(
    m: &pb::Message,
    peer: Option<SocketAddr>,
    now: i64,
    max_delay_ms: i64,
) -> Result<Outgoing, ProxyError> {
    let topic = m
        .topic
        .as_ref()
        .filter(|t| !t.name.is_empty())
        .ok_or_else(|| bad(Code::IllegalTopic, "topic name cannot be empty"))?;
    let sp = m.system_properties.clone().unwrap_or_default();
    if sp.message_id.is_empty() {
        return Err(bad(Code::IllegalMessageId, "message id cannot be empty"));
    }
    if m.body.is_empty() {
        return Err(bad(Code::MessageBodyEmpty, "message body cannot be empty"));
    }
    if m.body.len() > MAX_BODY_SIZE {
        return Err(bad(
            Code::MessageBodyTooLarge,
            format!("message body cannot exceed {MAX_BODY_SIZE} bytes"),
        ));
    }
    if m.user_properties.len() > MAX_USER_PROPERTIES {
        return Err(bad(
            Code::MessagePropertiesTooLarge,
            format!("a message has at most {MAX_USER_PROPERTIES} user properties"),
        ));
    }
    let mut props = String::new();
    let mut user_bytes = 0;
    // Sorted, so a message's stored form does not depend on the map's order.
    let mut user: Vec<(&String, &String)> = m.user_properties.iter().collect();
    user.sort();
    for (k, v) in user {
        if k.is_empty() || is_reserved(k) {
            return Err(bad(
                Code::IllegalMessagePropertyKey,
                format!("property key {k:?} is reserved or empty"),
            ));
        }
        if k.contains(['\u{1}', '\u{2}']) || v.contains(['\u{1}', '\u{2}']) {
            return Err(bad(
                Code::IllegalMessagePropertyKey,
                format!("property {k:?} holds a control character"),
            ));
        }
        user_bytes += k.len() + v.len();
        properties::push(&mut props, k, v);
    }
    if user_bytes > MAX_USER_PROPERTY_BYTES {
        return Err(bad(
            Code::MessagePropertiesTooLarge,
            format!("user properties cannot exceed {MAX_USER_PROPERTY_BYTES} bytes"),
        ));
    }
    let tag = sp.tag.clone().unwrap_or_default();
    if tag.contains('|') {
        return Err(bad(Code::IllegalMessageTag, "a tag cannot contain '|'"));
    }
    properties::push(&mut props, keys::TAGS, &tag);
    if !sp.keys.is_empty() {
        properties::push(&mut props, keys::KEYS, &sp.keys.join(" "));
    }
    properties::push(&mut props, keys::UNIQ_KEY, &sp.message_id);
    let transactional = sp.message_type == pb::MessageType::Transaction as i32;
    let mut sys_flag = 0;
    if transactional {
        properties::push(&mut props, keys::TRANSACTION_PREPARED, "true");
        properties::push(&mut props, keys::PRODUCER_GROUP, &wrap(topic));
        if let Some(d) = &sp.orphaned_transaction_recovery_duration {
            let seconds = (duration_ms(d) / 1000).max(0);
            properties::push(
                &mut props,
                keys::CHECK_IMMUNITY_TIME_IN_SECONDS,
                &seconds.to_string(),
            );
        }
        sys_flag |= sysflag::TRANSACTION_PREPARED_TYPE;
    }
    if let Some(ts) = &sp.delivery_timestamp {
        let at = millis(ts);
        if at - now > max_delay_ms {
            return Err(bad(
                Code::IllegalDeliveryTime,
                format!("delivery time {at} is more than {max_delay_ms} ms ahead"),
            ));
        }
        properties::push(&mut props, keys::TIMER_DELIVER_MS, &at.to_string());
    }
    if let Some(group) = sp.message_group.as_deref().filter(|g| !g.is_empty()) {
        if group.len() >= MAX_MESSAGE_GROUP {
            return Err(bad(
                Code::IllegalMessageGroup,
                format!("a message group has fewer than {MAX_MESSAGE_GROUP} bytes"),
            ));
        }
        properties::push(&mut props, keys::SHARDING_KEY, group);
    }
    if let Some(trace) = sp.trace_context.as_deref().filter(|t| !t.is_empty()) {
        properties::push(&mut props, keys::TRACE_CONTEXT, trace);
    }
    let born_host = if sp.born_host.is_empty() {
        peer.map(|p| p.ip().to_string()).unwrap_or_default()
    } else {
        sp.born_host.clone()
    };
    if !born_host.is_empty() {
        properties::push(&mut props, BORN_HOST, &born_host);
    }
    let born = sp.born_timestamp.as_ref().map_or(now, millis);
    properties::push(&mut props, BORN_TIMESTAMP, &born.to_string());
    if sp.body_encoding == pb::Encoding::Gzip as i32 {
        sys_flag |= sysflag::COMPRESSED;
    }
    Ok(Outgoing {
        topic: wrap(topic),
        properties: props,
        body: bytes::Bytes::copy_from_slice(&m.body),
        sys_flag,
        born_timestamp: born,
        message_id: sp.message_id.clone(),
        message_group: sp.message_group.clone().filter(|g| !g.is_empty()),
        transactional,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(sp: pb::SystemProperties) -> pb::Message {
        pb::Message {
            topic: Some(pb::Resource {
                resource_namespace: String::new(),
                name: "T".into(),
            }),
            user_properties: [("color".to_owned(), "red".to_owned())].into(),
            system_properties: Some(sp),
            body: b"hello".to_vec(),
        }
    }

    #[test]
    fn outgoing_messages_carry_rocketmq_properties() {
        let sp = pb::SystemProperties {
            tag: Some("A".into()),
            keys: vec!["k1".into(), "k2".into()],
            message_id: "0123".into(),
            message_type: pb::MessageType::Transaction as i32,
            message_group: Some("g1".into()),
            delivery_timestamp: Some(timestamp(5000)),
            ..Default::default()
        };
        let out = outgoing(&message(sp), None, 1000, 86_400_000).unwrap();
        let find = |k| properties::find(&out.properties, k).map(str::to_owned);
        assert_eq!(find("color").as_deref(), Some("red"));
        assert_eq!(find("TAGS").as_deref(), Some("A"));
        assert_eq!(find("KEYS").as_deref(), Some("k1 k2"));
        assert_eq!(find("UNIQ_KEY").as_deref(), Some("0123"));
        assert_eq!(find("TRAN_MSG").as_deref(), Some("true"));
        assert_eq!(find("PGROUP").as_deref(), Some("T"));
        assert_eq!(find("TIMER_DELIVER_MS").as_deref(), Some("5000"));
        assert_eq!(find("__SHARDINGKEY").as_deref(), Some("g1"));
        assert_eq!(
            out.sys_flag & sysflag::TRANSACTION_PREPARED_TYPE,
            sysflag::TRANSACTION_PREPARED_TYPE
        );
    }

    #[test]
    fn reserved_names_are_recognised() {
        assert!(RESERVED.iter().all(|n| is_reserved(n)));
        assert!(!is_reserved("color") && !is_reserved("") && !is_reserved("TAG"));
    }

    #[test]
    fn bad_messages_are_refused_with_their_code() {
        let ok_sp = pb::SystemProperties {
            message_id: "1".into(),
            ..Default::default()
        };
        let mut m = message(ok_sp.clone());
        m.system_properties.as_mut().unwrap().message_id.clear();
        assert_eq!(
            outgoing(&m, None, 0, 1).unwrap_err().code,
            Code::IllegalMessageId
        );
        let mut m = message(ok_sp.clone());
        m.body.clear();
        assert_eq!(
            outgoing(&m, None, 0, 1).unwrap_err().code,
            Code::MessageBodyEmpty
        );
        let mut m = message(ok_sp.clone());
        m.user_properties.insert("UNIQ_KEY".into(), "x".into());
        assert_eq!(
            outgoing(&m, None, 0, 1).unwrap_err().code,
            Code::IllegalMessagePropertyKey
        );
        let mut m = message(ok_sp);
        m.system_properties.as_mut().unwrap().delivery_timestamp = Some(timestamp(10_000));
        assert_eq!(
            outgoing(&m, None, 0, 5000).unwrap_err().code,
            Code::IllegalDeliveryTime
        );
    }
}
