//! `RemotingCommand`: one request or response of the RocketMQ 4.x remoting protocol.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::atomic::{AtomicI32, Ordering};

use bytes::Bytes;

use crate::code::LanguageCode;
use crate::error::{ProtocolError, Result};

/// Flag bit 0: the command is a response.
pub const FLAG_RESPONSE: i32 = 0b01;
/// Flag bit 1: the request expects no response.
pub const FLAG_ONEWAY: i32 = 0b10;

/// The version we announce. RocketMQ brokers only compare it against old thresholds
/// (e.g. V3_0_6). 413 is the ordinal of `MQVersion.Version.V5_0_0` (V4_9_4 is 401); the
/// compatibility tests with 4.x and 5.x peers run with this value.
pub const CURRENT_VERSION: i32 = 413;

/// Header serialisation, carried in the high byte of the header-length word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SerializeType {
    /// JSON header (`serializeType` 0), RocketMQ's default.
    #[default]
    Json,
    /// The compact ROCKETMQ binary header (`serializeType` 1).
    RocketMq,
}

impl SerializeType {
    /// The byte written on the wire.
    pub fn code(self) -> u8 {
        match self {
            SerializeType::Json => 0,
            SerializeType::RocketMq => 1,
        }
    }

    /// Parses the wire byte.
    pub fn from_code(code: u8) -> Result<Self> {
        match code {
            0 => Ok(SerializeType::Json),
            1 => Ok(SerializeType::RocketMq),
            other => Err(ProtocolError::Malformed(format!(
                "unknown serialize type {other}"
            ))),
        }
    }
}

/// Header fields of a request/response; all values are strings, as in RocketMQ.
pub type ExtFields = HashMap<String, String>;

static NEXT_OPAQUE: AtomicI32 = AtomicI32::new(1);

/// A fresh request id, unique within this process (wraps after 2^31 requests).
pub fn next_opaque() -> i32 {
    NEXT_OPAQUE.fetch_add(1, Ordering::Relaxed) & i32::MAX
}

/// One frame's content: a header plus an opaque body.
#[derive(Debug, Clone, PartialEq)]
pub struct RemotingCommand {
    /// Request code for requests, response code for responses.
    pub code: i32,
    /// The sender's language.
    pub language: LanguageCode,
    /// The sender's protocol version.
    pub version: i32,
    /// Request id; a response echoes its request's.
    pub opaque: i32,
    /// Bit 0 = response, bit 1 = oneway.
    pub flag: i32,
    /// Human-readable remark (errors carry their reason here).
    pub remark: Option<String>,
    /// Typed request/response header, flattened to strings.
    pub ext_fields: ExtFields,
    /// The body bytes (message body, JSON document, or concatenated records).
    pub body: Bytes,
    /// Header serialisation used on the wire; a response must use its request's.
    pub serialize_type: SerializeType,
    /// When the transport read the frame (set by the connection, not encoded): lets the
    /// broker refuse work that waited too long (SYSTEM_BUSY back-pressure).
    pub received_at: Option<std::time::Instant>,
}

impl RemotingCommand {
    /// A new request with a fresh opaque.
    pub fn request(code: i32) -> Self {
        RemotingCommand {
            code,
            language: LanguageCode::Rust,
            version: CURRENT_VERSION,
            opaque: next_opaque(),
            flag: 0,
            remark: None,
            ext_fields: ExtFields::new(),
            body: Bytes::new(),
            serialize_type: SerializeType::Json,
            received_at: None,
        }
    }

    /// A response to `request`: same opaque and serialisation, response flag set.
    pub fn response_to(request: &RemotingCommand, code: i32) -> Self {
        RemotingCommand {
            code,
            language: LanguageCode::Java,
            version: CURRENT_VERSION,
            opaque: request.opaque,
            flag: FLAG_RESPONSE,
            remark: None,
            ext_fields: ExtFields::new(),
            body: Bytes::new(),
            serialize_type: request.serialize_type,
            received_at: None,
        }
    }

    /// Builder: sets the remark.
    pub fn with_remark(mut self, remark: impl Into<String>) -> Self {
        self.remark = Some(remark.into());
        self
    }

    /// Builder: sets the body.
    pub fn with_body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    /// Builder: adds one header field.
    pub fn with_field(mut self, key: &str, value: impl ToString) -> Self {
        self.ext_fields.insert(key.to_owned(), value.to_string());
        self
    }

    /// Adds one header field.
    pub fn set_field(&mut self, key: &str, value: impl ToString) {
        self.ext_fields.insert(key.to_owned(), value.to_string());
    }

    /// Whether this is a response.
    pub fn is_response(&self) -> bool {
        self.flag & FLAG_RESPONSE != 0
    }

    /// Whether the sender expects no response.
    pub fn is_oneway(&self) -> bool {
        self.flag & FLAG_ONEWAY != 0
    }

    /// Marks this request as oneway.
    pub fn mark_oneway(&mut self) {
        self.flag |= FLAG_ONEWAY;
    }

    /// A header field that must be present.
    pub fn field(&self, name: &'static str) -> Result<&str> {
        self.ext_fields
            .get(name)
            .map(String::as_str)
            .ok_or(ProtocolError::MissingField(name))
    }

    /// An optional header field.
    pub fn field_opt(&self, name: &str) -> Option<&str> {
        self.ext_fields.get(name).map(String::as_str)
    }

    /// A header field that must be present and parse as `T`.
    pub fn parse_field<T: FromStr>(&self, name: &'static str) -> Result<T> {
        let raw = self.field(name)?;
        raw.trim().parse().map_err(|_| ProtocolError::InvalidField {
            field: name,
            value: raw.to_owned(),
        })
    }

    /// A header field that, when present, must parse as `T`; `default` when absent.
    pub fn parse_field_or<T: FromStr>(&self, name: &'static str, default: T) -> Result<T> {
        match self.ext_fields.get(name) {
            None => Ok(default),
            Some(_) => self.parse_field(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_echoes_opaque_and_serialisation() {
        let mut req = RemotingCommand::request(10);
        req.serialize_type = SerializeType::RocketMq;
        let resp = RemotingCommand::response_to(&req, 0);
        assert_eq!(resp.opaque, req.opaque);
        assert!(resp.is_response());
        assert_eq!(resp.serialize_type, SerializeType::RocketMq);
    }

    #[test]
    fn field_errors_name_the_field() {
        let req = RemotingCommand::request(10).with_field("queueId", "x");
        let err = req.parse_field::<i32>("queueId").unwrap_err();
        assert!(err.to_string().contains("queueId"));
        let err = req.field("topic").unwrap_err();
        assert!(err.to_string().contains("topic"));
        assert_eq!(req.parse_field_or("maxMsgNums", 32i32).unwrap(), 32);
    }
}
