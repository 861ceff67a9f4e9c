//! PULL_MESSAGE.

use super::header;

header! {
    /// `PullMessageRequestHeader`.
    pub struct PullMessageRequestHeader {
        /// The consumer group.
        consumer_group: String = "consumerGroup",
        /// The topic.
        topic: String = "topic",
        /// The queue.
        queue_id: i32 = "queueId",
        /// First offset wanted.
        queue_offset: i64 = "queueOffset",
        /// Most messages wanted.
        max_msg_nums: i32 = "maxMsgNums",
        /// `PullSysFlag` bits (see [`crate::flag::pull`]).
        sys_flag: i32 = "sysFlag",
        /// The consumer's offset to commit (with `COMMIT_OFFSET`).
        commit_offset: i64 = "commitOffset",
        /// How long the broker may hold the request (with `SUSPEND`).
        suspend_timeout_millis: i64 = "suspendTimeoutMillis",
        /// The subscription expression (with `SUBSCRIPTION`).
        subscription: Option<String> = "subscription",
        /// Version of the subscription.
        sub_version: Option<i64> = "subVersion",
        /// "TAG" or "SQL92".
        expression_type: Option<String> = "expressionType",
        /// Most bytes wanted (5.x).
        max_msg_bytes: Option<i32> = "maxMsgBytes",
    }
}

header! {
    /// `PullMessageResponseHeader`.
    pub struct PullMessageResponseHeader {
        /// Which broker of the group to pull from next (0 = master).
        suggest_which_broker_id: i64 = "suggestWhichBrokerId",
        /// Where the next pull starts.
        next_begin_offset: i64 = "nextBeginOffset",
        /// The queue's first offset.
        min_offset: i64 = "minOffset",
        /// The queue's end offset.
        max_offset: i64 = "maxOffset",
    }
}
