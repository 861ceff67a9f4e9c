//! What the proxy's tests share.

use rocketpy_proxy::{Proxy, ProxyConfig};

/// A proxy with default settings on a free loopback port (no broker behind it).
pub async fn loopback_proxy() -> Proxy {
    Proxy::start(ProxyConfig {
        bind_address: "127.0.0.1".into(),
        grpc_server_port: 0,
        ..ProxyConfig::default()
    })
    .await
    .unwrap()
}
