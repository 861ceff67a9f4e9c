//! Broker errors.

/// Result alias for the broker.
pub type Result<T> = std::result::Result<T, BrokerError>;

/// Failures starting or running a broker.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BrokerError {
    /// The store failed (I/O, corruption, lock held by another process).
    #[error(transparent)]
    Store(#[from] rocketpy_store::StoreError),
    /// The network layer failed (bind, connect).
    #[error(transparent)]
    Remoting(#[from] rocketpy_remoting::RemotingError),
    /// A configuration value is invalid.
    #[error("configuration: {0}")]
    Config(String),
}

/// A SYSTEM_ERROR answer carrying `e` as its remark: for failures that are the broker's, not
/// the requester's (a config file that cannot be written, a body that cannot be serialised).
pub(crate) fn system_error(e: impl std::fmt::Display) -> rocketpy_remoting::ProcessError {
    rocketpy_remoting::ProcessError::new(
        rocketpy_protocol::code::response::SYSTEM_ERROR,
        e.to_string(),
    )
}
