//! Consumer group requests: CONSUMER_SEND_MSG_BACK, UNREGISTER_CLIENT,
//! GET_CONSUMER_LIST_BY_GROUP and the broker's NOTIFY_CONSUMER_IDS_CHANGED.

use super::header;

header! {
    /// `ConsumerSendMsgBackRequestHeader`.
    pub struct ConsumerSendMsgBackRequestHeader {
        /// CommitLog offset of the message given back.
        offset: i64 = "offset",
        /// The consumer group.
        group: String = "group",
        /// Delay level of the retry (0: by reconsume count; negative: straight to the DLQ).
        delay_level: i32 = "delayLevel",
        /// The message's id.
        origin_msg_id: Option<String> = "originMsgId",
        /// The message's topic.
        origin_topic: Option<String> = "originTopic",
        /// Unit mode (unused).
        unit_mode: Option<bool> = "unitMode",
        /// Retries before the dead-letter topic.
        max_reconsume_times: Option<i32> = "maxReconsumeTimes",
    }
}

header! {
    /// `UnregisterClientRequestHeader`.
    pub struct UnregisterClientRequestHeader {
        /// The client id (`ip@instance`).
        client_id: String = "clientID",
        /// A producer group the client leaves.
        producer_group: Option<String> = "producerGroup",
        /// A consumer group the client leaves.
        consumer_group: Option<String> = "consumerGroup",
    }
}

header! {
    /// `GetConsumerListByGroupRequestHeader`.
    pub struct GetConsumerListByGroupRequestHeader {
        /// The consumer group.
        consumer_group: String = "consumerGroup",
    }
}

header! {
    /// `NotifyConsumerIdsChangedRequestHeader` (broker to client, oneway).
    pub struct NotifyConsumerIdsChangedRequestHeader {
        /// The group whose membership changed.
        consumer_group: String = "consumerGroup",
    }
}
