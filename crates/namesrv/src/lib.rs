//! rocketpy's name server: brokers register here; clients ask it where topics live.
//! Name servers share nothing: brokers register with each of them.

pub mod processor;
pub mod route_info;

use std::sync::Arc;
use std::time::Duration;

use rocketpy_remoting::{RemotingServer, ServerConfig};
use tokio::task::JoinHandle;

pub use route_info::RouteInfoManager;

/// Name server settings (RocketMQ's `NamesrvConfig` / `NettyServerConfig` where they exist).
#[derive(Debug, Clone)]
pub struct NamesrvConfig {
    /// Address to listen on, e.g. `0.0.0.0:9876` (port 0 picks a free port).
    pub listen_addr: String,
    /// How often to look for silent brokers (RocketMQ: 10 s).
    pub scan_not_active_broker_interval: Duration,
    /// A broker silent for this long is removed (RocketMQ: 120 s).
    pub broker_channel_expired_time: Duration,
}

impl Default for NamesrvConfig {
    fn default() -> Self {
        NamesrvConfig {
            listen_addr: "0.0.0.0:9876".into(),
            scan_not_active_broker_interval: Duration::from_secs(10),
            broker_channel_expired_time: Duration::from_secs(120),
        }
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
            &config.listen_addr,
            processor::processor_table(routes.clone()),
            ServerConfig::default(),
        )
        .await?;
        let scan_routes = routes.clone();
        let scanner = tokio::spawn(async move {
            let mut tick = tokio::time::interval(config.scan_not_active_broker_interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                scan_routes.scan_not_active(config.broker_channel_expired_time);
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
