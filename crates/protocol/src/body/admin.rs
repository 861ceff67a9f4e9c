//! Bodies of the administration requests mqadmin sends to brokers (statistics, connections,
//! runtime figures, offset resets).
//!
//! Three of them (`TopicStatsTable`, `ConsumeStats`, `ResetOffsetBody`) hold a map keyed by
//! `MessageQueue`, which fastjson writes with the queue's JSON object as the key. serde cannot
//! write such a map, so those bodies are written by [`mq_map`] exactly as fastjson does, and
//! read back through [`super::fastjson`], which turns each key into a string holding the
//! object (see [`parse_mq_key`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::fastjson::mq_key;
use super::heartbeat::{ConsumeFromWhere, ConsumeType, MessageModel};
use super::{MessageQueue, SubscriptionData};

/// Writes `{<queue>:<value>,...}` with fastjson's object keys.
pub fn mq_map<'a, V: Serialize + 'a>(
    entries: impl IntoIterator<Item = (&'a MessageQueue, &'a V)>,
) -> Vec<u8> {
    let mut out = vec![b'{'];
    for (i, (mq, value)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(&mq_key(&mq.topic, &mq.broker_name, mq.queue_id));
        out.push(b':');
        // Plain structs and numbers always serialise.
        out.extend_from_slice(&serde_json::to_vec(value).unwrap_or_else(|_| b"null".to_vec()));
    }
    out.push(b'}');
    out
}

/// The queue a normalised object key holds (see the module documentation).
pub fn parse_mq_key(key: &str) -> Option<MessageQueue> {
    super::fastjson::from_slice(key.as_bytes()).ok()
}

/// `TopicOffset`: one queue of GET_TOPIC_STATS_INFO.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicOffset {
    /// The first offset still stored.
    pub min_offset: i64,
    /// One past the last offset.
    pub max_offset: i64,
    /// Store time of the last message (0 when the queue is empty).
    pub last_update_timestamp: i64,
}

/// `TopicStatsTable` (GET_TOPIC_STATS_INFO).
pub fn topic_stats_table(offsets: &BTreeMap<MessageQueue, TopicOffset>) -> Vec<u8> {
    let mut out = b"{\"offsetTable\":".to_vec();
    out.extend_from_slice(&mq_map(offsets));
    out.push(b'}');
    out
}

/// `OffsetWrapper`: one queue of GET_CONSUME_STATS.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OffsetWrapper {
    /// One past the queue's last offset.
    pub broker_offset: i64,
    /// The group's committed offset (0 when none).
    pub consumer_offset: i64,
    /// 5.x: the offset pulled up to (rocketpy: the committed offset).
    pub pull_offset: i64,
    /// Store time of the last consumed message (0 when none).
    pub last_timestamp: i64,
}

/// `ConsumeStats` (GET_CONSUME_STATS).
pub fn consume_stats(offsets: &BTreeMap<MessageQueue, OffsetWrapper>, consume_tps: f64) -> Vec<u8> {
    let mut out = b"{\"consumeTps\":".to_vec();
    out.extend_from_slice(&serde_json::to_vec(&consume_tps).unwrap_or_else(|_| b"0.0".to_vec()));
    out.extend_from_slice(b",\"offsetTable\":");
    out.extend_from_slice(&mq_map(offsets));
    out.push(b'}');
    out
}

/// `ResetOffsetBody`: the offsets an INVOKE_BROKER_TO_RESET_OFFSET set, also sent to each
/// consumer in RESET_CONSUMER_CLIENT_OFFSET.
pub fn reset_offset_body(offsets: &BTreeMap<MessageQueue, i64>) -> Vec<u8> {
    let mut out = b"{\"offsetTable\":".to_vec();
    out.extend_from_slice(&mq_map(offsets));
    out.push(b'}');
    out
}

/// Reads the `offsetTable` of a `ResetOffsetBody` (or any map keyed by queue).
pub fn parse_mq_table<V: serde::de::DeserializeOwned>(
    body: &[u8],
) -> Result<BTreeMap<MessageQueue, V>, String> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Table<V> {
        #[serde(default = "BTreeMap::new")]
        offset_table: BTreeMap<String, V>,
    }
    let table: Table<V> = super::fastjson::from_slice(body).map_err(|e| e.to_string())?;
    table
        .offset_table
        .into_iter()
        .map(|(k, v)| {
            parse_mq_key(&k)
                .map(|mq| (mq, v))
                .ok_or_else(|| format!("not a message queue key: {k}"))
        })
        .collect()
}

/// `Connection`: one client connection of a group.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientConnection {
    /// The client's id.
    pub client_id: String,
    /// Its address, `ip:port`.
    pub client_addr: String,
    /// Its language (`JAVA`, `CPP`, `PYTHON`, ...).
    pub language: String,
    /// Its protocol version (`MQVersion`'s ordinal).
    pub version: i32,
}

/// `ConsumerConnection` (GET_CONSUMER_CONNECTION_LIST).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerConnection {
    /// The group's live connections.
    pub connection_set: Vec<ClientConnection>,
    /// Topic -> subscription.
    pub subscription_table: BTreeMap<String, SubscriptionData>,
    /// Push or pull.
    pub consume_type: ConsumeType,
    /// Clustering or broadcasting.
    pub message_model: MessageModel,
    /// Where a new group starts.
    pub consume_from_where: ConsumeFromWhere,
}

/// `ProducerConnection` (GET_PRODUCER_CONNECTION_LIST).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProducerConnection {
    /// The group's live connections.
    pub connection_set: Vec<ClientConnection>,
}

/// `KVTable` (GET_BROKER_RUNTIME_INFO).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KvTable {
    /// Key -> value, both text.
    pub table: BTreeMap<String, String>,
}

/// `GroupList` (QUERY_TOPIC_CONSUME_BY_WHO).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupList {
    /// Group names.
    pub group_list: Vec<String>,
}

/// `BrokerStatsItem`: one window of a statistic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BrokerStatsItem {
    /// Total in the window.
    pub sum: i64,
    /// Per second over the window.
    pub tps: f64,
    /// Average per event (`sum / times`).
    pub avgpt: f64,
}

/// `BrokerStatsData` (VIEW_BROKER_STATS_DATA).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerStatsData {
    /// The last minute.
    pub stats_minute: BrokerStatsItem,
    /// The last hour.
    pub stats_hour: BrokerStatsItem,
    /// The last day.
    pub stats_day: BrokerStatsItem,
}

/// `ConsumeQueueData`: one consume-queue unit in QUERY_CONSUME_QUEUE's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumeQueueData {
    /// Where the record starts in the CommitLog.
    #[serde(default)]
    pub physic_offset: i64,
    /// The record's size in the CommitLog.
    #[serde(default)]
    pub physic_size: i32,
    /// The tag's hash (a delayed message's delivery time).
    #[serde(default)]
    pub tags_code: i64,
    /// The unit's extension (consume queue ext, which rocketpy does not write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extend_data_json: Option<String>,
    /// The extension's filter bit map.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bit_map: Option<String>,
    /// Whether the group's filter kept the unit (only evaluated with an extension).
    #[serde(default)]
    pub eval: bool,
    /// Why the extension is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msg: Option<String>,
}

/// `QueryConsumeQueueResponseBody` (QUERY_CONSUME_QUEUE). As fastjson does, absent values
/// are left out, not written as `null`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryConsumeQueueResponseBody {
    /// The asking group's subscription to the topic, when the group was named and is online.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription_data: Option<SubscriptionData>,
    /// The group's filter data as text, or why there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter_data: Option<String>,
    /// The units from the asked index on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_data: Option<Vec<ConsumeQueueData>>,
    /// One past the queue's last offset.
    #[serde(default)]
    pub max_queue_index: i64,
    /// The queue's first stored offset.
    #[serde(default)]
    pub min_queue_index: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mq(q: i32) -> MessageQueue {
        MessageQueue {
            topic: "T".into(),
            broker_name: "b".into(),
            queue_id: q,
        }
    }

    #[test]
    fn topic_stats_are_written_as_fastjson_does_and_read_back() {
        let table: BTreeMap<_, _> = (0..2)
            .map(|q| {
                let o = TopicOffset {
                    min_offset: 0,
                    max_offset: 10 + q as i64,
                    last_update_timestamp: 5,
                };
                (mq(q), o)
            })
            .collect();
        let body = topic_stats_table(&table);
        let text = std::str::from_utf8(&body).unwrap();
        assert!(
            text.starts_with(
                r#"{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"minOffset":0,"maxOffset":10,"#
            ),
            "{text}"
        );
        let back: BTreeMap<MessageQueue, TopicOffset> = parse_mq_table(&body).unwrap();
        assert_eq!(back, table);
    }

    #[test]
    fn consume_stats_and_reset_bodies_read_back() {
        let offsets: BTreeMap<_, _> = [(mq(3), 7i64)].into_iter().collect();
        assert_eq!(
            parse_mq_table::<i64>(&reset_offset_body(&offsets)).unwrap(),
            offsets
        );
        let stats: BTreeMap<_, _> = [(mq(1), OffsetWrapper::default())].into_iter().collect();
        let body = consume_stats(&stats, 1.5);
        let v: serde_json::Value = super::super::fastjson::from_slice(&body).unwrap();
        assert_eq!(v["consumeTps"], 1.5);
        assert_eq!(parse_mq_table::<OffsetWrapper>(&body).unwrap(), stats);
        assert!(parse_mq_table::<i64>(br#"{"offsetTable":{"x":1}}"#).is_err());
    }
}
