//! The RocketMQ 4.x protocol, with no I/O: everything a sender writes and a receiver parses.
//!
//! - [`code`], [`flag`]: request, response and language codes; permission and sysFlag bits.
//! - [`code_names`]: RocketMQ's names of every request and response code (metric labels).
//! - [`command`], [`frame`], [`header_json`], [`header_binary`]: one remoting command and its
//!   frame, in both header serialisations (pure functions over byte slices).
//! - [`body`]: the JSON bodies (routes, topic configs, heartbeats), read as fastjson writes them.
//! - [`message`]: the CommitLog record (also the PULL_MESSAGE body), properties, Java's
//!   string hash.
//! - [`ha_autoswitch`]: the HA frames of controller mode (5.x), on the broker's HA port.
//! - [`topic`]: the topic-name rule.
//! - [`clock`]: the one definition of "now".
//! - [`limits`]: the bounds every reader checks before it builds anything from its input.
//!
//! Transport (tokio) lives in `rocketpy-remoting`; this crate must stay free of any runtime so
//! the store, the broker, the name server and the Python binding all share one definition.

pub mod body;
pub mod clock;
pub mod code;
pub mod code_names;
pub mod command;
pub mod config;
pub mod error;
pub mod flag;
pub mod frame;
pub mod ha_autoswitch;
pub mod header;
pub mod header_binary;
pub mod header_json;
pub mod limits;
pub mod message;
pub mod signature;
pub mod subscription;
pub mod topic;
pub mod topic_attributes;

pub use code::LanguageCode;
pub use command::{ExtFields, RemotingCommand, SerializeType};
pub use error::{ProtocolError, Result};
