//! Store errors.

use std::io;
use std::path::PathBuf;

/// Result alias for the store.
pub type Result<T> = std::result::Result<T, StoreError>;

/// Everything the store can fail with. Corrupt data is an error value, never a panic.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// File-system failure, with the path involved.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// Another process holds the store's `lock` file.
    #[error("store {0} is locked by another process (a broker is already running on it)")]
    Locked(PathBuf),
    /// A record or file does not match the RocketMQ layout.
    #[error("corrupt data in {what}: {reason}")]
    Corrupt {
        /// Which file or structure.
        what: String,
        /// What is wrong.
        reason: String,
    },
    /// A caller passed something the store refuses (bad topic, oversized message, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The message is larger than `maxMessageSize`.
    #[error("message of {size} bytes exceeds maxMessageSize {max}")]
    MessageTooLarge {
        /// Encoded record size.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// The store was shut down.
    /// Replication: the master's bytes do not start where this store's CommitLog ends.
    #[error("replicated data starts at {got}, but this store's CommitLog ends at {expected}")]
    ReplicaOffset { expected: i64, got: i64 },
    /// A slave's store takes writes only from its master.
    #[error("message store is slave mode, so putMessage is forbidden")]
    SlaveRole,
    #[error("store is shut down")]
    ShutDown,
    /// The disk is fuller than `diskSpaceWarningLevelRatio`, or a write found no space: puts
    /// are refused until space is free again.
    #[error("disk full ({used_percent}% used, limit {limit_percent}%): the store refuses writes until space is freed")]
    DiskFull {
        /// Current usage.
        used_percent: u64,
        /// The warning level.
        limit_percent: u64,
    },
    /// A config file did not parse.
    #[error("config file {path}: {reason}")]
    Config {
        /// The file.
        path: PathBuf,
        /// Why it failed.
        reason: String,
    },
}

impl StoreError {
    /// Wraps an I/O error with its path.
    pub fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        StoreError::Io {
            path: path.into(),
            source,
        }
    }

    /// Whether the disk (or a quota) ran out of space.
    pub fn is_no_space(&self) -> bool {
        match self {
            StoreError::DiskFull { .. } => true,
            StoreError::Io { source, .. } => crate::io::is_no_space(source),
            _ => false,
        }
    }

    /// A corruption report.
    pub fn corrupt(what: impl Into<String>, reason: impl Into<String>) -> Self {
        StoreError::Corrupt {
            what: what.into(),
            reason: reason.into(),
        }
    }
}

impl From<rocketpy_protocol::ProtocolError> for StoreError {
    /// Records and names that do not follow the format: corrupt data when read from a file,
    /// invalid arguments when a caller passed them.
    fn from(e: rocketpy_protocol::ProtocolError) -> Self {
        use rocketpy_protocol::ProtocolError as P;
        match e {
            P::Corrupt { what, reason } => StoreError::Corrupt { what, reason },
            P::InvalidArgument(reason) => StoreError::InvalidArgument(reason),
            other => StoreError::Corrupt {
                what: "message".into(),
                reason: other.to_string(),
            },
        }
    }
}

impl From<rocketpy_protocol::config::ConfigError> for StoreError {
    fn from(e: rocketpy_protocol::config::ConfigError) -> Self {
        StoreError::InvalidArgument(e.to_string())
    }
}
