//! The JSON header serialisation (`serializeType` 0).
//!
//! Layout (field order as RocketMQ's fastjson writes it; readers must not depend on order):
//! `{"code":..,"extFields":{..strings..},"flag":..,"language":"JAVA","opaque":..,
//!   "remark":..,"serializeTypeCurrentRPC":"JSON","version":..}`

use std::collections::HashMap;

use serde::Deserialize;

use crate::code::LanguageCode;
use crate::command::{ExtFields, RemotingCommand, SerializeType};
use crate::error::{ProtocolError, Result};
use crate::limits::{check_json, JsonLimits, MAX_EXT_FIELDS};

/// What a peer sends. The numbers and the language are read as loosely as the Java broker's
/// fastjson reads them: a number may come as a numeric string, the language as its enum
/// ordinal.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HeaderIn {
    code: serde_json::Value,
    #[serde(default)]
    ext_fields: Option<HashMap<String, serde_json::Value>>,
    #[serde(default)]
    flag: serde_json::Value,
    #[serde(default)]
    language: serde_json::Value,
    #[serde(default)]
    opaque: serde_json::Value,
    #[serde(default)]
    remark: Option<String>,
    #[serde(default)]
    version: serde_json::Value,
}

/// An int field: a JSON integer in i32 range or a string holding one; absent/null is 0.
fn int_field(value: &serde_json::Value, name: &str) -> Result<i32> {
    let parsed = match value {
        serde_json::Value::Null => Some(0),
        serde_json::Value::Number(n) => n.as_i64().and_then(|v| i32::try_from(v).ok()),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    };
    parsed.ok_or_else(|| ProtocolError::Malformed(format!("header field {name} is {value}")))
}

fn language_field(value: &serde_json::Value) -> LanguageCode {
    match value {
        serde_json::Value::String(name) => LanguageCode::from_name(name),
        serde_json::Value::Number(n) => n
            .as_u64()
            .and_then(|v| u8::try_from(v).ok())
            .map_or(LanguageCode::Other, LanguageCode::from_code),
        _ => LanguageCode::Other,
    }
}

/// Appends the JSON header of `cmd` to `out`, byte for byte what serde_json writes for it
/// (fields in fastjson's order; `extFields` left out when empty, `remark` when absent). Written
/// by hand so that strings without characters to escape are copied as they are: a batch's
/// answer carries every message's id in one field, and escaping it a byte at a time cost more
/// than the rest of its header.
pub fn encode(cmd: &RemotingCommand, out: &mut Vec<u8>) -> Result<()> {
    out.extend_from_slice(b"{\"code\":");
    int(out, cmd.code);
    if !cmd.ext_fields.is_empty() {
        out.extend_from_slice(b",\"extFields\":{");
        for (i, (name, value)) in cmd.ext_fields.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            json_str(out, name)?;
            out.push(b':');
            json_str(out, value)?;
        }
        out.push(b'}');
    }
    out.extend_from_slice(b",\"flag\":");
    int(out, cmd.flag);
    out.extend_from_slice(b",\"language\":");
    json_str(out, cmd.language.name())?;
    out.extend_from_slice(b",\"opaque\":");
    int(out, cmd.opaque);
    if let Some(remark) = &cmd.remark {
        out.extend_from_slice(b",\"remark\":");
        json_str(out, remark)?;
    }
    out.extend_from_slice(b",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":");
    int(out, cmd.version);
    out.push(b'}');
    Ok(())
}

/// A JSON number.
fn int(out: &mut Vec<u8>, v: i32) {
    use std::io::Write as _;
    write!(out, "{v}").expect("writing to a Vec cannot fail");
}

/// A JSON string: copied between quotes when nothing in it needs escaping (no quote, no
/// backslash, no control character: serde_json escapes nothing else), else serde_json's.
fn json_str(out: &mut Vec<u8>, s: &str) -> Result<()> {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        serde_json::to_writer(&mut *out, s)?;
    }
    Ok(())
}

/// Parses a JSON header. Non-string extFields values (sent by some non-Java clients) are
/// accepted and turned into their JSON text; `null` values are dropped.
pub fn decode(bytes: &[u8]) -> Result<RemotingCommand> {
    check_json(bytes, JsonLimits::HEADER)
        .map_err(|e| ProtocolError::Malformed(format!("header: {e}")))?;
    let header: HeaderIn = serde_json::from_slice(bytes)
        .map_err(|e| ProtocolError::Malformed(format!("header is not valid JSON: {e}")))?;
    let fields = header.ext_fields.unwrap_or_default();
    if fields.len() > MAX_EXT_FIELDS {
        return Err(ProtocolError::Malformed(format!(
            "header has more than {MAX_EXT_FIELDS} extFields"
        )));
    }
    let mut ext_fields = ExtFields::new();
    for (key, value) in fields {
        let text = match value {
            serde_json::Value::Null => continue,
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        };
        ext_fields.insert(key, text);
    }
    if header.code.is_null() {
        return Err(ProtocolError::Malformed("header has no code".into()));
    }
    Ok(RemotingCommand {
        code: int_field(&header.code, "code")?,
        language: language_field(&header.language),
        version: int_field(&header.version, "version")?,
        opaque: int_field(&header.opaque, "opaque")?,
        flag: int_field(&header.flag, "flag")?,
        remark: header.remark,
        ext_fields,
        body: bytes::Bytes::new(),
        serialize_type: SerializeType::Json,
        received_at: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    /// The header as serde_json writes it: what [`encode`] must write, byte for byte.
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct HeaderOut<'a> {
        code: i32,
        #[serde(skip_serializing_if = "HashMap::is_empty")]
        ext_fields: &'a ExtFields,
        flag: i32,
        language: &'static str,
        opaque: i32,
        #[serde(skip_serializing_if = "Option::is_none")]
        remark: Option<&'a str>,
        #[serde(rename = "serializeTypeCurrentRPC")]
        serialize_type_current_rpc: &'static str,
        version: i32,
    }

    #[test]
    fn written_as_serde_json_writes_it() {
        let plain = RemotingCommand::request(10).with_field("topic", "T");
        let escaped = RemotingCommand::request(-5)
            .with_field("a", "quote\" back\\slash \u{1}\n\t\u{7f}")
            .with_field("k\"ey", "é 中 / <>")
            .with_field("", "")
            .with_remark("line\nbreak \"q\"");
        let mut empty = RemotingCommand::request(0);
        empty.flag = 3;
        empty.version = -1;
        for cmd in [plain, escaped, empty] {
            let mut ours = Vec::new();
            encode(&cmd, &mut ours).unwrap();
            let want = serde_json::to_vec(&HeaderOut {
                code: cmd.code,
                ext_fields: &cmd.ext_fields,
                flag: cmd.flag,
                language: cmd.language.name(),
                opaque: cmd.opaque,
                remark: cmd.remark.as_deref(),
                serialize_type_current_rpc: "JSON",
                version: cmd.version,
            })
            .unwrap();
            assert_eq!(
                String::from_utf8(ours).unwrap(),
                String::from_utf8(want).unwrap()
            );
        }
    }

    #[test]
    fn nesting_and_size_are_bounded_before_parsing() {
        let deep = format!(
            r#"{{"code":10,"extFields":{{"a":{}1{}}}}}"#,
            "[".repeat(20),
            "]".repeat(20)
        );
        assert!(decode(deep.as_bytes())
            .unwrap_err()
            .to_string()
            .contains("deeper than 8"));
        let many: Vec<String> = (0..=MAX_EXT_FIELDS)
            .map(|i| format!(r#""{i}":"""#))
            .collect();
        let wide = format!(r#"{{"code":10,"extFields":{{{}}}}}"#, many.join(","));
        assert!(decode(wide.as_bytes())
            .unwrap_err()
            .to_string()
            .contains("more than 1024 extFields"));
    }

    #[test]
    fn round_trip() {
        let cmd = RemotingCommand::request(310)
            .with_field("a", "group")
            .with_field("b", "Topic\"Quoted\u{1}")
            .with_remark("ok");
        let mut out = Vec::new();
        encode(&cmd, &mut out).unwrap();
        let back = decode(&out).unwrap();
        assert_eq!(back.code, 310);
        assert_eq!(back.opaque, cmd.opaque);
        assert_eq!(back.ext_fields, cmd.ext_fields);
        assert_eq!(back.remark.as_deref(), Some("ok"));
        assert_eq!(back.language, LanguageCode::Rust);
    }

    #[test]
    fn java_header_parses() {
        let java = br#"{"code":105,"extFields":{"topic":"TopicTest","n":5,"z":null},"flag":0,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":395}"#;
        let cmd = decode(java).unwrap();
        assert_eq!(cmd.code, 105);
        assert_eq!(cmd.opaque, 7);
        assert_eq!(cmd.field("topic").unwrap(), "TopicTest");
        assert_eq!(cmd.field("n").unwrap(), "5");
        assert!(cmd.field_opt("z").is_none());
        assert_eq!(cmd.language, LanguageCode::Java);
    }

    #[test]
    fn numbers_as_strings_and_language_ordinals_are_read_like_fastjson() {
        let loose = br#"{"code":"105","flag":"0","language":0,"opaque":" 9","version":null}"#;
        let cmd = decode(loose).unwrap();
        assert_eq!(
            (cmd.code, cmd.flag, cmd.opaque, cmd.version),
            (105, 0, 9, 0)
        );
        assert_eq!(cmd.language, LanguageCode::Java);
        assert!(decode(br#"{"code":1,"opaque":1e400}"#).is_err());
        assert!(decode(br#"{"code":1,"opaque":4294967296}"#).is_err());
        assert!(decode(br#"{"code":null}"#).is_err());
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(decode(b"not json").is_err());
        assert!(decode(br#"{"opaque":1}"#).is_err());
        assert!(decode(br#"{"code":"x"}"#).is_err());
    }
}
