//! The state the RPC handlers share ([`ProxyInner`]): connections, routes, clients, renewals
//! and the clock.

use rocketpy_remoting::RemotingClient;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::config::ProxyConfig;
use crate::{clients, renew, routes};

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
    /// A proxy's state around `remoting`, its connections to brokers and name servers
    /// (built by `server::build_state`, which gives it the transaction-check relay).
    pub(crate) fn assemble(config: ProxyConfig, remoting: RemotingClient) -> ProxyInner {
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
