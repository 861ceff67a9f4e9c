//! Topic name rules and the names of system topics. A topic name becomes a directory name under `consumequeue/`, so anything
//! outside RocketMQ's `^[%|a-zA-Z0-9_-]+$` (at most 127 chars) is refused before it reaches
//! the file system: no `/`, no `..`, no NUL.

use crate::error::{ProtocolError, Result};

/// Longest topic name.
pub const TOPIC_MAX_LENGTH: usize = 127;

/// Template topic producers send with before their topic has a route (auto-creation).
pub const AUTO_CREATE_TOPIC_KEY_TOPIC: &str = "TBW102";
/// Topic the broker creates to test itself.
pub const SELF_TEST_TOPIC: &str = "SELF_TEST_TOPIC";
/// Topic of offset-moved events.
pub const OFFSET_MOVED_EVENT: &str = "OFFSET_MOVED_EVENT";
/// Where delayed messages wait, one queue per delay level (queue id = level - 1).
pub const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";
/// Half (prepared) messages of transactions, queue 0, until their outcome is known.
pub const TRANS_HALF_TOPIC: &str = "RMQ_SYS_TRANS_HALF_TOPIC";
/// Outcomes of half messages: one record per resolved half (tag `d`, body its half offset).
pub const TRANS_OP_HALF_TOPIC: &str = "RMQ_SYS_TRANS_OP_HALF_TOPIC";
/// Half messages whose producers never answered `transactionCheckMax` checks.
pub const TRANS_CHECK_MAX_TIME_TOPIC: &str = "TRANS_CHECK_MAX_TIME_TOPIC";
/// The group under whose offsets the broker keeps its progress through the half and op
/// queues (in `consumerOffset.json`, as RocketMQ keeps it).
pub const TRANS_CHECK_GROUP: &str = "CID_RMQ_SYS_TRANS";
/// Prefix of a consumer group's retry topic.
pub const RETRY_GROUP_TOPIC_PREFIX: &str = "%RETRY%";
/// Prefix of a consumer group's dead-letter topic.
pub const DLQ_GROUP_TOPIC_PREFIX: &str = "%DLQ%";

/// Topic of message traces (clients send to it: not refused for sends).
pub const TRACE_TOPIC: &str = "RMQ_SYS_TRACE_TOPIC";
/// Topic of the broker's benchmark.
pub const BENCHMARK_TOPIC: &str = "BenchmarkTest";
/// Prefix of every other system topic (`rmq_sys_wheel_timer`, `rmq_sys_REVIVE_LOG_*`, ...).
pub const SYSTEM_TOPIC_PREFIX: &str = "rmq_sys_";

/// Whether `topic` is one of RocketMQ's system topics (`TopicValidator.isSystemTopic`; a
/// broker adds its cluster and broker names): created and deleted only by the broker.
pub fn is_system_topic(topic: &str) -> bool {
    matches!(
        topic,
        AUTO_CREATE_TOPIC_KEY_TOPIC
            | SCHEDULE_TOPIC
            | BENCHMARK_TOPIC
            | TRANS_HALF_TOPIC
            | TRACE_TOPIC
            | TRANS_OP_HALF_TOPIC
            | TRANS_CHECK_MAX_TIME_TOPIC
            | SELF_TEST_TOPIC
            | OFFSET_MOVED_EVENT
    ) || topic.starts_with(SYSTEM_TOPIC_PREFIX)
}

/// Whether clients may not send to `topic` (`TopicValidator.isNotAllowedSendTopic`, and the
/// `rmq_sys_` topics the broker writes itself): where the broker keeps messages on its own
/// behalf (delays, half messages, their outcomes, timers, pop checkpoints).
pub fn is_broker_internal_topic(topic: &str) -> bool {
    matches!(
        topic,
        SCHEDULE_TOPIC
            | TRANS_HALF_TOPIC
            | TRANS_OP_HALF_TOPIC
            | TRANS_CHECK_MAX_TIME_TOPIC
            | SELF_TEST_TOPIC
            | OFFSET_MOVED_EVENT
    ) || topic.starts_with(SYSTEM_TOPIC_PREFIX)
}

/// The retry topic of a consumer group.
pub fn retry_topic(group: &str) -> String {
    format!("{RETRY_GROUP_TOPIC_PREFIX}{group}")
}

/// The pop retry topic of `group` on `topic` (RocketMQ's v1 name, `%RETRY%group_topic`).
pub fn pop_retry_topic(topic: &str, group: &str) -> String {
    format!("{RETRY_GROUP_TOPIC_PREFIX}{group}_{topic}")
}

/// The topic a popped message is stored under, from the retry flag of its POP_CK (RocketMQ's
/// `ExtraInfoUtil.getRealTopic`): "0" (or absent) `topic` itself, "1" the group's pop retry
/// topic, "2" its v2 name `%RETRY%group+topic`; `None` for another flag.
pub fn pop_real_topic(topic: &str, group: &str, retry_flag: &str) -> Option<String> {
    match retry_flag {
        "0" | "" => Some(topic.to_owned()),
        "1" => Some(pop_retry_topic(topic, group)),
        "2" => Some(format!("{RETRY_GROUP_TOPIC_PREFIX}{group}+{topic}")),
        _ => None,
    }
}

/// The dead-letter topic of a consumer group.
pub fn dlq_topic(group: &str) -> String {
    format!("{DLQ_GROUP_TOPIC_PREFIX}{group}")
}

/// Checks a topic name, with a reason when it is refused.
pub fn validate_topic(topic: &str) -> Result<()> {
    if topic.is_empty() {
        return Err(ProtocolError::InvalidArgument("topic name is empty".into()));
    }
    if topic.len() > TOPIC_MAX_LENGTH {
        return Err(ProtocolError::InvalidArgument(format!(
            "topic name is {} chars, longer than {TOPIC_MAX_LENGTH}",
            topic.len()
        )));
    }
    let allowed = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'%' | b'|' | b'_' | b'-');
    if !topic.as_bytes().iter().all(allowed) {
        let bad = topic
            .chars()
            .find(|c| !c.is_ascii() || !allowed(&(*c as u8)))
            .unwrap_or('?');
        return Err(ProtocolError::InvalidArgument(format!(
            "topic name {topic:?} contains {bad:?}; allowed: letters, digits, %, |, _ and -"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pop_topics_by_retry_flag() {
        assert_eq!(pop_retry_topic("T", "g"), "%RETRY%g_T");
        assert_eq!(pop_real_topic("T", "g", "0").as_deref(), Some("T"));
        assert_eq!(pop_real_topic("T", "g", "").as_deref(), Some("T"));
        assert_eq!(pop_real_topic("T", "g", "1").as_deref(), Some("%RETRY%g_T"));
        assert_eq!(pop_real_topic("T", "g", "2").as_deref(), Some("%RETRY%g+T"));
        assert_eq!(pop_real_topic("T", "g", "3"), None);
    }

    #[test]
    fn rules() {
        assert!(validate_topic("TopicTest").is_ok());
        assert!(validate_topic("%RETRY%group_1").is_ok());
        assert!(validate_topic(&"a".repeat(127)).is_ok());
        for bad in ["", "../x", "a/b", "a.b", "a\0b", "with space", "é"] {
            assert!(validate_topic(bad).is_err(), "{bad:?}");
        }
        assert!(validate_topic(&"a".repeat(128)).is_err());
    }
}
