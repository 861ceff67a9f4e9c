//! The broker's doors, opened by `Broker::start`: the remoting port and its VIP channel, the
//! advertised address, and the in-process gRPC endpoint for 5.x clients.

use std::net::IpAddr;
use std::sync::Arc;

use rocketpy_remoting::{RemotingServer, ServerConfig, ServerTls};

use crate::error::{BrokerError, Result};
use crate::state::BrokerInner;

/// The 5.x clients' gRPC endpoint of a master with `grpcServerPort` set: a proxy in this
/// process reaching this broker (and the rest of the cluster) through the name servers, as
/// RocketMQ 5's broker runs its proxy (`--enable-proxy`).
pub(crate) async fn start_proxy(
    inner: &Arc<BrokerInner>,
    tls: Arc<ServerTls>,
    server: &RemotingServer,
) -> Result<Option<rocketpy_proxy::Proxy>> {
    let cfg = inner.config();
    let Ok(port) = u16::try_from(cfg.grpc_server_port) else {
        return Ok(None);
    };
    let Some(namesrv) = cfg.namesrv_addr.clone().filter(|n| !n.trim().is_empty()) else {
        return Err(BrokerError::Config(
            "grpcServerPort needs namesrvAddr: the gRPC endpoint takes its routes from the name servers".into(),
        ));
    };
    let config = rocketpy_proxy::ProxyConfig {
        namesrv_addr: namesrv,
        bind_address: cfg.bind_address.clone(),
        grpc_server_port: port,
        min_invisible_time_ms: cfg.min_invisible_time_mills_for_recv,
        default_invisible_time_ms: cfg.default_invisible_time_mills,
        credentials: cfg.credentials(),
        tls,
        client_tls: inner.namesrv.config().tls.clone(),
        // Requests for this broker skip the socket (and TLS): same process, same answers.
        in_process: Some((
            inner.broker_addr.clone(),
            server.in_process(),
            inner.store_host,
        )),
        acl: inner.acl.clone(),
        clock: inner.clock.clone(),
        ..rocketpy_proxy::ProxyConfig::default()
    };
    if config.acl.is_some() && config.credentials.is_none() {
        tracing::warn!("aclEnable=true without accessKey/secretKey: the gRPC endpoint reaches this broker in process, but other brokers' ACLs will refuse its requests");
    }
    let proxy = rocketpy_proxy::Proxy::start(config).await.map_err(|e| {
        BrokerError::Config(format!(
            "cannot listen for gRPC clients (grpcServerPort {port}): {e}"
        ))
    })?;
    Ok(Some(proxy))
}

/// RocketMQ's "VIP channel": a Java broker serves the same requests on `listenPort - 2` too (its
/// fast remoting server), and some peers only ever use that port — a 4.x slave's metadata sync
/// (GET_ALL_TOPIC_CONFIG and the rest, `MixAll.brokerVIPChannel(true, …)`) and clients with
/// `vipChannelEnabled`. It is derived, not configured, as in 4.x. A broker that cannot have
/// that port (taken, or the main port below 3) runs without it and says so.
pub(crate) async fn bind_vip(
    host: &str,
    port: u16,
    table: rocketpy_remoting::ProcessorTable,
    config: ServerConfig,
) -> Option<RemotingServer> {
    let vip_port = port.checked_sub(2).filter(|p| *p > 0)?;
    match RemotingServer::bind(&format!("{host}:{vip_port}"), table, config).await {
        Ok(server) => Some(server),
        Err(e) => {
            tracing::warn!(port = vip_port, error = %e, "no VIP channel (listenPort - 2): 4.x slaves cannot sync metadata from this broker");
            None
        }
    }
}

/// The address to advertise when `brokerIP1` is not set: the bind address if it is specific,
/// else the host's primary address (the source of a route to a public address; no packet is
/// sent), else loopback.
pub(crate) fn advertised_ip(bind: &str) -> IpAddr {
    if let Ok(ip) = bind.parse::<IpAddr>() {
        if !ip.is_unspecified() {
            return ip;
        }
    }
    std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| {
            s.connect("192.0.2.1:9")?;
            s.local_addr()
        })
        .map(|a| a.ip())
        .unwrap_or(IpAddr::from([127, 0, 0, 1]))
}
