//! RocketMQ 5's topic attributes: the `attributes` field of UPDATE_AND_CREATE_TOPIC
//! (`+key=value,-key`, as `mqadmin updateTopic -a` sends it; RocketMQ's `AttributeParser`),
//! applied to a topic's current attributes (its `AttributeUtil.alterCurrentAttributes` over
//! `TopicAttributes.ALL`), and the topic message type they give.
//!
//! What must stay true: only what rocketpy does is accepted — `message.type` (the types a
//! topic takes), and `queue.type` / `cleanup.policy` at the values rocketpy stores
//! (`SimpleCQ`, `DELETE`); a batch consume queue, compaction or a per-topic retention is
//! refused with why, never stored and ignored. Parsing is linear and bounded
//! ([`MAX_ATTRIBUTES`]).

use std::collections::BTreeMap;

/// Most modifications one request may carry.
pub const MAX_ATTRIBUTES: usize = 32;

/// The topic message type's attribute.
pub const MESSAGE_TYPE: &str = "message.type";

/// What a topic takes (RocketMQ's `TopicMessageType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicMessageType {
    Unspecified,
    Normal,
    Fifo,
    Delay,
    Transaction,
    Mixed,
}

impl TopicMessageType {
    /// From the attribute's value (RocketMQ's names).
    pub fn parse(value: &str) -> Option<Self> {
        Some(match value {
            "UNSPECIFIED" => Self::Unspecified,
            "NORMAL" => Self::Normal,
            "FIFO" => Self::Fifo,
            "DELAY" => Self::Delay,
            "TRANSACTION" => Self::Transaction,
            "MIXED" => Self::Mixed,
            _ => return None,
        })
    }

    /// The attribute's value.
    pub fn name(self) -> &'static str {
        match self {
            Self::Unspecified => "UNSPECIFIED",
            Self::Normal => "NORMAL",
            Self::Fifo => "FIFO",
            Self::Delay => "DELAY",
            Self::Transaction => "TRANSACTION",
            Self::Mixed => "MIXED",
        }
    }

    /// Whether a topic of this type takes a message of type `message` (RocketMQ 5's
    /// `DefaultTopicMessageTypeValidator`: MIXED takes all, others their own type).
    pub fn accepts(self, message: TopicMessageType) -> bool {
        message != Self::Unspecified && (self == Self::Mixed || self == message)
    }
}

/// The message type a topic's attributes give: None without `message.type` (a topic made
/// before types, or by a 4.x tool: it takes every type, as rocketpy's topics always did).
pub fn message_type(attributes: &BTreeMap<String, String>) -> Option<TopicMessageType> {
    attributes
        .get(MESSAGE_TYPE)
        .and_then(|v| TopicMessageType::parse(v))
}

/// The values rocketpy accepts for a known attribute, and whether it may change after the
/// topic was created; Err(why) for an attribute rocketpy knows but does not implement.
fn rule(key: &str) -> Result<(&'static [&'static str], bool), String> {
    match key {
        MESSAGE_TYPE => Ok((
            &["UNSPECIFIED", "NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED"],
            true,
        )),
        "queue.type" => Ok((&["SimpleCQ"], false)),
        "cleanup.policy" => Ok((&["DELETE"], false)),
        "reserve.time" => Err(
            "reserve.time (a retention per topic) is not supported: the store keeps every topic for fileReservedTime".into(),
        ),
        other => Err(format!("unsupported key: {other}")),
    }
}

/// Applies `modifications` (`+k=v` adds or updates, `-k` deletes; creating a topic takes
/// only `+`) to `current`. Err says what is wrong, as RocketMQ's messages do.
pub fn alter(
    create: bool,
    current: &BTreeMap<String, String>,
    modifications: &str,
) -> Result<BTreeMap<String, String>, String> {
    let mut out = current.clone();
    if modifications.is_empty() {
        return Ok(out);
    }
    let items: Vec<&str> = modifications.split(',').collect();
    if items.len() > MAX_ATTRIBUTES {
        return Err(format!(
            "at most {MAX_ATTRIBUTES} attribute changes per request"
        ));
    }
    let mut seen: Vec<&str> = Vec::new();
    for item in items {
        let (sign_key, value) = match item.split_once('=') {
            Some((k, v)) if k.starts_with('+') => (k, Some(v)),
            Some((k, _)) => return Err(format!("add/alter attribute format is wrong: {k}")),
            None if item.starts_with('-') => (item, None),
            None => return Err(format!("delete attribute format is wrong: {item}")),
        };
        let key = &sign_key[1..];
        if key.is_empty() || key.contains(['+', '-']) {
            return Err("kv string format wrong.".into());
        }
        if seen.contains(&key) {
            return Err(format!("alter duplication key. key: {key}"));
        }
        seen.push(key);
        let (allowed, changeable) = rule(key)?;
        match value {
            Some(v) => {
                if !create && !changeable && current.contains_key(key) {
                    return Err(format!(
                        "attempt to update an unchangeable attribute. key: {key}"
                    ));
                }
                if !allowed.contains(&v) {
                    return Err(format!(
                        "value {v:?} of {key} is not supported (supported: {})",
                        allowed.join(", ")
                    ));
                }
                out.insert(key.to_owned(), v.to_owned());
            }
            None if create => {
                return Err(format!(
                    "only add attribute is supported while creating topic. key: {key}"
                ))
            }
            None => {
                if !changeable {
                    return Err(format!(
                        "attempt to update an unchangeable attribute. key: {key}"
                    ));
                }
                if out.remove(key).is_none() {
                    return Err(format!("attempt to delete a nonexistent key: {key}"));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn creates_updates_and_deletes() {
        let none = BTreeMap::new();
        let fifo = alter(true, &none, "+message.type=FIFO").unwrap();
        assert_eq!(fifo, attrs(&[("message.type", "FIFO")]));
        assert_eq!(message_type(&fifo), Some(TopicMessageType::Fifo));
        assert_eq!(message_type(&none), None);
        let delay = alter(false, &fifo, "+message.type=DELAY").unwrap();
        assert_eq!(message_type(&delay), Some(TopicMessageType::Delay));
        assert!(alter(false, &delay, "-message.type").unwrap().is_empty());
        let simple = alter(true, &none, "+queue.type=SimpleCQ,+message.type=NORMAL").unwrap();
        assert_eq!(simple.len(), 2);
        assert_eq!(alter(false, &simple, "").unwrap(), simple);
    }

    #[test]
    fn refuses_what_rocketmq_refuses_and_what_rocketpy_does_not_do() {
        let none = BTreeMap::new();
        let err =
            |create, current: &BTreeMap<String, String>, m| alter(create, current, m).unwrap_err();
        assert!(err(true, &none, "-message.type").contains("only add"));
        assert!(err(true, &none, "message.type=FIFO").contains("format is wrong"));
        assert!(err(true, &none, "+message.type=FIFO,+message.type=DELAY").contains("duplication"));
        assert!(err(true, &none, "+message.type=LIFO").contains("not supported"));
        assert!(err(true, &none, "+color=red").contains("unsupported key"));
        assert!(err(true, &none, "+queue.type=BatchCQ").contains("not supported"));
        assert!(err(true, &none, "+cleanup.policy=COMPACTION").contains("not supported"));
        assert!(err(true, &none, "+reserve.time=100").contains("not supported"));
        assert!(err(false, &none, "-message.type").contains("nonexistent"));
        let simple = alter(true, &none, "+queue.type=SimpleCQ").unwrap();
        assert!(err(false, &simple, "+queue.type=SimpleCQ").contains("unchangeable"));
        let many = vec!["+message.type=FIFO"; MAX_ATTRIBUTES + 1].join(",");
        assert!(err(true, &none, &many).contains("at most"));
    }

    #[test]
    fn types_accept_their_own_messages() {
        use TopicMessageType::*;
        assert!(Fifo.accepts(Fifo) && !Fifo.accepts(Normal));
        assert!(Mixed.accepts(Delay) && Mixed.accepts(Transaction));
        assert!(!Mixed.accepts(Unspecified));
        assert!(!Normal.accepts(Fifo));
    }
}
