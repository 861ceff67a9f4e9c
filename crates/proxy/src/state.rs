//! The state the RPC handlers share ([`ProxyInner`]): connections, routes, clients, renewals
//! and the clock.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rocketpy_remoting::{ClientConfig, RemotingClient};

use crate::config::ProxyConfig;
use crate::{clients, renew, routes, transaction};

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

    /// Milliseconds since the epoch on the proxy's clock.
    pub fn now_millis(&self) -> i64 {
        self.config.clock.now_millis()
    }
}
