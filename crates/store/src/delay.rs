//! Delay levels (`messageDelayLevel`) and the tags code of a stored message.
//!
//! A delayed message is stored in `SCHEDULE_TOPIC_XXXX`, queue `level - 1`, with its delivery
//! time (store time + level delay) as tags code, so the schedule service can tell from the
//! consume queue alone when it is due.

use std::borrow::Cow;

use rocketpy_protocol::flag::message as sys_flag;
use rocketpy_protocol::message::java_hash;
use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::message::record::MessageToStore;
use rocketpy_protocol::topic::SCHEDULE_TOPIC;

use crate::error::{Result, StoreError};

/// Parses `"1s 5s 10s 30s 1m ... 2h"` into milliseconds per level (level 1 first).
pub fn parse_delay_levels(spec: &str) -> Result<Vec<i64>> {
    spec.split_whitespace()
        .map(|item| {
            let (num, unit) = item.split_at(item.len().saturating_sub(1));
            let factor = match unit {
                "s" => 1000,
                "m" => 60_000,
                "h" => 3_600_000,
                "d" => 86_400_000,
                _ => 0,
            };
            match num.parse::<i64>() {
                Ok(n) if factor > 0 && n >= 0 => Ok(n * factor),
                _ => Err(StoreError::InvalidArgument(format!(
                    "bad messageDelayLevel item {item:?} (expected e.g. 5s, 1m, 2h)"
                ))),
            }
        })
        .collect()
}

/// A message with `DELAY=n` goes to the schedule topic (queue `n - 1`), its real topic and
/// queue kept in properties; the schedule service delivers it when due. Levels above the last
/// (`levels`) mean the last; transaction halves and rollbacks are never delayed.
pub fn to_schedule_topic(msg: &MessageToStore, levels: usize) -> Cow<'_, MessageToStore> {
    let tx = sys_flag::transaction_type(msg.sys_flag);
    if msg.topic == SCHEDULE_TOPIC
        || !matches!(
            tx,
            sys_flag::TRANSACTION_NOT_TYPE | sys_flag::TRANSACTION_COMMIT_TYPE
        )
    {
        return Cow::Borrowed(msg);
    }
    let level = match properties::find(&msg.properties, keys::DELAY_TIME_LEVEL)
        .map(|l| l.trim().parse::<i64>())
    {
        Some(Ok(l)) if l > 0 => l.min(levels as i64) as i32,
        _ => return Cow::Borrowed(msg),
    };
    let mut props: Vec<(&str, &str)> = properties::pairs(&msg.properties)
        .filter(|(k, _)| {
            *k != keys::REAL_TOPIC && *k != keys::REAL_QUEUE_ID && *k != keys::DELAY_TIME_LEVEL
        })
        .collect();
    let level_text = level.to_string();
    let qid = msg.queue_id.to_string();
    props.push((keys::DELAY_TIME_LEVEL, &level_text));
    props.push((keys::REAL_TOPIC, &msg.topic));
    props.push((keys::REAL_QUEUE_ID, &qid));
    let mut scheduled = msg.clone();
    scheduled.properties = properties::encode(props);
    scheduled.topic = SCHEDULE_TOPIC.to_owned();
    scheduled.queue_id = level - 1;
    Cow::Owned(scheduled)
}

/// The consume-queue tags code of a record: delivery time for scheduled messages, otherwise
/// the Java hash of its TAGS.
pub fn compute_tags_code(
    topic: &str,
    props: &str,
    store_timestamp: i64,
    delay_levels: &[i64],
) -> i64 {
    if topic == SCHEDULE_TOPIC {
        if let Some(level) =
            properties::find(props, keys::DELAY_TIME_LEVEL).and_then(|l| l.parse::<usize>().ok())
        {
            let level = level.clamp(1, delay_levels.len().max(1));
            if let Some(delay) = delay_levels.get(level - 1) {
                return store_timestamp + delay;
            }
        }
        return store_timestamp;
    }
    java_hash::tags_code(properties::find(props, keys::TAGS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_levels() {
        let levels = parse_delay_levels(crate::config::DEFAULT_DELAY_LEVELS).unwrap();
        assert_eq!(levels.len(), 18);
        assert_eq!(levels[0], 1000);
        assert_eq!(levels[4], 60_000);
        assert_eq!(levels[17], 7_200_000);
        assert!(parse_delay_levels("1s 5x").is_err());
    }

    #[test]
    fn tags_codes() {
        let levels = parse_delay_levels("1s 5s").unwrap();
        let props = properties::encode([("DELAY", "2"), ("TAGS", "TagA")]);
        assert_eq!(
            compute_tags_code(SCHEDULE_TOPIC, &props, 100, &levels),
            5100
        );
        assert_eq!(compute_tags_code("T", &props, 100, &levels), 2598919);
        assert_eq!(compute_tags_code("T", "", 100, &levels), 0);
    }
}
