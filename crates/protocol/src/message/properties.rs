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
    pub const TRANSACTION_CHECK_TIMES: &str = "TRANSACTION_CHECK_TIMES";
    pub const CHECK_IMMUNITY_TIME_IN_SECONDS: &str = "CHECK_IMMUNITY_TIME_IN_SECONDS";
    /// 5.x pop: a popped message's checkpoint text (`extraInfo`).
    pub const POP_CK: &str = "POP_CK";
    /// 5.x pop: when a retried message was first popped (ms).
    pub const FIRST_POP_TIME: &str = "1ST_POP_TIME";
    /// 5.x: a FIFO message's message group.
    pub const SHARDING_KEY: &str = "__SHARDINGKEY";
    /// 5.x: the trace context a 5.x client sends.
    pub const TRACE_CONTEXT: &str = "TRACE_CONTEXT";
    /// 5.x timer messages: deliver at this time (ms since the epoch).
    pub const TIMER_DELIVER_MS: &str = "TIMER_DELIVER_MS";
    /// 5.x timer messages: deliver this many seconds from now.
    pub const TIMER_DELAY_SEC: &str = "TIMER_DELAY_SEC";
    /// 5.x timer messages: deliver this many ms from now.
    pub const TIMER_DELAY_MS: &str = "TIMER_DELAY_MS";
    /// 5.x timer messages: the delivery time the broker settled on (set once: it marks a
    /// message the timer already took).
    pub const TIMER_OUT_MS: &str = "TIMER_OUT_MS";
    /// 5.x timer messages: when the timer stored it (ms).
    pub const TIMER_ENQUEUE_MS: &str = "TIMER_ENQUEUE_MS";
    /// 5.x timer messages: when the timer delivered it (ms).
    pub const TIMER_DEQUEUE_MS: &str = "TIMER_DEQUEUE_MS";
}

/// Why `name` = `value` cannot be sent as a property: an empty name, or a separator
/// (`\x01`, `\x02`) in either, which would split it or add properties of its own (a value
/// `"x\u{2}DELAY\u{1}3"` would delay the message). RocketMQ's remoting clients do not check
/// this; its 5.x proxy refuses control characters in property names and values.
pub fn check(name: &str, value: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a property name is empty".into());
    }
    for (what, text) in [("name", name), ("value", value)] {
        if text.contains([NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR]) {
            return Err(format!(
                "the property {what} {text:?} contains a separator (\\x01 or \\x02), which would split it into other properties"
            ));
        }
    }
    Ok(())
}

/// Checks a properties string a producer sent: every item is one `name \x01 value`, with a
/// name and a single name separator. An item without one, or with two, is a name or value
/// that carried a separator ([`check`]); empty items (a trailing separator) are fine.
pub fn check_wire(s: &str) -> Result<(), String> {
    for item in s.split(PROPERTY_SEPARATOR).filter(|i| !i.is_empty()) {
        let mut parts = item.splitn(3, NAME_VALUE_SEPARATOR);
        let name = parts.next().unwrap_or_default();
        if name.is_empty() || parts.next().is_none() || parts.next().is_some() {
            return Err(format!(
                "the property {item:?} is not one name and value: a name or value contains a separator (\\x01 or \\x02)"
            ));
        }
    }
    Ok(())
}

/// Encodes name/value pairs.
pub fn encode<'a>(props: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut out = String::new();
    for (name, value) in props {
        push(&mut out, name, value);
    }
    out
}

/// Appends one encoded property to `out`.
pub fn push(out: &mut String, name: &str, value: &str) {
    out.push_str(name);
    out.push(NAME_VALUE_SEPARATOR);
    out.push_str(value);
    out.push(PROPERTY_SEPARATOR);
}

/// Decodes a properties string; items without a separator are skipped, as RocketMQ does.
pub fn decode(s: &str) -> HashMap<String, String> {
    pairs(s)
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// The name/value pairs of a properties string, in order, borrowed. Items without a name
/// separator are skipped. Works on bytes: the separators are ASCII, so every split point is
/// a char boundary.
pub fn pairs(s: &str) -> impl Iterator<Item = (&str, &str)> {
    let bytes = s.as_bytes();
    let mut pos = 0usize;
    std::iter::from_fn(move || {
        while pos < bytes.len() {
            let end = bytes[pos..]
                .iter()
                .position(|b| *b == PROPERTY_SEPARATOR as u8)
                .map_or(bytes.len(), |i| pos + i);
            let item = pos..end;
            pos = end + 1;
            if let Some(eq) = bytes[item.clone()]
                .iter()
                .position(|b| *b == NAME_VALUE_SEPARATOR as u8)
            {
                let split = item.start + eq;
                return Some((&s[item.start..split], &s[split + 1..item.end]));
            }
        }
        None
    })
}

/// `s` without the properties named in `names`, the others in their order.
pub fn without(s: &str, names: &[&str]) -> String {
    encode(pairs(s).filter(|(k, _)| !names.contains(k)))
}

/// Finds one property without decoding the rest. This runs on every put (the delay-level
/// check) and for every indexed record, on strings of a few items: a walk over the item
/// separators beats building a substring searcher (which allocates) each call, and an item
/// is compared only when its first byte and the byte after the name fit (most items differ
/// in their first byte, so most need no comparison call).
pub fn find<'a>(s: &'a str, name: &str) -> Option<&'a str> {
    let bytes = s.as_bytes();
    let name = name.as_bytes();
    let mut pos = 0usize;
    while pos < bytes.len() {
        let rest = &bytes[pos..];
        let hit = rest.len() > name.len()
            && (name.is_empty() || rest[0] == name[0])
            && rest[name.len()] == NAME_VALUE_SEPARATOR as u8
            && &rest[..name.len()] == name;
        let end = memchr::memchr(PROPERTY_SEPARATOR as u8, rest).map_or(bytes.len(), |i| pos + i);
        if hit && end > pos + name.len() {
            // Separators are ASCII: both ends are char boundaries.
            return Some(&s[pos + name.len() + 1..end]);
        }
        pos = end + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators_in_names_and_values_are_refused() {
        assert_eq!(check("k", "v"), Ok(()));
        assert_eq!(check("k", ""), Ok(()));
        assert!(check("", "v").is_err());
        assert!(check("k\u{1}x", "v").unwrap_err().contains("name"));
        assert!(check("k", "x\u{2}DELAY\u{1}3")
            .unwrap_err()
            .contains("value"));
        assert_eq!(check_wire("TAGS\u{1}a\u{2}KEYS\u{1}b c\u{2}"), Ok(()));
        assert_eq!(check_wire(""), Ok(()));
        assert_eq!(check_wire("k\u{1}\u{2}"), Ok(()));
        assert!(check_wire("k\u{1}a\u{1}b").is_err(), "a value with \\x01");
        assert!(
            check_wire("k\u{1}a\u{2}b").is_err(),
            "a value with \\x02 and no name after"
        );
        assert!(check_wire("\u{1}v").is_err(), "no name");
    }

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
        assert_eq!(
            without(&s, &["KEYS", "NOPE"]),
            encode([("TAGS", "TagA"), ("UNIQ_KEY", "ABC")])
        );
        assert_eq!(find(&s, "NOPE"), None);
        assert!(decode("garbage").is_empty());
        assert_eq!(
            pairs("a\u{1}1\u{2}junk\u{2}b\u{1}\u{2}\u{1}v").collect::<Vec<_>>(),
            vec![("a", "1"), ("b", ""), ("", "v")]
        );
        assert_eq!(find("é\u{1}ü\u{2}", "é"), Some("ü"));
        assert_eq!(
            find("XTAGS\u{1}no\u{2}TAGS\u{1}yes\u{2}", "TAGS"),
            Some("yes")
        );
        assert_eq!(
            find("A\u{1}TAGS\u{1}\u{2}", "TAGS"),
            None,
            "inside a value is not a name"
        );
        assert_eq!(find("TAGS\u{1}last", "TAGS"), Some("last"));
    }

    proptest::proptest! {
        /// `find` agrees with the full decoder on any mix of names, separators and junk.
        #[test]
        fn find_agrees_with_pairs(
            s in "[AB\u{1}\u{2}é]{0,24}",
            name in "[ABé]{0,2}",
        ) {
            let expected = pairs(&s).find(|(k, _)| *k == name).map(|(_, v)| v);
            proptest::prop_assert_eq!(find(&s, &name), expected);
        }
    }
}
