//! Tolerant reading of JSON written by RocketMQ's fastjson.
//!
//! fastjson writes maps with integer keys without quotes (`{"brokerAddrs":{0:"host:port"}}`,
//! `{"offsetTable":{"t@g":{0:12}}}`), which strict JSON parsers reject. We always *write*
//! standard JSON (quoted keys, which fastjson reads too) and *read* both by quoting bare
//! integer keys before parsing.

use std::borrow::Cow;

use serde::de::DeserializeOwned;

/// Quotes bare integer object keys; returns the input unchanged when it has none.
pub fn normalize(input: &[u8]) -> Cow<'_, [u8]> {
    let mut out: Option<Vec<u8>> = None;
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
        } else if c == b'{' || c == b',' {
            expect_key = true;
        } else if expect_key && (c.is_ascii_digit() || c == b'-') {
            let start = i;
            let mut end = i + 1;
            while end < input.len() && input[end].is_ascii_digit() {
                end += 1;
            }
            let mut after = end;
            while after < input.len() && input[after].is_ascii_whitespace() {
                after += 1;
            }
            if after < input.len() && input[after] == b':' {
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

/// Parses fastjson or standard JSON into `T`, with fastjson's coercions of values (see
/// [`super::lenient`]). Every body a server or client reads goes through here.
pub fn from_slice<T: DeserializeOwned>(input: &[u8]) -> serde_json::Result<T> {
    let value: serde_json::Value = serde_json::from_slice(&normalize(input))?;
    super::lenient::from_value(value)
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
    fn standard_json_is_borrowed() {
        assert!(matches!(
            normalize(br#"{"a":[1,2,{"b":3}]}"#),
            Cow::Borrowed(_)
        ));
    }
}
