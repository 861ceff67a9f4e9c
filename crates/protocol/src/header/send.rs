//! SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE.

use super::header;
use crate::code::request;

header! {
    /// `SendMessageRequestHeader`; V2 and batch requests use the one-letter aliases
    /// (`SendMessageRequestHeaderV2`).
    pub struct SendMessageRequestHeader aliased for [request::SEND_MESSAGE_V2, request::SEND_BATCH_MESSAGE] {
        /// The producer's group.
        producer_group: String = "producerGroup" | "a",
        /// Destination topic.
        topic: String = "topic" | "b",
        /// Template topic for auto-creation (TBW102).
        default_topic: String = "defaultTopic" | "c",
        /// Queues of an auto-created topic.
        default_topic_queue_nums: i32 = "defaultTopicQueueNums" | "d",
        /// Destination queue (negative: the broker chooses).
        queue_id: i32 = "queueId" | "e",
        /// `MessageSysFlag` bits.
        sys_flag: i32 = "sysFlag" | "f",
        /// When the producer created the message (ms).
        born_timestamp: i64 = "bornTimestamp" | "g",
        /// The user flag.
        flag: i32 = "flag" | "h",
        /// Properties, `k\x01v\x02` encoded.
        properties: Option<String> = "properties" | "i",
        /// Times the message was consumed and given back (retry topic sends).
        reconsume_times: Option<i32> = "reconsumeTimes" | "j",
        /// Unit mode (unused).
        unit_mode: Option<bool> = "unitMode" | "k",
        /// Retries before the dead-letter topic (retry topic sends).
        max_reconsume_times: Option<i32> = "maxReconsumeTimes" | "l",
        /// Whether the body is a batch.
        batch: Option<bool> = "batch" | "m",
        /// The broker the producer meant (4.9.5+, 5.x).
        broker_name: Option<String> = "bname" | "n",
    }
}

header! {
    /// `SendMessageResponseHeader`.
    pub struct SendMessageResponseHeader {
        /// Offset message id (comma-separated for a batch).
        msg_id: String = "msgId",
        /// The queue the message went to.
        queue_id: i32 = "queueId",
        /// Its consume-queue offset (the first of a batch).
        queue_offset: i64 = "queueOffset",
        /// The transaction id of a half message.
        transaction_id: Option<String> = "transactionId",
        /// The broker's region (`MSG_REGION`).
        msg_region: Option<String> = "MSG_REGION",
        /// Whether the broker traces messages (`TRACE_ON`).
        trace_on: Option<String> = "TRACE_ON",
    }
}
