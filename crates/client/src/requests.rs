//! A producer's send requests: the SEND_MESSAGE header fields every request shares, one
//! message as SEND_MESSAGE_V2, and an auto-batched lane's items as SEND_BATCH_MESSAGE (or as
//! SEND_MESSAGE_V2 when the batch holds one message: every broker takes it, and it is stored
//! exactly as a single send stores it).

use bytes::Bytes;
use rocketpy_protocol::clock::now_millis;
use rocketpy_protocol::code::request;
use rocketpy_protocol::header::SendMessageRequestHeader;
use rocketpy_protocol::RemotingCommand;

use crate::lanes::Lane;

/// The header fields all of one producer's requests share.
#[derive(Debug, Clone)]
pub struct Template {
    pub group: String,
    pub default_topic: String,
    pub default_topic_queue_nums: i32,
}

impl Template {
    /// The header of a request to `lane`.
    pub fn header<X>(
        &self,
        lane: &Lane<X>,
        flag: i32,
        properties: Option<String>,
        batch: bool,
    ) -> SendMessageRequestHeader {
        SendMessageRequestHeader {
            producer_group: self.group.clone(),
            topic: lane.topic.clone(),
            default_topic: self.default_topic.clone(),
            default_topic_queue_nums: self.default_topic_queue_nums,
            queue_id: lane.queue_id,
            sys_flag: 0,
            born_timestamp: now_millis(),
            flag,
            properties,
            reconsume_times: Some(0),
            unit_mode: Some(false),
            max_reconsume_times: None,
            batch: Some(batch),
            broker_name: None,
        }
    }

    /// One message (`properties` encoded, `UNIQ_KEY` included) to `lane`.
    pub fn single<X>(
        &self,
        lane: &Lane<X>,
        flag: i32,
        properties: String,
        body: Bytes,
    ) -> RemotingCommand {
        let header = self.header(lane, flag, Some(properties), false);
        let mut cmd = RemotingCommand::request(request::SEND_MESSAGE_V2).with_header(&header);
        cmd.body = body;
        cmd
    }

    /// The request that carries `count` items of `lane`, `body` their batch encodings
    /// (`encode_batch_item`) concatenated in order.
    pub fn batch<X>(&self, lane: &Lane<X>, body: Vec<u8>, count: usize) -> RemotingCommand {
        if count == 1 {
            if let Some((flag, range, props)) = split_item(&body) {
                return self.single(lane, flag, props, Bytes::from(body).slice(range));
            }
        }
        let header = self.header(lane, 0, None, true);
        let mut cmd = RemotingCommand::request(request::SEND_BATCH_MESSAGE).with_header(&header);
        cmd.body = Bytes::from(body);
        cmd
    }
}

/// The flag, body range and properties of one encoded batch item (the layout
/// `encode_batch_item` writes: `[total][magic][crc][flag][bodyLen][body][propLen][props]`);
/// None when `item` is shorter than its lengths say.
fn split_item(item: &[u8]) -> Option<(i32, std::ops::Range<usize>, String)> {
    let be = |at: usize| {
        item.get(at..at + 4)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let flag = be(12)?;
    let body_len = usize::try_from(be(16)?).ok()?;
    let body = 20..20usize.checked_add(body_len)?;
    let props_len = item.get(body.end..body.end + 2)?;
    let props_len = u16::from_be_bytes([props_len[0], props_len[1]]) as usize;
    let props = item.get(body.end + 2..body.end + 2 + props_len)?;
    Some((flag, body, String::from_utf8_lossy(props).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocketpy_protocol::message::batch::{decode_batch, encode_batch_item};

    fn lane() -> Lane {
        Lane {
            addr: "127.0.0.1:10911".into(),
            broker_name: "broker-a".into(),
            topic: "T".into(),
            queue_id: 3,
            extra: (),
        }
    }

    fn template() -> Template {
        Template {
            group: "g".into(),
            default_topic: "TBW102".into(),
            default_topic_queue_nums: 4,
        }
    }

    #[test]
    fn one_item_goes_as_a_plain_send_of_its_own_fields() {
        let mut body = Vec::new();
        encode_batch_item(&mut body, 7, b"hello", "UNIQ_KEY\u{1}u1\u{2}").expect("encodes");
        let cmd = template().batch(&lane(), body, 1);
        assert_eq!(cmd.code, request::SEND_MESSAGE_V2);
        assert_eq!(&cmd.body[..], b"hello");
        let h = &cmd.ext_fields;
        // SEND_MESSAGE_V2's short names: b topic, e queue, h flag, i properties, m batch.
        assert_eq!(h.get("b").map(String::as_str), Some("T"));
        assert_eq!(h.get("e").map(String::as_str), Some("3"));
        assert_eq!(h.get("h").map(String::as_str), Some("7"));
        assert_eq!(h.get("i").map(String::as_str), Some("UNIQ_KEY\u{1}u1\u{2}"));
        assert_eq!(h.get("m").map(String::as_str), Some("false"));
    }

    #[test]
    fn several_items_go_as_one_batch_in_order() {
        let mut body = Vec::new();
        for (i, text) in ["a", "bb", "ccc"].iter().enumerate() {
            let props = format!("UNIQ_KEY\u{1}u{i}\u{2}");
            encode_batch_item(&mut body, 0, text.as_bytes(), &props).expect("encodes");
        }
        let cmd = template().batch(&lane(), body, 3);
        assert_eq!(cmd.code, request::SEND_BATCH_MESSAGE);
        assert_eq!(cmd.ext_fields.get("m").map(String::as_str), Some("true"));
        let items = decode_batch(&cmd.body).expect("decodes");
        let bodies: Vec<&[u8]> = items.iter().map(|i| &i.body[..]).collect();
        assert_eq!(bodies, [&b"a"[..], b"bb", b"ccc"]);
    }

    #[test]
    fn a_short_item_is_not_read_past_its_end() {
        let mut body = Vec::new();
        encode_batch_item(&mut body, 0, b"hello", "").expect("encodes");
        for cut in 0..body.len() - 2 {
            assert!(split_item(&body[..cut]).is_none(), "cut at {cut}");
        }
        // Unreadable as one item: it goes as a batch, for the broker to judge.
        let cmd = template().batch(&lane(), body[..10].to_vec(), 1);
        assert_eq!(cmd.code, request::SEND_BATCH_MESSAGE);
    }
}
