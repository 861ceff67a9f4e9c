//! A stored message as a 5.x client receives it (RocketMQ proxy's `GrpcConverter`): which
//! property becomes which system property, written as the protobuf `apache.rocketmq.v2.Message`
//! straight from the stored record. A receive of 32 converts 32 messages; building a
//! `pb::Message` (a map and a dozen strings each) and then encoding it was a sixth of the
//! gRPC thread's time, so the encoding is written here directly, field by field.
//!
//! What must stay true: the bytes decode to exactly what the rules below describe
//! ([`incoming`] is that decoding, and the tests compare it field by field); a field the
//! protocol marks `optional` is written when set, even with a default value, and the others
//! only when not default (proto3, as prost writes them).

use std::net::SocketAddr;

use bytes::{BufMut, Bytes, BytesMut};
use prost::encoding::{encode_key, encode_varint, encoded_len_varint, WireType};
use rocketpy_protocol::flag::message as sysflag;
use rocketpy_protocol::message::msg_id::{hex_into, push_offset_msg_id};
use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::message::record::RecordView;

use crate::convert::{is_reserved, timestamp, BORN_HOST};
use crate::pb;

/// The MD5 of `body` as upper-case hex (what clients check received bodies against).
pub fn md5_hex(body: &[u8]) -> String {
    let digits = md5_digits(body);
    std::str::from_utf8(&digits)
        .expect("hex digits are ASCII")
        .to_owned()
}

fn md5_digits(body: &[u8]) -> [u8; 32] {
    use md5::{Digest, Md5};
    let mut out = [0u8; 32];
    hex_into(&Md5::digest(body), &mut out);
    out
}

/// The text of the hosts of messages converted one after another: a batch's messages share
/// their store host (and often their born host), so each is written once, not per message.
#[derive(Debug, Default)]
pub struct HostTexts {
    store: LastText<SocketAddr>,
    born: LastText<std::net::IpAddr>,
}

/// The text of the last value asked for.
#[derive(Debug)]
struct LastText<K>(Option<(K, String)>);

impl<K> Default for LastText<K> {
    fn default() -> Self {
        LastText(None)
    }
}

impl<K: PartialEq + std::fmt::Display> LastText<K> {
    fn of(&mut self, key: K) -> &str {
        if !matches!(&self.0, Some((k, _)) if *k == key) {
            let text = key.to_string();
            self.0 = Some((key, text));
        }
        self.0.as_ref().map_or("", |(_, t)| t.as_str())
    }
}

/// What a receive delivers with a message besides the record: the topic the client asked
/// for (a retried message is stored under its pop retry topic), the receipt handle of a
/// popped message, and the delivery attempt when it is not reconsume times + 1 (FIFO
/// counts).
#[derive(Debug, Clone, Copy)]
pub struct Delivery<'a> {
    /// The topic as the client named it.
    pub topic: &'a pb::Resource,
    /// The receipt handle, for popped messages.
    pub receipt_handle: Option<&'a str>,
    /// The delivery attempt, if not the record's reconsume times + 1.
    pub delivery_attempt: Option<i32>,
}

/// `v` as a 5.x client receives it, as a `pb::Message` (for the rare paths that inspect the
/// message, such as transaction checks). One definition of the conversion: this decodes
/// what [`encode`] writes.
pub fn incoming(v: &RecordView<'_>, d: Delivery<'_>, hosts: &mut HostTexts) -> pb::Message {
    let mut out = BytesMut::new();
    let mut scratch = Vec::new();
    let bytes = encode(v, d, hosts, &mut scratch, &mut out);
    prost::Message::decode(bytes).expect("the encoder writes a valid Message")
}

/// Appends `v`, as the protobuf `Message` a 5.x client receives, to `out`; returns its bytes.
/// `scratch` is reused from one message to the next (the system properties are written there
/// first, to know their length).
pub fn encode(
    v: &RecordView<'_>,
    d: Delivery<'_>,
    hosts: &mut HostTexts,
    scratch: &mut Vec<u8>,
    out: &mut BytesMut,
) -> Bytes {
    let mut user: Vec<(&str, &str)> = Vec::new();
    let (mut tag, mut keys_text, mut message_id) = (None, None, "");
    let (mut group, mut trace, mut born_host) = (None, None, None);
    let mut deliver_at = None;
    let mut message_type = pb::MessageType::Normal;
    for (k, val) in properties::pairs(v.properties) {
        match k {
            keys::TAGS if !val.is_empty() => tag = Some(val),
            keys::KEYS => keys_text = Some(val),
            keys::UNIQ_KEY => message_id = val,
            keys::TRANSACTION_PREPARED if val == "true" => {
                message_type = pb::MessageType::Transaction
            }
            keys::TIMER_DELIVER_MS => {
                if let Ok(ms) = val.parse::<i64>() {
                    deliver_at = Some(timestamp(ms));
                }
                message_type = pb::MessageType::Delay;
            }
            keys::TIMER_DELAY_SEC | keys::TIMER_DELAY_MS | keys::DELAY_TIME_LEVEL => {
                message_type = pb::MessageType::Delay
            }
            keys::SHARDING_KEY => {
                group = Some(val);
                if message_type == pb::MessageType::Normal {
                    message_type = pb::MessageType::Fifo;
                }
            }
            keys::TRACE_CONTEXT => trace = Some(val),
            BORN_HOST => born_host = Some(val),
            _ if is_reserved(k) => {}
            _ => user.push((k, val)),
        }
    }
    let mut offset_id = String::new();
    if message_id.is_empty() {
        push_offset_msg_id(&mut offset_id, &v.store_host, v.physical_offset);
        message_id = &offset_id;
    }

    // SystemProperties, in field order.
    let sp = scratch;
    sp.clear();
    if let Some(t) = tag {
        put_str(sp, 1, t);
    }
    for k in keys_text.into_iter().flat_map(|t| t.split(' ')) {
        if !k.is_empty() {
            put_str(sp, 2, k);
        }
    }
    put_str_nonempty(sp, 3, message_id);
    let digest = md5_digits(v.body);
    put_len(sp, 4, 2 + 2 + digest.len());
    put_varint(sp, 1, pb::DigestType::Md5 as u64);
    put_bytes(sp, 2, &digest);
    let gzip = v.sys_flag & sysflag::COMPRESSED != 0;
    let encoding = if gzip {
        pb::Encoding::Gzip
    } else {
        pb::Encoding::Identity
    };
    put_varint(sp, 5, encoding as u64);
    put_varint(sp, 6, message_type as u64);
    prost::encoding::message::encode(7, &timestamp(v.born_timestamp), sp);
    let born = born_host.unwrap_or_else(|| hosts.born.of(v.born_host.ip()));
    put_str_nonempty(sp, 8, born);
    prost::encoding::message::encode(9, &timestamp(v.store_timestamp), sp);
    put_str_nonempty(sp, 10, hosts.store.of(v.store_host));
    if let Some(at) = &deliver_at {
        prost::encoding::message::encode(11, at, sp);
    }
    if let Some(h) = d.receipt_handle {
        put_str(sp, 12, h);
    }
    if v.queue_id != 0 {
        put_varint(sp, 13, v.queue_id as i64 as u64);
    }
    put_varint(sp, 14, v.queue_offset as u64);
    let attempt = d.delivery_attempt.unwrap_or(v.reconsume_times + 1);
    put_varint(sp, 16, attempt as i64 as u64);
    if let Some(g) = group {
        put_str(sp, 17, g);
    }
    if let Some(t) = trace {
        put_str(sp, 18, t);
    }

    // Message: topic, user properties, system properties, body.
    let topic_len = str_len(1, &d.topic.resource_namespace) + str_len(2, &d.topic.name);
    let entry_len = |k: &str, v: &str| str_len(1, k) + str_len(2, v);
    out.reserve(
        field_len(1, topic_len)
            + user
                .iter()
                .map(|(k, v)| field_len(2, entry_len(k, v)))
                .sum::<usize>()
            + field_len(3, sp.len())
            + field_len(4, v.body.len()),
    );
    put_len(out, 1, topic_len);
    put_str_nonempty(out, 1, &d.topic.resource_namespace);
    put_str_nonempty(out, 2, &d.topic.name);
    for (k, val) in &user {
        put_len(out, 2, entry_len(k, val));
        put_str_nonempty(out, 1, k);
        put_str_nonempty(out, 2, val);
    }
    put_bytes(out, 3, sp);
    if !v.body.is_empty() {
        put_bytes(out, 4, v.body);
    }
    out.split().freeze()
}

/// Bytes of a length-delimited field of `len` bytes.
fn field_len(tag: u32, len: usize) -> usize {
    prost::encoding::key_len(tag) + encoded_len_varint(len as u64) + len
}

/// Bytes of a string field written by [`put_str_nonempty`] (none for an empty one).
fn str_len(tag: u32, s: &str) -> usize {
    if s.is_empty() {
        0
    } else {
        field_len(tag, s.len())
    }
}

/// The head of a length-delimited field whose `len` bytes follow.
fn put_len(buf: &mut impl BufMut, tag: u32, len: usize) {
    encode_key(tag, WireType::LengthDelimited, buf);
    encode_varint(len as u64, buf);
}

fn put_bytes(buf: &mut impl BufMut, tag: u32, bytes: &[u8]) {
    put_len(buf, tag, bytes.len());
    buf.put_slice(bytes);
}

fn put_str(buf: &mut impl BufMut, tag: u32, s: &str) {
    put_bytes(buf, tag, s.as_bytes());
}

/// A proto3 string without presence: not written when empty.
fn put_str_nonempty(buf: &mut impl BufMut, tag: u32, s: &str) {
    if !s.is_empty() {
        put_str(buf, tag, s);
    }
}

fn put_varint(buf: &mut impl BufMut, tag: u32, v: u64) {
    encode_key(tag, WireType::Varint, buf);
    encode_varint(v, buf);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record<'a>(properties: &'a str, body: &'a [u8]) -> RecordView<'a> {
        RecordView {
            total_size: 0,
            body_crc: 0,
            queue_id: 3,
            flag: 0,
            queue_offset: 42,
            physical_offset: 4096,
            sys_flag: 0,
            born_timestamp: 1_700_000_000_123,
            born_host: "10.0.0.7:5555".parse().unwrap(),
            store_timestamp: 1_700_000_000_456,
            store_host: "127.0.0.1:10911".parse().unwrap(),
            reconsume_times: 2,
            prepared_transaction_offset: 0,
            body,
            topic: "%RETRY%g_T",
            properties,
        }
    }

    fn topic() -> pb::Resource {
        pb::Resource {
            resource_namespace: "ns".into(),
            name: "T".into(),
        }
    }

    fn delivered(v: &RecordView<'_>, handle: Option<&str>, attempt: Option<i32>) -> pb::Message {
        let t = topic();
        let d = Delivery {
            topic: &t,
            receipt_handle: handle,
            delivery_attempt: attempt,
        };
        incoming(v, d, &mut HostTexts::default())
    }

    #[test]
    fn system_and_user_properties_are_split_as_rocketmqs_proxy_does() {
        let props = properties::encode([
            ("TAGS", "TagA"),
            ("KEYS", "k1 k2  k3"),
            ("UNIQ_KEY", "ABCDEF"),
            ("__SHARDINGKEY", "g1"),
            ("TRACE_CONTEXT", "trace"),
            ("__BORNHOST", "1.2.3.4:99"),
            ("WAIT", "true"),
            ("color", "red"),
            ("size", ""),
        ]);
        let v = record(&props, b"hello");
        let m = delivered(&v, Some("handle-1"), Some(7));
        assert_eq!(m.topic, Some(topic()));
        assert_eq!(m.body, b"hello");
        let user: Vec<_> = {
            let mut u: Vec<_> = m.user_properties.into_iter().collect();
            u.sort();
            u
        };
        assert_eq!(
            user,
            [
                ("color".into(), "red".into()),
                ("size".into(), String::new())
            ]
        );
        let sp = m.system_properties.unwrap();
        let want = pb::SystemProperties {
            tag: Some("TagA".into()),
            keys: vec!["k1".into(), "k2".into(), "k3".into()],
            message_id: "ABCDEF".into(),
            body_digest: Some(pb::Digest {
                r#type: pb::DigestType::Md5 as i32,
                checksum: "5D41402ABC4B2A76B9719D911017C592".into(),
            }),
            body_encoding: pb::Encoding::Identity as i32,
            message_type: pb::MessageType::Fifo as i32,
            born_timestamp: Some(timestamp(1_700_000_000_123)),
            born_host: "1.2.3.4:99".into(),
            store_timestamp: Some(timestamp(1_700_000_000_456)),
            store_host: "127.0.0.1:10911".into(),
            receipt_handle: Some("handle-1".into()),
            queue_id: 3,
            queue_offset: Some(42),
            delivery_attempt: Some(7),
            message_group: Some("g1".into()),
            trace_context: Some("trace".into()),
            ..Default::default()
        };
        assert_eq!(sp, want);
    }

    #[test]
    fn defaults_offset_ids_delays_and_transactions() {
        // No properties: the offset id, the born host's address, attempt = reconsume + 1,
        // and no tag (an empty TAGS is no tag either).
        let mut v = record("", b"");
        v.queue_id = -1;
        v.sys_flag = sysflag::COMPRESSED;
        let m = delivered(&v, None, None);
        let sp = m.system_properties.unwrap();
        assert_eq!(
            sp.message_id,
            rocketpy_protocol::message::record::offset_msg_id(&v.store_host, 4096)
        );
        assert_eq!(sp.born_host, "10.0.0.7");
        assert_eq!(sp.delivery_attempt, Some(3));
        assert_eq!(sp.queue_id, -1);
        assert_eq!(sp.tag, None);
        assert_eq!(sp.receipt_handle, None);
        assert_eq!(sp.body_encoding, pb::Encoding::Gzip as i32);
        assert_eq!(sp.message_type, pb::MessageType::Normal as i32);
        assert!(m.body.is_empty() && m.user_properties.is_empty());

        let delayed = properties::encode([("TAGS", ""), ("TIMER_DELIVER_MS", "5000")]);
        let sp = delivered(&record(&delayed, b"x"), None, None)
            .system_properties
            .unwrap();
        assert_eq!(sp.tag, None);
        assert_eq!(sp.message_type, pb::MessageType::Delay as i32);
        assert_eq!(sp.delivery_timestamp, Some(timestamp(5000)));

        let tx = properties::encode([("TRAN_MSG", "true"), ("__SHARDINGKEY", "g")]);
        let sp = delivered(&record(&tx, b"x"), None, None)
            .system_properties
            .unwrap();
        assert_eq!(sp.message_type, pb::MessageType::Transaction as i32);
        assert_eq!(sp.message_group.as_deref(), Some("g"));
    }

    #[test]
    fn a_batch_shares_one_buffer_and_each_message_has_its_own_bytes() {
        let (props_a, props_b) = (
            properties::encode([("UNIQ_KEY", "A")]),
            properties::encode([("UNIQ_KEY", "B")]),
        );
        let (a, b) = (record(&props_a, b"first"), record(&props_b, b"second"));
        let t = topic();
        let d = Delivery {
            topic: &t,
            receipt_handle: None,
            delivery_attempt: None,
        };
        let (mut hosts, mut scratch, mut out) = (HostTexts::default(), Vec::new(), BytesMut::new());
        let ea = encode(&a, d, &mut hosts, &mut scratch, &mut out);
        let eb = encode(&b, d, &mut hosts, &mut scratch, &mut out);
        let ma: pb::Message = prost::Message::decode(ea.clone()).unwrap();
        let mb: pb::Message = prost::Message::decode(eb).unwrap();
        assert_eq!(ma.system_properties.as_ref().unwrap().message_id, "A");
        assert_eq!(mb.system_properties.unwrap().message_id, "B");
        assert_eq!(mb.body, b"second");
        // What prost writes for the decoded message is as long as what was written.
        assert_eq!(prost::Message::encoded_len(&ma), ea.len());
    }

    #[test]
    fn digests_are_upper_case_md5() {
        assert_eq!(md5_hex(b""), "D41D8CD98F00B204E9800998ECF8427E");
    }
}
