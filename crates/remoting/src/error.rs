//! Errors of the remoting layer: transport failures and timeouts, and the protocol errors of
//! the frames it moves.

use std::io;

use rocketpy_protocol::ProtocolError;

/// Result alias for the remoting crate.
pub type Result<T> = std::result::Result<T, RemotingError>;

/// Everything that can go wrong while encoding, decoding or moving remoting frames.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemotingError {
    /// The bytes do not follow the protocol (see [`ProtocolError`]).
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
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
    /// The caller abandoned a blocking request (a signal, e.g. Ctrl-C); its answer is lost.
    #[error("request to {0} interrupted")]
    Interrupted(String),
    /// The address is not of the form host:port.
    #[error("invalid address {0:?}: expected host:port")]
    InvalidAddress(String),
}
