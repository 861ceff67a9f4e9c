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
//! It runs inside a broker process (`grpcServerPort`) or on its own (`rocketpy proxy`), and
//! works the same in front of Apache RocketMQ 5.x brokers, which serve the same requests.

pub mod ack;
pub mod auth;
pub mod clients;
mod coalesce;
pub mod context;
pub mod convert;
pub mod handle;
pub mod inbound;
mod incoming;
pub mod receive;
pub mod renew;
pub mod routes;
pub mod send;
pub mod server;
pub mod service;
pub mod status;
pub mod transaction;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rocketpy_remoting::{ClientConfig, RemotingClient};

pub use server::Proxy;

/// The protocol's messages and the service trait, generated from `proto/messaging.proto`.
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod pb {
    tonic::include_proto!("apache.rocketmq.v2");
}

/// Settings of a proxy; the names in parentheses are RocketMQ proxy's config keys.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// Name servers, `host:port` separated by `;` (`namesrvAddr`).
    pub namesrv_addr: String,
    /// Interface to listen on.
    pub bind_address: String,
    /// gRPC port (`grpcServerPort`, 8081; 0 picks a free one).
    pub grpc_server_port: u16,
    /// Shortest invisible time a receive may ask for (`minInvisibleTimeMillsForRecv`).
    pub min_invisible_time_ms: i64,
    /// Longest invisible time (`maxInvisibleTimeMills`).
    pub max_invisible_time_ms: i64,
    /// Invisible time of a receive that names none, or asks for automatic renewal
    /// (`defaultInvisibleTimeMills`).
    pub default_invisible_time_ms: i64,
    /// Longest wait of a receive that finds nothing (`grpcClientConsumerLongPollingTimeoutMillis`'s
    /// upper bound, 20 s).
    pub max_long_polling_ms: i64,
    /// Furthest a delivery time may be ahead (`maxDelayTimeMills`).
    pub max_delay_ms: i64,
    /// Limit on each request to a broker or name server.
    pub remoting_timeout: Duration,
    /// The account the proxy signs its requests to brokers and name servers with (their
    /// ACL), if any.
    pub credentials: Option<rocketpy_protocol::signature::Credentials>,
    /// TLS on the gRPC listener (the broker's `tls.server.mode` and certificate).
    pub tls: Arc<rocketpy_remoting::ServerTls>,
    /// TLS of the proxy's connections to brokers and name servers (the broker's `tls.enable`).
    pub client_tls: Option<rocketpy_remoting::ClientTls>,
    /// The broker this proxy runs in, reached without a socket: its advertised address, its
    /// server's in-process connector, and the address it sees the proxy as.
    pub in_process: Option<(String, rocketpy_remoting::InProcess, std::net::SocketAddr)>,
    /// The ACL the calls of 5.x clients are decided by (`aclEnable=true`): the accounts and
    /// rights of `plain_acl.yml`, as on the broker's remoting port ([`auth`]).
    pub acl: Option<Arc<rocketpy_acl::Acl>>,
}

impl Default for ProxyConfig {
    fn default() -> Self {
        ProxyConfig {
            namesrv_addr: "127.0.0.1:9876".into(),
            bind_address: "0.0.0.0".into(),
            grpc_server_port: 8081,
            min_invisible_time_ms: 10_000,
            max_invisible_time_ms: 12 * 3600 * 1000,
            default_invisible_time_ms: 60_000,
            max_long_polling_ms: 20_000,
            max_delay_ms: 24 * 3600 * 1000,
            remoting_timeout: Duration::from_secs(3),
            credentials: None,
            tls: Arc::new(rocketpy_remoting::ServerTls::disabled()),
            in_process: None,
            client_tls: None,
            acl: None,
        }
    }
}

/// A request to a broker or name server. Its header goes in RocketMQ's binary serialisation
/// (`ROCKETMQ`), which every RocketMQ 4.x/5.x server reads and which costs less to write and
/// read than JSON on this hop, taken once per message — except for codes that do not fit its
/// 16-bit code field (the 5.x pop codes, 200050 and up), which RocketMQ sends as JSON.
pub(crate) fn remoting_request(code: i32) -> rocketpy_protocol::RemotingCommand {
    let mut cmd = rocketpy_protocol::RemotingCommand::request(code);
    if i16::try_from(code).is_ok() {
        cmd.serialize_type = rocketpy_protocol::command::SerializeType::RocketMq;
    }
    cmd
}

/// State shared by the RPC handlers.
pub struct ProxyInner {
    /// Settings.
    pub config: ProxyConfig,
    /// Connections to name servers and brokers.
    pub remoting: RemotingClient,
    /// Routes and masters.
    pub routes: routes::Routes,
    /// Connected clients: settings and telemetry streams.
    pub clients: clients::Clients,
    /// Received messages whose invisible time the proxy extends (push consumers).
    pub renewals: renew::Renewals,
    /// Group settings read recently (receives of clients that sent none).
    pub group_settings: clients::GroupSettingsCache,
    next_queue: AtomicUsize,
}

impl ProxyInner {
    /// A proxy's state; `remoting` answers brokers' requests to the proxy (transaction
    /// checks) through [`transaction::CheckRelay`].
    pub fn new(config: ProxyConfig) -> Arc<ProxyInner> {
        Arc::new_cyclic(|weak| {
            let relay = Arc::new(transaction::CheckRelay::new(weak.clone()));
            let remoting = RemotingClient::new(
                ClientConfig {
                    direct_connections: 0,
                    credentials: config.credentials.clone(),
                    tls: config.client_tls.clone(),
                    in_process: config.in_process.clone(),
                    ..ClientConfig::default()
                },
                Some(relay),
                tokio::runtime::Handle::current(),
            );
            ProxyInner {
                routes: routes::Routes::new(
                    remoting.clone(),
                    &config.namesrv_addr,
                    config.remoting_timeout,
                ),
                remoting,
                clients: clients::Clients::default(),
                renewals: renew::Renewals::default(),
                group_settings: clients::GroupSettingsCache::default(),
                next_queue: AtomicUsize::new(0),
                config,
            }
        })
    }

    /// A different number on each call (round-robin queue choice).
    pub fn next_index(&self) -> usize {
        self.next_queue.fetch_add(1, Ordering::Relaxed)
    }
}
