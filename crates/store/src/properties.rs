//! Message properties as RocketMQ stores them: `name \x01 value \x02`, repeated.

use std::collections::HashMap;

/// Separates a name from its value.
pub const NAME_VALUE_SEPARATOR: char = '\u{1}';
/// Ends each property.
pub const PROPERTY_SEPARATOR: char = '\u{2}';

/// Well-known property names (`MessageConst`); a compatibility surface.
pub mod keys {
    pub const KEYS: &str = "KEYS";
    pub const TAGS: &str = "TAGS";
    pub const WAIT_STORE_MSG_OK: &str = "WAIT";
    pub const DELAY_TIME_LEVEL: &str = "DELAY";
    pub const RETRY_TOPIC: &str = "RETRY_TOPIC";
    pub const REAL_TOPIC: &str = "REAL_TOPIC";
    pub const REAL_QUEUE_ID: &str = "REAL_QID";
    pub const TRANSACTION_PREPARED: &str = "TRAN_MSG";
    pub const PRODUCER_GROUP: &str = "PGROUP";
    pub const MIN_OFFSET: &str = "MIN_OFFSET";
    pub const MAX_OFFSET: &str = "MAX_OFFSET";
    pub const UNIQ_KEY: &str = "UNIQ_KEY";
    pub const RECONSUME_TIME: &str = "RECONSUME_TIME";
    pub const MAX_RECONSUME_TIMES: &str = "MAX_RECONSUME_TIMES";
    pub const ORIGIN_MESSAGE_ID: &str = "ORIGIN_MESSAGE_ID";
    pub const CONSUME_START_TIMESTAMP: &str = "CONSUME_START_TIME";
    pub const CLUSTER: &str = "CLUSTER";
}

/// Encodes name/value pairs.
pub fn encode<'a>(props: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut out = String::new();
    for (name, value) in props {
        out.push_str(name);
        out.push(NAME_VALUE_SEPARATOR);
        out.push_str(value);
        out.push(PROPERTY_SEPARATOR);
    }
    out
}

/// Decodes a properties string; items without a separator are skipped, as RocketMQ does.
pub fn decode(s: &str) -> HashMap<String, String> {
    s.split(PROPERTY_SEPARATOR)
        .filter_map(|item| item.split_once(NAME_VALUE_SEPARATOR))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// The name/value pairs of a properties string, in order, borrowed.
pub fn pairs(s: &str) -> impl Iterator<Item = (&str, &str)> {
    s.split(PROPERTY_SEPARATOR)
        .filter_map(|item| item.split_once(NAME_VALUE_SEPARATOR))
}

/// Finds one property without decoding the rest.
pub fn find<'a>(s: &'a str, name: &str) -> Option<&'a str> {
    s.split(PROPERTY_SEPARATOR)
        .filter_map(|item| item.split_once(NAME_VALUE_SEPARATOR))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_find() {
        let s = encode([("TAGS", "TagA"), ("KEYS", "k1 k2"), ("UNIQ_KEY", "ABC")]);
        assert_eq!(
            s,
            "TAGS\u{1}TagA\u{2}KEYS\u{1}k1 k2\u{2}UNIQ_KEY\u{1}ABC\u{2}"
        );
        let map = decode(&s);
        assert_eq!(map["KEYS"], "k1 k2");
        assert_eq!(find(&s, "UNIQ_KEY"), Some("ABC"));
        assert_eq!(find(&s, "NOPE"), None);
        assert!(decode("garbage").is_empty());
    }
}
