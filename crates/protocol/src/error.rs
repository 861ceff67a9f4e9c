//! Errors of decoding and encoding: bytes that do not follow the RocketMQ formats, and values
//! a format cannot carry. Data from a peer or a file is an error value here, never a panic.

/// Result alias for the protocol crate.
pub type Result<T> = std::result::Result<T, ProtocolError>;

/// Everything that can go wrong turning protocol values into bytes and back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// The bytes on the wire do not form a valid frame or header.
    #[error("malformed frame: {0}")]
    Malformed(String),
    /// A frame announced a length above the 16 MiB limit (or below the minimum).
    #[error("frame length {0} outside 4..={max}", max = crate::limits::MAX_FRAME_LEN)]
    FrameTooLarge(i64),
    /// A request header lacks a field the request code requires.
    #[error("missing required header field `{0}`")]
    MissingField(&'static str),
    /// A header field is present but cannot be parsed as the expected type.
    #[error("invalid header field `{field}`: {value:?}")]
    InvalidField {
        /// The extFields key.
        field: &'static str,
        /// The offending value.
        value: String,
    },
    /// A JSON body or header did not (de)serialize.
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    /// A record does not match the RocketMQ layout.
    #[error("corrupt data in {what}: {reason}")]
    Corrupt {
        /// Which record or structure.
        what: String,
        /// What is wrong.
        reason: String,
    },
    /// A value the format cannot carry or a name it refuses (bad topic, bad message id, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

impl ProtocolError {
    /// A corruption report.
    pub fn corrupt(what: impl Into<String>, reason: impl Into<String>) -> Self {
        ProtocolError::Corrupt {
            what: what.into(),
            reason: reason.into(),
        }
    }
}
