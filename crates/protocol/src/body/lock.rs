//! LOCK_BATCH_MQ and UNLOCK_BATCH_MQ bodies (orderly consumers lock the queues they consume).

use serde::{Deserialize, Serialize};

/// A queue: topic, broker group and queue id (`MessageQueue`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageQueue {
    /// The topic.
    pub topic: String,
    /// The broker group.
    pub broker_name: String,
    /// The queue.
    pub queue_id: i32,
}

/// `LockBatchRequestBody` and `UnlockBatchRequestBody` (same fields).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LockBatchRequestBody {
    /// The consumer group.
    pub consumer_group: String,
    /// The client asking.
    pub client_id: String,
    /// Whether a broker should lock only its own queues (RocketMQ's lock forwarding; rocketpy
    /// has one master per group, so every broker does).
    #[serde(default)]
    pub only_this_broker: bool,
    /// The queues to lock or unlock.
    #[serde(default)]
    pub mq_set: Vec<MessageQueue>,
}

/// `LockBatchResponseBody`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockBatchResponseBody {
    /// The requested queues the client now holds.
    #[serde(rename = "lockOKMQSet", default)]
    pub lock_ok_mq_set: Vec<MessageQueue>,
}
