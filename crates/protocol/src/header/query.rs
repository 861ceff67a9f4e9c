//! QUERY_MESSAGE (by key) and VIEW_MESSAGE_BY_ID.

use super::header;

header! {
    /// `QueryMessageRequestHeader`.
    pub struct QueryMessageRequestHeader {
        /// The topic.
        topic: String = "topic",
        /// A key (KEYS or UNIQ_KEY).
        key: String = "key",
        /// Most messages wanted.
        max_num: i32 = "maxNum",
        /// Earliest store time (ms).
        begin_timestamp: i64 = "beginTimestamp",
        /// Latest store time (ms).
        end_timestamp: i64 = "endTimestamp",
    }
}

header! {
    /// `QueryMessageResponseHeader`.
    pub struct QueryMessageResponseHeader {
        /// Store time of the newest indexed message.
        index_last_update_timestamp: i64 = "indexLastUpdateTimestamp",
        /// CommitLog offset the index reached.
        index_last_update_phyoffset: i64 = "indexLastUpdatePhyoffset",
    }
}

header! {
    /// `ViewMessageRequestHeader`.
    pub struct ViewMessageRequestHeader {
        /// The message's topic (5.x; optional).
        topic: Option<String> = "topic",
        /// The message's CommitLog offset.
        offset: i64 = "offset",
    }
}
