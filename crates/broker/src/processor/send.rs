//! SEND_MESSAGE and SEND_MESSAGE_V2: validate, find or auto-create the topic, store.

use std::sync::Arc;

use rocketpy_protocol::body::perm;
use rocketpy_protocol::code::{request, response};
use rocketpy_protocol::message::batch::{decode_batch, BatchItem};
use rocketpy_protocol::message::java_hash;
use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::message::record::MessageToStore;
use rocketpy_protocol::topic::validate_topic;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult, Reply};
use rocketpy_store::StoreError;

use super::ok;
use crate::topic_config::AUTO_CREATE_TOPIC_KEY_TOPIC;
use crate::BrokerInner;

/// `SendMessageRequestHeader`, read from either the V1 names or the V2 one-letter aliases.
#[derive(Debug, Clone)]
pub struct SendHeader {
    pub producer_group: String,
    pub topic: String,
    pub default_topic: String,
    pub default_topic_queue_nums: i32,
    pub queue_id: i32,
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub flag: i32,
    pub properties: String,
    pub reconsume_times: i32,
    pub max_reconsume_times: Option<i32>,
    pub batch: bool,
}

/// (V1 name, V2 alias) of each header field.
const FIELDS: [(&str, &str); 13] = [
    ("producerGroup", "a"),
    ("topic", "b"),
    ("defaultTopic", "c"),
    ("defaultTopicQueueNums", "d"),
    ("queueId", "e"),
    ("sysFlag", "f"),
    ("bornTimestamp", "g"),
    ("flag", "h"),
    ("properties", "i"),
    ("reconsumeTimes", "j"),
    ("unitMode", "k"),
    ("maxReconsumeTimes", "l"),
    ("batch", "m"),
];

struct Fields<'a> {
    req: &'a RemotingCommand,
    v2: bool,
}

impl Fields<'_> {
    fn raw(&self, i: usize) -> Option<&str> {
        let (v1, v2) = FIELDS[i];
        self.req.field_opt(if self.v2 { v2 } else { v1 })
    }

    fn name(&self, i: usize) -> String {
        let (v1, v2) = FIELDS[i];
        if self.v2 {
            format!("{v2} ({v1})")
        } else {
            v1.to_owned()
        }
    }

    fn required(&self, i: usize) -> Result<&str, ProcessError> {
        self.raw(i).ok_or_else(|| {
            ProcessError::new(
                response::SYSTEM_ERROR,
                format!("missing required header field `{}`", self.name(i)),
            )
        })
    }

    fn parse<T: std::str::FromStr>(&self, i: usize, value: &str) -> Result<T, ProcessError> {
        value.trim().parse().map_err(|_| {
            ProcessError::new(
                response::SYSTEM_ERROR,
                format!("invalid header field `{}`: {value:?}", self.name(i)),
            )
        })
    }

    fn required_num<T: std::str::FromStr>(&self, i: usize) -> Result<T, ProcessError> {
        let v = self.required(i)?;
        self.parse(i, v)
    }

    fn optional_num<T: std::str::FromStr>(&self, i: usize) -> Result<Option<T>, ProcessError> {
        self.raw(i).map(|v| self.parse(i, v)).transpose()
    }
}

/// Parses the header of a send request.
pub fn parse_header(req: &RemotingCommand) -> Result<SendHeader, ProcessError> {
    let f = Fields {
        req,
        v2: req.code == request::SEND_MESSAGE_V2
            || req.code == request::SEND_BATCH_MESSAGE && req.field_opt("b").is_some(),
    };
    Ok(SendHeader {
        producer_group: f.required(0)?.to_owned(),
        topic: f.required(1)?.to_owned(),
        default_topic: f.required(2)?.to_owned(),
        default_topic_queue_nums: f.required_num(3)?,
        queue_id: f.required_num(4)?,
        sys_flag: f.required_num(5)?,
        born_timestamp: f.required_num(6)?,
        flag: f.required_num(7)?,
        properties: f.raw(8).unwrap_or_default().to_owned(),
        reconsume_times: f.optional_num(9)?.unwrap_or(0),
        max_reconsume_times: f.optional_num(11)?,
        batch: f.optional_num::<bool>(12)?.unwrap_or(false),
    })
}

/// Checks broker permission and the topic, auto-creating it when allowed; returns its write
/// queue count and the validated queue id.
pub(crate) fn check_topic(
    broker: &Arc<BrokerInner>,
    h: &SendHeader,
    peer: &str,
) -> Result<(i32, i32), ProcessError> {
    let cfg = broker.config();
    if !perm::is_writeable(cfg.broker_permission) {
        return Err(ProcessError::new(
            response::NO_PERMISSION,
            format!(
                "the broker[{}] sending message is forbidden",
                cfg.broker_name
            ),
        ));
    }
    validate_topic(&h.topic)
        .map_err(|e| ProcessError::new(response::SYSTEM_ERROR, e.to_string()))?;
    if h.topic == AUTO_CREATE_TOPIC_KEY_TOPIC || h.topic == rocketpy_store::delay::SCHEDULE_TOPIC {
        return Err(ProcessError::new(
            response::NO_PERMISSION,
            format!("Sending message to topic[{}] is forbidden.", h.topic),
        ));
    }
    if let Some(group) = h
        .topic
        .strip_prefix(crate::topic_config::RETRY_GROUP_TOPIC_PREFIX)
    {
        super::retry::retry_topic(broker, group)?;
    }
    let created = broker
        .topics
        .create_in_send(
            &h.topic,
            &h.default_topic,
            h.default_topic_queue_nums,
            cfg.auto_create_topic_enable,
        )
        .map_err(|e| ProcessError::new(response::SYSTEM_ERROR, e.to_string()))?;
    let Some((topic_cfg, just_created)) = created else {
        return Err(ProcessError::new(
            response::TOPIC_NOT_EXIST,
            format!(
                "topic[{}] not exist, apply first please! (from {peer})",
                h.topic
            ),
        ));
    };
    if just_created {
        broker.register_now.notify_one();
    }
    if !perm::is_writeable(topic_cfg.perm) {
        return Err(ProcessError::new(
            response::NO_PERMISSION,
            format!("the topic[{}] sending message is forbidden", h.topic),
        ));
    }
    let valid = topic_cfg.write_queue_nums.max(topic_cfg.read_queue_nums);
    let queue_id = if h.queue_id < 0 {
        (next_spread() % topic_cfg.write_queue_nums.max(1) as u32) as i32
    } else {
        h.queue_id
    };
    if queue_id >= valid {
        return Err(ProcessError::new(
            response::SYSTEM_ERROR,
            format!("request queueId[{queue_id}] is illegal, topic {} has {valid} queues; producer: {peer}", h.topic),
        ));
    }
    Ok((topic_cfg.write_queue_nums, queue_id))
}

/// Spreads sends that let the broker choose the queue (queueId < 0) over the write queues.
fn next_spread() -> u32 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The properties string as stored: the producer's, without `WAIT` (RocketMQ 4.9 drops it to
/// save 9 bytes a message) and with `CLUSTER` added. Producer order is kept.
pub(crate) fn stored_properties(props: &str, cluster: &str) -> String {
    let mut out = String::with_capacity(props.len() + cluster.len() + 10);
    let mut has_cluster = false;
    for item in props.split(properties::PROPERTY_SEPARATOR) {
        let Some((k, v)) = item.split_once(properties::NAME_VALUE_SEPARATOR) else {
            continue;
        };
        if k == keys::WAIT_STORE_MSG_OK {
            continue;
        }
        has_cluster |= k == keys::CLUSTER;
        out.push_str(k);
        out.push(properties::NAME_VALUE_SEPARATOR);
        out.push_str(v);
        out.push(properties::PROPERTY_SEPARATOR);
    }
    if !has_cluster {
        out.push_str(&properties::encode([(keys::CLUSTER, cluster)]));
    }
    out
}

/// Maps a store error to the response RocketMQ gives.
pub(crate) fn store_error(e: StoreError) -> ProcessError {
    match e {
        StoreError::MessageTooLarge { .. } | StoreError::InvalidArgument(_) => ProcessError::new(
            response::MESSAGE_ILLEGAL,
            format!("the message is illegal: {e}"),
        ),
        StoreError::ShutDown => ProcessError::new(
            response::SERVICE_NOT_AVAILABLE,
            "service not available now: the store is shut down",
        ),
        StoreError::DiskFull { .. } => ProcessError::new(
            response::SERVICE_NOT_AVAILABLE,
            format!("service not available now: {e}"),
        ),
        other => ProcessError::new(response::SYSTEM_ERROR, other.to_string()),
    }
}

/// Back-pressure (RocketMQ's flow control): a send that waited longer than
/// `waitTimeMillsInSendQueue` behind earlier requests, or arriving while a put has been stuck
/// in the store for `osPageCacheBusyTimeOutMills`, is answered SYSTEM_BUSY at once instead of
/// queueing more work; producers retry elsewhere or later.
pub(crate) fn check_busy(
    broker: &Arc<BrokerInner>,
    req: &RemotingCommand,
) -> Result<(), ProcessError> {
    let cfg = broker.config();
    if let Some(at) = req.received_at {
        let waited = at.elapsed().as_millis() as u64;
        if waited > cfg.wait_time_mills_in_send_queue {
            return Err(ProcessError::new(
                response::SYSTEM_BUSY,
                format!("[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: {waited}ms"),
            ));
        }
    }
    if broker
        .store
        .is_os_page_cache_busy(cfg.os_page_cache_busy_time_out_mills as i64)
    {
        return Err(ProcessError::new(
            response::SYSTEM_BUSY,
            "[PC_SYNCHRONIZED]broker busy, start flow control for a while",
        ));
    }
    Ok(())
}

/// Retry-topic sends that have been retried enough go to the group's dead-letter topic
/// (RocketMQ's `handleRetryAndDLQ`); returns the topic and queue to store into.
fn retry_or_dlq(
    broker: &Arc<BrokerInner>,
    h: &SendHeader,
    queue_id: i32,
) -> Result<(String, i32), ProcessError> {
    let Some(group) = h
        .topic
        .strip_prefix(crate::topic_config::RETRY_GROUP_TOPIC_PREFIX)
    else {
        return Ok((h.topic.clone(), queue_id));
    };
    let Some(cfg) = broker.groups.find_or_create(group) else {
        return Err(ProcessError::new(
            response::SUBSCRIPTION_GROUP_NOT_EXIST,
            format!("subscription group not exist, {group}"),
        ));
    };
    let max = h.max_reconsume_times.unwrap_or(cfg.retry_max_times);
    if h.reconsume_times < max {
        return Ok((h.topic.clone(), queue_id));
    }
    let dlq = super::retry::dlq_topic(broker, group)?;
    Ok((dlq, 0))
}

/// The message to store for `item`, sent with header `h` to `(topic, queue_id)`.
fn message(
    broker: &Arc<BrokerInner>,
    conn: &Arc<Connection>,
    h: &SendHeader,
    (topic, queue_id): (&str, i32),
    item: BatchItem,
) -> MessageToStore {
    let props = stored_properties(&item.properties, &broker.config().broker_cluster_name);
    let tags_code = java_hash::tags_code(properties::find(&props, keys::TAGS));
    MessageToStore {
        topic: topic.to_owned(),
        queue_id,
        flag: item.flag,
        body: item.body,
        properties: props,
        tags_code,
        sys_flag: h.sys_flag,
        born_timestamp: h.born_timestamp,
        born_host: conn.peer(),
        store_host: broker.store_host,
        reconsume_times: h.reconsume_times,
        prepared_transaction_offset: 0,
    }
}

fn check_body_size(broker: &Arc<BrokerInner>, len: usize) -> Result<(), ProcessError> {
    let max = broker.settings.store.max_message_size;
    if len > max {
        return Err(ProcessError::new(
            response::MESSAGE_ILLEGAL,
            format!("the message body size {len} exceeds maxMessageSize {max}"),
        ));
    }
    Ok(())
}

/// Handles SEND_MESSAGE / SEND_MESSAGE_V2.
pub fn process(
    broker: &Arc<BrokerInner>,
    conn: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    check_busy(broker, req)?;
    let h = parse_header(req)?;
    let peer = conn.peer().to_string();
    let (_, queue_id) = check_topic(broker, &h, &peer)?;
    check_body_size(broker, req.body.len())?;
    let (topic, queue_id) = retry_or_dlq(broker, &h, queue_id)?;
    let item = BatchItem {
        flag: h.flag,
        body: req.body.clone(),
        properties: h.properties.clone(),
    };
    let msg = message(broker, conn, &h, (&topic, queue_id), item);
    let appended = broker
        .store
        .put_messages_nowait(std::slice::from_ref(&msg))
        .map_err(store_error)?;
    let Some(result) = appended.results.into_iter().next() else {
        return Err(ProcessError::new(
            response::SYSTEM_ERROR,
            "the store accepted no message",
        ));
    };
    let resp = ok(req)
        .with_field("msgId", &result.msg_id)
        .with_field("queueId", queue_id)
        .with_field("queueOffset", result.logics_offset)
        .with_field("MSG_REGION", "DefaultRegion")
        .with_field("TRACE_ON", "true");
    Ok(with_flush_wait(broker, resp, appended.flush))
}

/// Handles SEND_BATCH_MESSAGE: every message of the batch goes to the same queue,
/// contiguously; the answer names them all (offset ids joined by commas).
pub fn process_batch(
    broker: &Arc<BrokerInner>,
    conn: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    check_busy(broker, req)?;
    let h = parse_header(req)?;
    if h.topic
        .starts_with(crate::topic_config::RETRY_GROUP_TOPIC_PREFIX)
    {
        return Err(ProcessError::new(
            response::MESSAGE_ILLEGAL,
            format!("[BATCH] topic {} does not support retry topics", h.topic),
        ));
    }
    let peer = conn.peer().to_string();
    let (_, queue_id) = check_topic(broker, &h, &peer)?;
    let items = decode_batch(&req.body).map_err(|e| {
        ProcessError::new(
            response::MESSAGE_ILLEGAL,
            format!("the batch is illegal: {e}"),
        )
    })?;
    let msgs = items
        .into_iter()
        .map(|it| {
            check_body_size(broker, it.body.len())?;
            Ok(message(broker, conn, &h, (&h.topic, queue_id), it))
        })
        .collect::<Result<Vec<_>, ProcessError>>()?;
    let appended = broker
        .store
        .put_messages_nowait(&msgs)
        .map_err(store_error)?;
    let ids: Vec<&str> = appended.results.iter().map(|r| r.msg_id.as_str()).collect();
    let first = appended
        .results
        .first()
        .map(|r| r.logics_offset)
        .unwrap_or(-1);
    let resp = ok(req)
        .with_field("msgId", ids.join(","))
        .with_field("queueId", queue_id)
        .with_field("queueOffset", first)
        .with_field("MSG_REGION", "DefaultRegion")
        .with_field("TRACE_ON", "true");
    Ok(with_flush_wait(broker, resp, appended.flush))
}

/// Answers at once, or (SYNC_FLUSH) once the disk sync covering the message returned;
/// FLUSH_DISK_TIMEOUT after `syncFlushTimeout` (the message is stored either way).
pub(crate) fn with_flush_wait(
    broker: &Arc<BrokerInner>,
    mut resp: RemotingCommand,
    flush: Option<rocketpy_store::FlushTicket>,
) -> Reply {
    let Some(ticket) = flush else {
        return Reply::Now(Some(resp));
    };
    let timeout = std::time::Duration::from_millis(broker.settings.store.sync_flush_timeout);
    Reply::Later(Box::pin(async move {
        if !matches!(tokio::time::timeout(timeout, ticket).await, Ok(true)) {
            resp.code = response::FLUSH_DISK_TIMEOUT;
        }
        Some(resp)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_drop_wait_and_add_cluster() {
        let p = properties::encode([("TAGS", "A"), ("WAIT", "true"), ("KEYS", "k")]);
        assert_eq!(
            stored_properties(&p, "C"),
            properties::encode([("TAGS", "A"), ("KEYS", "k"), ("CLUSTER", "C")])
        );
        let with = properties::encode([("CLUSTER", "X")]);
        assert_eq!(stored_properties(&with, "C"), with);
    }

    #[test]
    fn v2_header_and_missing_field_remark() {
        let req = RemotingCommand::request(request::SEND_MESSAGE_V2)
            .with_field("a", "pg")
            .with_field("b", "T")
            .with_field("c", "TBW102")
            .with_field("d", "4")
            .with_field("e", "1")
            .with_field("f", "0")
            .with_field("g", "123")
            .with_field("h", "0")
            .with_field("j", "2");
        let h = parse_header(&req).unwrap();
        assert_eq!(
            (h.topic.as_str(), h.queue_id, h.reconsume_times),
            ("T", 1, 2)
        );
        let mut missing = req.clone();
        missing.ext_fields.remove("b");
        let err = parse_header(&missing).unwrap_err();
        assert!(err.remark.contains("topic"), "{}", err.remark);
        let mut bad = req;
        bad.ext_fields.insert("e".into(), "x".into());
        assert!(parse_header(&bad).unwrap_err().remark.contains("queueId"));
    }
}
