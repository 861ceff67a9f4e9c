//! Consumer offsets and queue offsets: QUERY/UPDATE_CONSUMER_OFFSET, GET_MAX/MIN_OFFSET,
//! SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME.

use super::header;

header! {
    /// `QueryConsumerOffsetRequestHeader`.
    pub struct QueryConsumerOffsetRequestHeader {
        /// The consumer group.
        consumer_group: String = "consumerGroup",
        /// The topic.
        topic: String = "topic",
        /// The queue.
        queue_id: i32 = "queueId",
        /// Answer 0 instead of QUERY_NOT_FOUND for a queue without an offset (5.x).
        set_zero_if_not_found: Option<bool> = "setZeroIfNotFound",
    }
}

header! {
    /// `QueryConsumerOffsetResponseHeader`.
    pub struct QueryConsumerOffsetResponseHeader {
        /// The committed offset.
        offset: i64 = "offset",
    }
}

header! {
    /// `UpdateConsumerOffsetRequestHeader`.
    pub struct UpdateConsumerOffsetRequestHeader {
        /// The consumer group.
        consumer_group: String = "consumerGroup",
        /// The topic.
        topic: String = "topic",
        /// The queue.
        queue_id: i32 = "queueId",
        /// The offset to commit.
        commit_offset: i64 = "commitOffset",
    }
}

header! {
    /// `GetMaxOffsetRequestHeader`.
    pub struct GetMaxOffsetRequestHeader {
        /// The topic.
        topic: String = "topic",
        /// The queue.
        queue_id: i32 = "queueId",
    }
}

header! {
    /// `GetMaxOffsetResponseHeader`.
    pub struct GetMaxOffsetResponseHeader {
        /// The queue's end offset.
        offset: i64 = "offset",
    }
}

header! {
    /// `GetMinOffsetRequestHeader`.
    pub struct GetMinOffsetRequestHeader {
        /// The topic.
        topic: String = "topic",
        /// The queue.
        queue_id: i32 = "queueId",
    }
}

header! {
    /// `GetMinOffsetResponseHeader`.
    pub struct GetMinOffsetResponseHeader {
        /// The queue's first offset.
        offset: i64 = "offset",
    }
}

header! {
    /// `SearchOffsetRequestHeader`.
    pub struct SearchOffsetRequestHeader {
        /// The topic.
        topic: String = "topic",
        /// The queue.
        queue_id: i32 = "queueId",
        /// Store time (ms) to search for.
        timestamp: i64 = "timestamp",
    }
}

header! {
    /// `SearchOffsetResponseHeader`.
    pub struct SearchOffsetResponseHeader {
        /// The first offset stored at or after the timestamp.
        offset: i64 = "offset",
    }
}

header! {
    /// `GetEarliestMsgStoretimeRequestHeader`.
    pub struct GetEarliestMsgStoretimeRequestHeader {
        /// The topic.
        topic: String = "topic",
        /// The queue.
        queue_id: i32 = "queueId",
    }
}

header! {
    /// `GetEarliestMsgStoretimeResponseHeader`.
    pub struct GetEarliestMsgStoretimeResponseHeader {
        /// Store time (ms) of the queue's first message.
        timestamp: i64 = "timestamp",
    }
}
