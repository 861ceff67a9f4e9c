//! rocketpy's RocketMQ 5.x proxy: the gRPC protocol of the 5.x clients
//! (`apache.rocketmq.v2.MessagingService`) in front of brokers speaking the remoting
//! protocol, as RocketMQ 5's proxy runs in cluster mode. It keeps no message state of its
//! own: routes come from the name servers, sends become SEND_MESSAGE_V2, receives become
//! pops (POP_MESSAGE, ACK_MESSAGE or BATCH_ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME) and
//! receipt handles carry everything an ack needs. Inside a broker it hands its requests for
//! that broker straight to the broker's processors ([`ProxyConfig::in_process`]); the others
//! it reaches over TCP. What it remembers — each client's settings and its telemetry
//! stream — a client re-sends when it reconnects.
//!
//! It runs inside a broker process (`grpcServerPort`); [`server::Proxy::start`] also runs it
//! on its own (no command starts that yet), and it works the same in front of Apache
//! RocketMQ 5.x brokers, which serve the same requests.

pub mod ack;
pub mod ack_wire;
pub mod auth;
pub mod clients;
mod coalesce;
pub mod config;
pub mod context;
pub mod convert;
pub mod credential;
pub mod delivered;
pub mod handle;
pub mod inbound;
mod incoming;
pub mod receive;
pub mod receive_response;
pub mod renew;
mod request;
pub mod routes;
pub mod send;
pub mod server;
pub mod service;
pub mod state;
pub mod status;
mod thread;
pub mod transaction;
pub mod validate;

pub use config::ProxyConfig;
pub use server::Proxy;
pub use state::ProxyInner;

/// The protocol's messages and the service trait, generated from `proto/messaging.proto`.
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod pb {
    tonic::include_proto!("apache.rocketmq.v2");
}
