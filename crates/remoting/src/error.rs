//! Errors of the remoting layer: malformed frames, transport failures, timeouts.

use std::io;

/// Result alias for the remoting crate.
pub type Result<T> = std::result::Result<T, RemotingError>;

/// Everything that can go wrong while encoding, decoding or moving remoting frames.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemotingError {
    /// The bytes on the wire do not form a valid frame or header.
    #[error("malformed frame: {0}")]
    Malformed(String),
    /// A frame announced a length above the 16 MiB limit (or below the minimum).
    #[error("frame length {0} outside 4..={max}", max = crate::frame::MAX_FRAME_LEN)]
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
    /// Socket-level failure.
    #[error("io: {0}")]
    Io(#[from] io::Error),
    /// Could not connect to the remote address.
    #[error("connect to {addr} failed: {reason}")]
    Connect {
        /// The address we tried.
        addr: String,
        /// Why it failed.
        reason: String,
    },
    /// No response arrived within the timeout.
    #[error("request to {addr} timed out after {millis} ms")]
    Timeout {
        /// The address the request went to.
        addr: String,
        /// The timeout that expired.
        millis: u64,
    },
    /// The connection closed before the response arrived, or was already closed.
    #[error("connection to {0} closed")]
    ConnectionClosed(String),
    /// The address is not of the form host:port.
    #[error("invalid address {0:?}: expected host:port")]
    InvalidAddress(String),
}
