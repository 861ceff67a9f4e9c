//! The RocketMQ 4.x remoting transport: tokio code that only moves frames. What a frame holds
//! and how it is encoded is `rocketpy-protocol`'s.
//!
//! - [`connection`], [`server`], [`client`]: connections, a listening server, a pooling client.
//! - [`direct`]: blocking request/response in the caller's thread (synchronous sends).
//! - [`processor`]: dispatch of requests to processors by request code.
//! - [`tls`], [`stream`]: TLS on connections (RocketMQ's `tls.*` keys).

pub mod budget;
pub mod client;
pub mod connection;
pub mod direct;
pub mod error;
pub mod lifecycle;
pub mod memory;
pub mod processor;
pub mod server;
pub mod stream;
pub mod tls;

pub use budget::{Marks, Reservation};
pub use client::{ClientConfig, RemotingClient};
pub use connection::{BoxFuture, Connection, Reply, RequestHandler};
pub use direct::{DirectConnection, DirectPool};
pub use error::{RemotingError, Result};
pub use processor::{
    ProcessError, ProcessResult, ProcessorTable, RequestGuard, RequestObserver, RequestOutcome,
    RequestProcessor, RequestRecord,
};
pub use server::{InProcess, RemotingServer, ServerConfig};
pub use stream::Stream;
pub use tls::{ClientTls, ServerTls, TlsConfig, TlsMode};
