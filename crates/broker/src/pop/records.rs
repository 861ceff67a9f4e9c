//! The revive log's records, with RocketMQ 5.x's field names (`PopCheckPoint`, `AckMsg`):
//! a checkpoint ("ck") written when messages are popped, and an ack ("ack") when one of
//! them is acked, changed or revived, or a batch ack ("bAck") when several of one checkpoint
//! are acked at once. They are messages of the revive topic, so they are as
//! durable as any message (the store's flush policy) and survive a restart: the broker
//! rebuilds its checkpoints by reading them again (see `PopService::replay`).

use serde::{Deserialize, Serialize};

/// Tag of a checkpoint record.
pub const CK_TAG: &str = "ck";
/// Tag of an ack record.
pub const ACK_TAG: &str = "ack";
/// Tag of a batch ack record (RocketMQ's `PopAckConstants.BATCH_ACK_TAG`).
pub const BATCH_ACK_TAG: &str = "bAck";

/// `PopCheckPoint`: the messages one pop took from one queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointRecord {
    /// First offset.
    #[serde(rename = "so")]
    pub start_offset: i64,
    /// Pop time (ms).
    #[serde(rename = "pt")]
    pub pop_time: i64,
    /// Invisible time (ms).
    #[serde(rename = "it")]
    pub invisible_time: i64,
    /// Acked messages' bits (RocketMQ keeps this 0 in the record; acks are separate records).
    #[serde(rename = "bm", default)]
    pub bit_map: i64,
    /// Number of messages.
    #[serde(rename = "n")]
    pub num: i32,
    /// Queue.
    #[serde(rename = "q")]
    pub queue_id: i32,
    /// The topic read (a pop retry topic for retried messages).
    #[serde(rename = "t")]
    pub topic: String,
    /// Consumer group.
    #[serde(rename = "c")]
    pub group: String,
    /// Revive queue offset (RocketMQ fills it when reviving; kept for its readers).
    #[serde(rename = "ro", default)]
    pub revive_offset: i64,
    /// Each message's offset minus `so`.
    #[serde(rename = "d", default)]
    pub diffs: Vec<i64>,
    /// Broker name.
    #[serde(rename = "bn", default)]
    pub broker_name: String,
    /// How often the checkpoint was put again after a failed revive.
    #[serde(rename = "rp", default)]
    pub re_put_times: Option<String>,
}

/// `AckMsg`: one message of a checkpoint is done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AckRecord {
    /// The acked offset.
    #[serde(rename = "ao")]
    pub ack_offset: i64,
    /// Its checkpoint's first offset.
    #[serde(rename = "so")]
    pub start_offset: i64,
    /// Consumer group.
    #[serde(rename = "c")]
    pub group: String,
    /// The topic read.
    #[serde(rename = "t")]
    pub topic: String,
    /// Queue.
    #[serde(rename = "q")]
    pub queue_id: i32,
    /// Its checkpoint's pop time.
    #[serde(rename = "pt")]
    pub pop_time: i64,
    /// Broker name.
    #[serde(rename = "bn", default)]
    pub broker_name: String,
}

/// `BatchAckMsg`: several messages of one checkpoint are done (an `AckMsg` whose `ao` is -1
/// and whose offsets are in `aol`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchAckRecord {
    /// The ack fields; `ack_offset` is -1.
    #[serde(flatten)]
    pub ack: AckRecord,
    /// The acked offsets.
    #[serde(rename = "aol", default)]
    pub ack_offsets: Vec<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_use_rocketmq_field_names() {
        let ck = CheckpointRecord {
            start_offset: 5,
            pop_time: 1000,
            invisible_time: 60000,
            bit_map: 0,
            num: 2,
            queue_id: 1,
            topic: "T".into(),
            group: "g".into(),
            revive_offset: 0,
            diffs: vec![0, 3],
            broker_name: "b".into(),
            re_put_times: None,
        };
        let json = serde_json::to_value(&ck).unwrap();
        assert_eq!(json["so"], 5);
        assert_eq!(json["d"], serde_json::json!([0, 3]));
        assert_eq!(json["c"], "g");
        let back: CheckpointRecord = serde_json::from_str(
            r#"{"so":5,"pt":1000,"it":60000,"n":2,"q":1,"t":"T","c":"g","d":[0,3]}"#,
        )
        .unwrap();
        assert_eq!(back.diffs, ck.diffs);
        let ack: AckRecord =
            serde_json::from_str(r#"{"ao":8,"so":5,"c":"g","t":"T","q":1,"pt":1000,"bn":"b"}"#)
                .unwrap();
        assert_eq!(ack.ack_offset, 8);
        let batch: BatchAckRecord = serde_json::from_str(
            r#"{"aol":[5,7],"ao":-1,"so":5,"c":"g","t":"T","q":1,"pt":1000,"bn":"b"}"#,
        )
        .unwrap();
        assert_eq!((batch.ack.start_offset, batch.ack_offsets), (5, vec![5, 7]));
    }
}
