//! Topic name rules. A topic name becomes a directory name under `consumequeue/`, so anything
//! outside RocketMQ's `^[%|a-zA-Z0-9_-]+$` (at most 127 chars) is refused before it reaches
//! the file system: no `/`, no `..`, no NUL.

use crate::error::{ProtocolError, Result};

/// Longest topic name.
pub const TOPIC_MAX_LENGTH: usize = 127;

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
