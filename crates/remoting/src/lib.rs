//! The RocketMQ 4.x remoting protocol.
//!
//! - [`frame`], [`header_json`], [`header_binary`]: the I/O-free codec (pure functions).
//! - [`connection`], [`server`], [`client`]: tokio transport that only moves frames.
//! - [`protocol`]: JSON bodies (routes, topic configs, heartbeats).

pub mod client;
pub mod code;
pub mod command;
pub mod connection;
pub mod error;
pub mod frame;
pub mod header_binary;
pub mod header_json;
pub mod processor;
pub mod protocol;
pub mod pull_range;
pub mod server;

pub use client::{ClientConfig, RemotingClient};
pub use command::{ExtFields, RemotingCommand, SerializeType};
pub use connection::{BoxFuture, Connection, Reply, RequestHandler};
pub use error::{RemotingError, Result};
pub use processor::{ProcessError, ProcessResult, ProcessorTable, RequestProcessor};
pub use server::{RemotingServer, ServerConfig};
