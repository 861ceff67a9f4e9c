//! Tolerant reading of JSON written by RocketMQ's fastjson.
//!
//! fastjson writes maps with integer keys without quotes (`{"brokerAddrs":{0:"host:port"}}`,
//! `{"offsetTable":{"t@g":{0:12}}}`), which strict JSON parsers reject. We always *write*
//! standard JSON (quoted keys, which fastjson reads too) and *read* both by quoting bare
//! integer keys before parsing. Maps keyed by a bean (`MessageQueue` in `TopicStatsTable`,
//! `ConsumeStats`, `ResetOffsetBody`) have the bean's JSON object as their key; reading turns
//! it into a string key holding that object's JSON text, and the few bodies we write with such
//! maps are written the same way fastjson does ([`mq_key`]).

use std::borrow::Cow;

use serde::de::DeserializeOwned;

use crate::limits::{check_json, JsonLimits};

/// Quotes bare integer object keys and turns object keys into string keys holding the object's
/// JSON text; returns the input unchanged when it has neither.
///
/// Linear in the input: an object key is escaped once, and an object key inside an object key
/// is refused (RocketMQ's bean keys are flat, and escaping each level again would double the
/// text per level). Input where an object stands in a key's place without being one (`{{`
/// with no `}:` to close it) is refused at once instead of being searched again at every byte.
pub fn normalize(input: &[u8]) -> Result<Cow<'_, [u8]>, String> {
    normalize_keys(input, true)
}

fn normalize_keys(input: &[u8], object_keys: bool) -> Result<Cow<'_, [u8]>, String> {
    let mut out: Option<Vec<u8>> = None;
    // Open containers: true for an object. A key can start only right after an object's `{`
    // or `,`, so arrays of objects are never mistaken for keys.
    let mut objects: Vec<bool> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    let mut expect_key = false;
    let mut i = 0;
    while i < input.len() {
        let c = input[i];
        if in_string {
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_string = false;
            }
        } else if c == b'"' {
            in_string = true;
            expect_key = false;
        } else if expect_key && c == b'{' {
            // fastjson writes a map whose keys are beans (MessageQueue) with the key as an
            // object: `{{"brokerName":"b","queueId":0,"topic":"t"}:{...}}`.
            if !object_keys {
                return Err("an object key inside an object key".into());
            }
            let end = object_key_end(input, i)
                .ok_or_else(|| format!("an object at byte {i} stands where a key belongs"))?;
            let buf = out.get_or_insert_with(|| input[..i].to_vec());
            let key = normalize_keys(&input[i..end], false)?;
            buf.push(b'"');
            for &b in key.iter() {
                if b == b'"' || b == b'\\' {
                    buf.push(b'\\');
                }
                buf.push(b);
            }
            buf.push(b'"');
            i = end;
            expect_key = false;
            continue;
        } else if c == b'{' || c == b'[' {
            objects.push(c == b'{');
            expect_key = c == b'{';
        } else if c == b'}' || c == b']' {
            objects.pop();
            expect_key = false;
        } else if c == b',' {
            expect_key = objects.last() == Some(&true);
        } else if expect_key && (c.is_ascii_digit() || c == b'-') {
            let start = i;
            let mut end = i + 1;
            while end < input.len() && input[end].is_ascii_digit() {
                end += 1;
            }
            if next_is_colon(input, end) {
                let buf = out.get_or_insert_with(|| input[..start].to_vec());
                buf.push(b'"');
                buf.extend_from_slice(&input[start..end]);
                buf.push(b'"');
                i = end;
                expect_key = false;
                continue;
            }
            expect_key = false;
        } else if !c.is_ascii_whitespace() {
            expect_key = false;
        }
        if let Some(buf) = out.as_mut() {
            buf.push(c);
        }
        i += 1;
    }
    Ok(match out {
        Some(buf) => Cow::Owned(buf),
        None => Cow::Borrowed(input),
    })
}

/// Whether the first non-blank byte at or after `at` is `:`.
fn next_is_colon(input: &[u8], at: usize) -> bool {
    input[at.min(input.len())..]
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        == Some(&b':')
}

/// The end (exclusive) of the object starting at `start` when it is a key (a `:` follows it).
fn object_key_end(input: &[u8], start: usize) -> Option<usize> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, &c) in input.iter().enumerate().skip(start) {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_string = false;
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return next_is_colon(input, i + 1).then_some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Parses fastjson or standard JSON into `T`, with fastjson's coercions of values (see
/// [`super::lenient`]), within [`JsonLimits::BODY`]. Every body a server or client reads goes
/// through here or [`from_slice_within`].
pub fn from_slice<T: DeserializeOwned>(input: &[u8]) -> serde_json::Result<T> {
    from_slice_within(input, JsonLimits::BODY)
}

/// [`from_slice`] within other limits ([`JsonLimits::TABLE`] for a server's whole tables).
pub fn from_slice_within<T: DeserializeOwned>(
    input: &[u8],
    limits: JsonLimits,
) -> serde_json::Result<T> {
    use serde::de::Error;
    check_json(input, limits).map_err(serde_json::Error::custom)?;
    // Most bodies are standard JSON holding the types asked for (what serde and Java's
    // fastjson write for them): read at once, without the copy, the tree and the coercions.
    // Where this fails, the input needs the tolerant path, which gives the same result for
    // any input this reads (it only adds to what is accepted; tested below).
    if let Ok(value) = serde_json::from_slice::<T>(input) {
        return Ok(value);
    }
    tolerant(input)
}

/// The tolerant path of [`from_slice_within`]: bare and object keys quoted, then fastjson's
/// coercions of values.
fn tolerant<T: DeserializeOwned>(input: &[u8]) -> serde_json::Result<T> {
    use serde::de::Error;
    let normalized = normalize(input).map_err(serde_json::Error::custom)?;
    let value: serde_json::Value = serde_json::from_slice(&normalized)?;
    super::lenient::from_value(value)
}

/// A `MessageQueue` as fastjson writes it as a map key: its JSON object, fields in name order.
pub fn mq_key(topic: &str, broker_name: &str, queue_id: i32) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "brokerName": broker_name,
        "queueId": queue_id,
        "topic": topic,
    }))
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn standard_bodies_read_the_same_on_both_paths() {
        use crate::body::batch_ack::{AckBits, BatchAck, BatchAckMessageRequestBody};
        let body = BatchAckMessageRequestBody {
            broker_name: "broker-a".into(),
            acks: vec![BatchAck {
                consumer_group: "g".into(),
                topic: "T".into(),
                retry: "0".into(),
                start_offset: 5,
                queue_id: 1,
                revive_queue_id: 3,
                pop_time: 1000,
                invisible_time: 60000,
                bit_set: AckBits::from_indexes([0, 3, 9]),
            }],
        };
        let json = serde_json::to_vec(&body).unwrap();
        let fast: BatchAckMessageRequestBody = serde_json::from_slice(&json).unwrap();
        assert_eq!(fast, tolerant::<BatchAckMessageRequestBody>(&json).unwrap());
        assert_eq!(
            fast,
            from_slice::<BatchAckMessageRequestBody>(&json).unwrap()
        );
        let maps = br#"{"a":{"0":1,"7":-2},"b":{},"s":"{0:1}"}"#;
        type Maps = HashMap<String, serde_json::Value>;
        assert_eq!(
            serde_json::from_slice::<Maps>(maps).unwrap(),
            tolerant::<Maps>(maps).unwrap()
        );
        // What the fast path refuses goes the tolerant way: numbers in strings, bare keys.
        let coerced: HashMap<i32, i64> = from_slice(br#"{0:"12", "1": 3}"#).unwrap();
        assert_eq!(coerced[&0], 12);
        assert!(serde_json::from_slice::<HashMap<i32, i64>>(br#"{"0":"12"}"#).is_err());
    }

    #[test]
    fn quotes_bare_integer_keys_only() {
        let src = br#"{"a":{0:"x:1", 12 :"y"},"s":"{0:1}","n":[1,2],"m":{-1:3}}"#;
        let norm = normalize(src).unwrap();
        assert_eq!(
            std::str::from_utf8(&norm).unwrap(),
            r#"{"a":{"0":"x:1", "12" :"y"},"s":"{0:1}","n":[1,2],"m":{"-1":3}}"#
        );
        let parsed: HashMap<String, serde_json::Value> = from_slice(src).unwrap();
        assert_eq!(parsed["a"]["12"], "y");
    }

    #[test]
    fn object_keys_become_string_keys() {
        let src = br#"{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{"maxOffset":3},{"brokerName":"b","queueId":1,"topic":"t"}:{"maxOffset":4}},"l":[{"a":1},{"b":{2:3}}]}"#;
        let parsed: serde_json::Value = from_slice(src).unwrap();
        let table = parsed["offsetTable"].as_object().unwrap();
        assert_eq!(table.len(), 2);
        let key = r#"{"brokerName":"b","queueId":1,"topic":"t"}"#;
        assert_eq!(table[key]["maxOffset"], 4);
        assert_eq!(parsed["l"][1]["b"]["2"], 3);
        // An unbalanced object key is refused, not a panic.
        assert!(from_slice::<serde_json::Value>(br#"{{"a":1"#).is_err());
    }

    #[test]
    fn mq_keys_round_trip() {
        let mut body = b"{\"offsetTable\":{".to_vec();
        body.extend_from_slice(&mq_key("t\"x", "b", 2));
        body.extend_from_slice(b":5}}");
        let parsed: serde_json::Value = from_slice(&body).unwrap();
        let (key, value) = parsed["offsetTable"]
            .as_object()
            .unwrap()
            .iter()
            .next()
            .unwrap();
        let mq: serde_json::Value = serde_json::from_str(key).unwrap();
        assert_eq!(mq["topic"], "t\"x");
        assert_eq!(mq["queueId"], 2);
        assert_eq!(value, 5);
    }

    #[test]
    fn standard_json_is_borrowed() {
        assert!(matches!(
            normalize(br#"{"a":[1,2,{"b":3}]}"#),
            Ok(Cow::Borrowed(_))
        ));
    }

    /// Object keys nested in object keys doubled the text per level (a 162-byte body took a
    /// broker past 1 GB); they are refused, and the output is never longer than twice the input.
    #[test]
    fn nested_object_keys_are_refused() {
        let nested = [vec![b'{'; 40], b"{}".to_vec(), b":1}".repeat(40)].concat();
        assert!(normalize(&nested)
            .unwrap_err()
            .contains("inside an object key"));
        assert!(from_slice::<serde_json::Value>(&nested).is_err());
        let one_level = br#"{{"a":"\\\"\""}:1}"#;
        let out = normalize(one_level).unwrap();
        assert!(out.len() <= 2 * one_level.len());
        assert_eq!(
            from_slice::<serde_json::Value>(one_level).unwrap(),
            serde_json::json!({r#"{"a":"\\\"\""}"#: 1})
        );
    }

    /// `{` after `{` with nothing closing it made every byte search to the end (quadratic).
    #[test]
    fn unclosed_objects_in_key_places_are_refused_at_once() {
        let opens = vec![b'{'; 1 << 20];
        assert!(normalize(&opens).is_err());
        let commas = [b"{\"a\":1".as_slice(), &b",{".repeat(1 << 18)].concat();
        assert!(normalize(&commas).is_err());
    }

    #[test]
    fn limits_come_before_parsing() {
        let deep = [vec![b'['; 100], vec![b']'; 100]].concat();
        let e = from_slice::<serde_json::Value>(&deep).unwrap_err();
        assert!(e.to_string().contains("deeper than 32"), "{e}");
        let many = [b"[".as_slice(), &b"0,".repeat(1 << 18), b"0]"].concat();
        assert!(from_slice::<Vec<i32>>(&many).is_err());
        assert_eq!(
            from_slice_within::<Vec<i32>>(&many, JsonLimits::TABLE)
                .unwrap()
                .len(),
            (1 << 18) + 1
        );
    }
}
