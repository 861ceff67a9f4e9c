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

/// Quotes bare integer object keys and turns object keys into string keys holding the object's
/// JSON text; returns the input unchanged when it has neither.
pub fn normalize(input: &[u8]) -> Cow<'_, [u8]> {
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
            expect_key = false;
            if let Some(end) = object_key_end(input, i) {
                let buf = out.get_or_insert_with(|| input[..i].to_vec());
                let key = normalize(&input[i..end]);
                buf.push(b'"');
                for &b in key.iter() {
                    if b == b'"' || b == b'\\' {
                        buf.push(b'\\');
                    }
                    buf.push(b);
                }
                buf.push(b'"');
                i = end;
                continue;
            }
            objects.push(true);
            expect_key = true;
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
    match out {
        Some(buf) => Cow::Owned(buf),
        None => Cow::Borrowed(input),
    }
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
/// [`super::lenient`]). Every body a server or client reads goes through here.
pub fn from_slice<T: DeserializeOwned>(input: &[u8]) -> serde_json::Result<T> {
    let value: serde_json::Value = serde_json::from_slice(&normalize(input))?;
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
    fn quotes_bare_integer_keys_only() {
        let src = br#"{"a":{0:"x:1", 12 :"y"},"s":"{0:1}","n":[1,2],"m":{-1:3}}"#;
        let norm = normalize(src);
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
        // An unbalanced object key is left for the parser to refuse, not a panic.
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
            Cow::Borrowed(_)
        ));
    }
}
