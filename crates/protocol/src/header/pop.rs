//! Pop consumption (RocketMQ 5.x): POP_MESSAGE, ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME.
//! A popped message is invisible to the group for `invisibleTime` ms; an ack removes it, and
//! one not acked in time is delivered again. `extraInfo` is the message's POP_CK text (see
//! `rocketpy_broker::pop::extra_info`).

use super::header;

header! {
    /// `PopMessageRequestHeader` (POP_MESSAGE).
    pub struct PopMessageRequestHeader {
        /// The consumer group.
        consumer_group: String = "consumerGroup",
        /// The topic.
        topic: String = "topic",
        /// One queue, or -1 for every readable queue.
        queue_id: i32 = "queueId",
        /// Most messages wanted (at most 32).
        max_msg_nums: i32 = "maxMsgNums",
        /// How long the messages stay invisible to the group (ms).
        invisible_time: i64 = "invisibleTime",
        /// How long to wait for messages when none are there (ms; 0 answers at once).
        poll_time: i64 = "pollTime",
        /// When the requester sent it (ms); absent or 0 means "now" (RocketMQ's proxy sends 0).
        born_time: Option<i64> = "bornTime",
        /// Where a group with no offset starts: 0 the first offset, 1 the last.
        init_mode: i32 = "initMode",
        /// "TAG" (or "SQL92", which rocketpy does not evaluate).
        exp_type: Option<String> = "expType",
        /// The filter expression (`*` when absent).
        exp: Option<String> = "exp",
        /// FIFO: a queue is held until its popped messages are acked or visible again.
        order: Option<bool> = "order",
        /// The client's id for this receive: a retried receive with the same id gets the same
        /// messages of a held FIFO queue.
        attempt_id: Option<String> = "attemptId",
    }
}

header! {
    /// `PopMessageResponseHeader`.
    pub struct PopMessageResponseHeader {
        /// The pop's time (ms), part of each message's POP_CK.
        pop_time: i64 = "popTime",
        /// The invisible time asked for (ms).
        invisible_time: i64 = "invisibleTime",
        /// The revive queue of the pop's checkpoint (999: a FIFO pop).
        revive_qid: i32 = "reviveQid",
        /// Messages left in the queues read (a hint).
        rest_num: i64 = "restNum",
        /// `<retry flag> <queueId> <startOffset>` per queue read, joined by `;`.
        start_offset_info: Option<String> = "startOffsetInfo",
        /// `<retry flag> <queueId> <offset>,<offset>...` per queue read, joined by `;`.
        msg_offset_info: Option<String> = "msgOffsetInfo",
        /// FIFO pops: how often each message was delivered before (see the broker's `pop`).
        order_count_info: Option<String> = "orderCountInfo",
    }
}

header! {
    /// `AckMessageRequestHeader` (ACK_MESSAGE).
    pub struct AckMessageRequestHeader {
        /// The consumer group.
        consumer_group: String = "consumerGroup",
        /// The topic the message was read from (its pop retry topic for a retried message).
        topic: String = "topic",
        /// Its queue.
        queue_id: i32 = "queueId",
        /// The message's POP_CK text.
        extra_info: String = "extraInfo",
        /// Its queue offset.
        offset: i64 = "offset",
    }
}

header! {
    /// `ChangeInvisibleTimeRequestHeader` (CHANGE_MESSAGE_INVISIBLETIME).
    pub struct ChangeInvisibleTimeRequestHeader {
        /// The consumer group.
        consumer_group: String = "consumerGroup",
        /// The topic the message was read from.
        topic: String = "topic",
        /// Its queue.
        queue_id: i32 = "queueId",
        /// The message's POP_CK text.
        extra_info: String = "extraInfo",
        /// Its queue offset.
        offset: i64 = "offset",
        /// The new invisible time, from now (ms).
        invisible_time: i64 = "invisibleTime",
    }
}

header! {
    /// `ChangeInvisibleTimeResponseHeader`.
    pub struct ChangeInvisibleTimeResponseHeader {
        /// The pop time the message's new POP_CK carries.
        pop_time: i64 = "popTime",
        /// The new invisible time (ms).
        invisible_time: i64 = "invisibleTime",
        /// The revive queue.
        revive_qid: i32 = "reviveQid",
    }
}
