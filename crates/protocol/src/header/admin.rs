//! Administration: UPDATE_AND_CREATE_TOPIC.

use super::header;

header! {
    /// `CreateTopicRequestHeader`.
    pub struct CreateTopicRequestHeader {
        /// The topic.
        topic: String = "topic",
        /// Template topic (TBW102).
        default_topic: Option<String> = "defaultTopic",
        /// Queues consumers read.
        read_queue_nums: i32 = "readQueueNums",
        /// Queues producers write.
        write_queue_nums: i32 = "writeQueueNums",
        /// Permission bits.
        perm: i32 = "perm",
        /// "SINGLE_TAG" or "MULTI_TAG".
        topic_filter_type: Option<String> = "topicFilterType",
        /// Topic system flags.
        topic_sys_flag: Option<i32> = "topicSysFlag",
        /// Whether the topic is ordered.
        order: Option<bool> = "order",
    }
}
