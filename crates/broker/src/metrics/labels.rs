//! Label values as RocketMQ 5.x computes them: `is_system`, `message_type`, `is_retry`.

use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::topic::{
    AUTO_CREATE_TOPIC_KEY_TOPIC, DLQ_GROUP_TOPIC_PREFIX, OFFSET_MOVED_EVENT,
    RETRY_GROUP_TOPIC_PREFIX, SCHEDULE_TOPIC, SELF_TEST_TOPIC, TRANS_CHECK_MAX_TIME_TOPIC,
    TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC,
};

/// `TopicValidator`'s system topics (its fixed set, and the `rmq_sys_` prefix).
pub fn is_system_topic(topic: &str) -> bool {
    const SYSTEM: [&str; 10] = [
        AUTO_CREATE_TOPIC_KEY_TOPIC,
        SCHEDULE_TOPIC,
        "BenchmarkTest",
        TRANS_HALF_TOPIC,
        "RMQ_SYS_TRACE_TOPIC",
        TRANS_OP_HALF_TOPIC,
        TRANS_CHECK_MAX_TIME_TOPIC,
        SELF_TEST_TOPIC,
        OFFSET_MOVED_EVENT,
        "CHECKPOINT_TOPIC",
    ];
    SYSTEM.contains(&topic) || topic.starts_with("rmq_sys_")
}

/// System groups: the `CID_RMQ_SYS_` prefix in any case.
pub fn is_system_group(group: &str) -> bool {
    group
        .get(..12)
        .is_some_and(|p| p.eq_ignore_ascii_case("CID_RMQ_SYS_"))
}

/// `BrokerMetricsManager.isSystem`.
pub fn is_system(topic: &str, group: &str) -> bool {
    is_system_topic(topic) || is_system_group(group)
}

/// Retry and dead-letter topics.
pub fn is_retry_or_dlq(topic: &str) -> bool {
    topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) || topic.starts_with(DLQ_GROUP_TOPIC_PREFIX)
}

/// `message_type` of a send, from its first message's properties and the header's flag of
/// a prepared message: transaction, fifo (sharding key), delay (level or timer), or normal.
pub fn message_type(props: &str, prepared: bool) -> &'static str {
    if prepared {
        return "transaction";
    }
    if properties::find(props, "__SHARDINGKEY").is_some() {
        return "fifo";
    }
    let delayed = [
        "__STARTDELIVERTIME",
        keys::DELAY_TIME_LEVEL,
        "TIMER_DELIVER_MS",
        "TIMER_DELAY_SEC",
        "TIMER_DELAY_MS",
    ]
    .iter()
    .any(|k| properties::find(props, k).is_some());
    if delayed {
        "delay"
    } else {
        "normal"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rocketmq_label_values() {
        assert!(is_system_topic("TBW102") && is_system_topic("rmq_sys_x"));
        assert!(!is_system_topic("orders"));
        assert!(is_system_group("cid_rmq_sys_trans") && !is_system_group("CID"));
        assert!(is_retry_or_dlq("%RETRY%g") && is_retry_or_dlq("%DLQ%g"));
        let props = properties::encode([("DELAY", "3")]);
        assert_eq!(message_type(&props, false), "delay");
        assert_eq!(message_type(&props, true), "transaction");
        let props = properties::encode([("__SHARDINGKEY", "k")]);
        assert_eq!(message_type(&props, false), "fifo");
        assert_eq!(message_type("", false), "normal");
    }
}
