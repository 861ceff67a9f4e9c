//! A proxy's settings ([`ProxyConfig`]), named after RocketMQ proxy's config keys.

use std::sync::Arc;
use std::time::Duration;

use rocketpy_protocol::clock::Clock;

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
    /// rights of `plain_acl.yml`, as on the broker's remoting port ([`crate::auth`]).
    pub acl: Option<Arc<rocketpy_acl::Acl>>,
    /// The proxy's time (receipt-handle expiry, renewals, born and delivery times): the
    /// system clock, its broker's inside a broker, a manual clock in tests.
    pub clock: Clock,
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
            clock: Clock::system(),
        }
    }
}
