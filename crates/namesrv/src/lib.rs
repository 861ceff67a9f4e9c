//! rocketpy's name server: brokers register here; clients ask it where topics live.
//! Name servers share nothing: brokers register with each of them.

pub mod metrics;
pub mod processor;
pub mod route_info;

use std::sync::Arc;
use std::time::Duration;

use rocketpy_protocol::clock::Clock;
use rocketpy_remoting::{RemotingServer, ServerConfig, TlsConfig};
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
        /// Where metrics go: DISABLE or PROM (a Prometheus endpoint); RocketMQ 5.x's key.
        metrics_exporter_type: rocketpy_metrics::MetricsExporterType = rocketpy_metrics::MetricsExporterType::Disable => "metricsExporterType",
        /// Interface of the Prometheus endpoint (empty: `bindAddress`).
        metrics_prom_exporter_host: String = String::new() => "metricsPromExporterHost",
        /// Port of the Prometheus endpoint (0 picks a free one).
        metrics_prom_exporter_port: u16 = 5557 => "metricsPromExporterPort",
        /// Constant labels added to every metric, `k1:v1,k2:v2`.
        metrics_label: String = String::new() => "metricsLabel",
        /// Whether requests are checked against the ACL file's accounts (brokers must sign their registrations with an admin account, or be trusted addresses).
        acl_enable: bool = false => "aclEnable",
        /// The ACL file (default: conf/plain_acl.yml under rocketmqHome).
        acl_file: Option<String> = None => "aclFile",
        /// RocketMQ's home directory (default: $ROCKETMQ_HOME, else the working directory).
        rocketmq_home: Option<String> = None => "rocketmqHome",
        /// Also run a controller (controller mode) in this process, on its own port: its keys (`controllerDLegerPeers`, ...) go in the same file. The launcher starts it; this crate does not.
        enable_controller_in_namesrv: bool = false => "enableControllerInNamesrv",
    }
}

/// A running name server.
pub struct NameServer {
    server: RemotingServer,
    routes: Arc<RouteInfoManager>,
    scanner: JoinHandle<()>,
    /// Reads the ACL file again when it changes (`aclEnable`).
    acl_watch: Option<JoinHandle<()>>,
    metrics_server: Option<rocketpy_metrics::MetricsServer>,
}

impl NameServer {
    /// Binds and starts serving on the current tokio runtime.
    pub async fn start(config: NamesrvConfig) -> rocketpy_remoting::Result<NameServer> {
        Self::start_with_tls(config, TlsConfig::default()).await
    }

    /// [`NameServer::start`] with RocketMQ's TLS keys (`tls.server.*`) for its listener.
    pub async fn start_with_tls(
        config: NamesrvConfig,
        tls: TlsConfig,
    ) -> rocketpy_remoting::Result<NameServer> {
        Self::start_with_clock(config, tls, Clock::system()).await
    }

    /// [`NameServer::start_with_tls`] measuring brokers' silence on `clock` (a manual
    /// clock in tests).
    pub async fn start_with_clock(
        config: NamesrvConfig,
        tls: TlsConfig,
        clock: Clock,
    ) -> rocketpy_remoting::Result<NameServer> {
        let tls = tls
            .server()
            .map_err(|e| rocketpy_remoting::RemotingError::Io(std::io::Error::other(e)))?;
        let routes = Arc::new(RouteInfoManager::with_clock(clock));
        let mut table = processor::processor_table(routes.clone());
        let acl = match config.acl_enable {
            true => {
                let path = rocketpy_acl::guard::acl_path(
                    config.acl_file.as_deref(),
                    config.rocketmq_home.as_deref(),
                );
                let acl = rocketpy_acl::guard::load(&path, rocketpy_acl::Server::Namesrv)
                    .map_err(|e| rocketpy_remoting::RemotingError::Io(std::io::Error::other(e)))?;
                table.guard(Arc::new(rocketpy_acl::guard::AclGuard::new(acl.clone())));
                tracing::info!(file = %path.display(), "ACL enabled");
                Some(acl)
            }
            false => None,
        };
        let exporter = rocketpy_metrics::ExporterSettings {
            exporter_type: config.metrics_exporter_type,
            host: config.metrics_prom_exporter_host.clone(),
            port: config.metrics_prom_exporter_port,
            labels: config.metrics_label.clone(),
        };
        let registry = exporter
            .prometheus_enabled()
            .then(|| metrics::registry(&exporter, &routes, &mut table));
        let server = RemotingServer::bind(
            &format!("{}:{}", config.bind_address, config.listen_port),
            table,
            ServerConfig {
                tls: Arc::new(tls),
                ..ServerConfig::default()
            },
        )
        .await?;
        let metrics_server = match registry {
            Some(registry) => Some(
                rocketpy_metrics::MetricsServer::bind(
                    &exporter.listen_addr(&config.bind_address),
                    registry,
                )
                .await?,
            ),
            None => None,
        };
        let acl_watch = match acl {
            Some(acl) => Some(tokio::spawn(rocketpy_acl::guard::watch(acl))),
            None => {
                if !config
                    .bind_address
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
                {
                    tracing::warn!(bind = %config.bind_address, "ACL is off (aclEnable=false) and the name server listens beyond loopback: anyone who reaches its port can register brokers and delete topics");
                }
                None
            }
        };
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
            acl_watch,
            metrics_server,
        })
    }

    /// Where the Prometheus endpoint listens, when `metricsExporterType=PROM`.
    pub fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        self.metrics_server.as_ref().map(|m| m.local_addr())
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
        if let Some(w) = &self.acl_watch {
            w.abort();
        }
        if let Some(m) = &self.metrics_server {
            m.shutdown();
        }
        self.server.shutdown().await;
        tracing::info!("name server stopped");
    }
}
