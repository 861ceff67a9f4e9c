//! rocketpy's name server: brokers register here; clients ask it where topics live.
//! Name servers share nothing: brokers register with each of them.

pub mod processor;
pub mod route_info;

use std::sync::Arc;
use std::time::Duration;

use rocketpy_remoting::{RemotingServer, ServerConfig};
use tokio::task::JoinHandle;

pub use route_info::RouteInfoManager;

rocketpy_protocol::config_struct! {
    /// Name server settings (RocketMQ's `NamesrvConfig` / `NettyServerConfig` keys where they
    /// exist).
    pub struct NamesrvConfig {
        /// Interface to bind (not a RocketMQ key: RocketMQ binds every interface).
        bind_address: String = "0.0.0.0".into() => "bindAddress",
        /// Port to listen on (0 picks a free one).
        listen_port: u16 = 9876 => "listenPort",
        /// Milliseconds between scans for silent brokers.
        scan_not_active_broker_interval: u64 = 10_000 => "scanNotActiveBrokerInterval",
        /// Milliseconds of silence after which a broker is removed.
        broker_channel_expired_time: u64 = 120_000 => "brokerChannelExpiredTime",
    }
}

/// A running name server.
pub struct NameServer {
    server: RemotingServer,
    routes: Arc<RouteInfoManager>,
    scanner: JoinHandle<()>,
}

impl NameServer {
    /// Binds and starts serving on the current tokio runtime.
    pub async fn start(config: NamesrvConfig) -> rocketpy_remoting::Result<NameServer> {
        let routes = Arc::new(RouteInfoManager::new());
        let server = RemotingServer::bind(
            &format!("{}:{}", config.bind_address, config.listen_port),
            processor::processor_table(routes.clone()),
            ServerConfig::default(),
        )
        .await?;
        let scan_routes = routes.clone();
        let scanner = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(
                config.scan_not_active_broker_interval.max(10),
            ));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                scan_routes
                    .scan_not_active(Duration::from_millis(config.broker_channel_expired_time));
                rocketpy_remoting::memory::release_free_memory();
            }
        });
        tracing::info!(addr = %server.local_addr(), "name server listening");
        Ok(NameServer {
            server,
            routes,
            scanner,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> std::net::SocketAddr {
        self.server.local_addr()
    }

    /// The route tables.
    pub fn routes(&self) -> &Arc<RouteInfoManager> {
        &self.routes
    }

    /// Stops serving.
    pub async fn shutdown(&self) {
        self.scanner.abort();
        self.server.shutdown().await;
        tracing::info!("name server stopped");
    }
}
