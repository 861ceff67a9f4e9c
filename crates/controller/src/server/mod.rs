//! A controller on the network (issue 43, docs/controller-design.md §1–3): the RocketMQ 5.x
//! controller requests on the port of this controller's entry in `controllerDLegerPeers`, the
//! peers' Raft on the same port ([`transport`]), the heartbeat table ([`heartbeats`]) and the
//! controller's own duties ([`duties`]): expiry scans, re-elections, notifications.
//!
//! - [`settings`], [`peers`]: the configuration keys and the group's controllers.
//! - [`codec`]: frames ↔ requests and answers.
//! - [`processors`]: the processor table.
//! - [`metrics`]: the Prometheus metrics (`metricsExporterType=PROM`).
//!
//! Start-up: bind the port, start Raft with the TCP transport, then (a fresh store only) form
//! the group from the peers ([`form_group`]).

pub mod codec;
pub mod duties;
pub mod heartbeats;
pub mod metrics;
pub mod peers;
pub mod processors;
pub mod settings;
pub mod transport;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rocketpy_protocol::clock::Clock;
use rocketpy_remoting::{
    ClientConfig, RemotingClient, RemotingError, RemotingServer, ServerConfig, TlsConfig,
};
use tokio::task::JoinHandle;

use crate::config::ControllerConfig;
use crate::raft::{Controller, ControllerOptions, ControllerRaft};
use heartbeats::HeartbeatTable;
pub use peers::Peers;
pub use processors::served_codes;
pub use settings::{ControllerSettings, SettingsError};

/// Why a controller did not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error("controller port: {0}")]
    Remoting(#[from] RemotingError),
    #[error(transparent)]
    Start(#[from] crate::raft::StartError),
    #[error("ACL: {0}")]
    Acl(String),
    #[error("metrics endpoint: {0}")]
    Metrics(std::io::Error),
}

/// What the processors and duties share.
pub struct Shared {
    settings: parking_lot::RwLock<ControllerSettings>,
    peers: Peers,
    controller: OnceLock<Arc<Controller>>,
    /// The Raft handle the peers' RPCs go to (set once Raft runs).
    raft: Arc<OnceLock<ControllerRaft>>,
    heartbeats: HeartbeatTable,
    /// Notifications to brokers.
    client: RemotingClient,
    started_ms: i64,
    /// Set by shutdown: duties started by a closing connection stop instead of retrying
    /// against a Raft that is going away.
    closing: std::sync::atomic::AtomicBool,
    /// Request and election counters (`metricsExporterType=PROM`).
    metrics: Option<Arc<metrics::ControllerMetrics>>,
}

impl Shared {
    fn controller(&self) -> Option<Arc<Controller>> {
        if self.closing.load(std::sync::atomic::Ordering::Acquire) {
            return None;
        }
        self.controller.get().cloned()
    }

    /// Whether the election warm-up after start is still running.
    fn warming_up(&self) -> bool {
        let warm_up = self.settings.read().election_warm_up_millis as i64;
        self.heartbeats.clock().now_millis() - self.started_ms < warm_up
    }
}

/// A running controller.
pub struct ControllerServer {
    server: RemotingServer,
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
    metrics_server: Option<rocketpy_metrics::MetricsServer>,
}

impl ControllerServer {
    /// Starts a controller on the current tokio runtime.
    pub async fn start(settings: ControllerSettings, tls: TlsConfig) -> Result<Self, ServeError> {
        Self::start_with_clock(settings, tls, Clock::system()).await
    }

    /// [`ControllerServer::start`] judging heartbeats and the warm-up on `clock`.
    pub async fn start_with_clock(
        settings: ControllerSettings,
        tls: TlsConfig,
        clock: Clock,
    ) -> Result<Self, ServeError> {
        let peers = settings.check()?;
        let server_tls = tls.server().map_err(|e| ServeError::Acl(e.to_string()))?;
        let client_tls = tls.client().map_err(|e| ServeError::Acl(e.to_string()))?;
        let client = RemotingClient::new(
            ClientConfig {
                credentials: settings.credentials(),
                tls: client_tls,
                ..ClientConfig::default()
            },
            None,
            tokio::runtime::Handle::current(),
        );
        let exporter = settings.exporter();
        let counters = exporter
            .prometheus_enabled()
            .then(|| Arc::new(metrics::ControllerMetrics::default()));
        let shared = Arc::new(Shared {
            peers: peers.clone(),
            controller: OnceLock::new(),
            raft: Arc::new(OnceLock::new()),
            heartbeats: HeartbeatTable::new(clock.clone()),
            client: client.clone(),
            started_ms: clock.now_millis(),
            closing: Default::default(),
            settings: parking_lot::RwLock::new(settings.clone()),
            metrics: counters.clone(),
        });
        let registry = counters
            .as_ref()
            .map(|m| metrics::registry(&exporter, &shared, m));
        let mut table = processors::table(&shared);
        let mut tasks = Vec::new();
        if settings.acl_enable {
            let path = rocketpy_acl::guard::acl_path(
                settings.acl_file.as_deref(),
                settings.rocketmq_home.as_deref(),
            );
            let acl = rocketpy_acl::guard::load(&path, rocketpy_acl::Server::Controller)
                .map_err(ServeError::Acl)?;
            table.guard(Arc::new(rocketpy_acl::guard::AclGuard::new(acl.clone())));
            tasks.push(tokio::spawn(rocketpy_acl::guard::watch(acl)));
        }
        let port = peers
            .self_addr()
            .rsplit_once(':')
            .map(|(_, p)| p)
            .unwrap_or_default();
        let host = match settings.bind_address.as_str() {
            "" => peers
                .self_addr()
                .rsplit_once(':')
                .map(|(h, _)| h)
                .unwrap_or_default(),
            h => h,
        };
        let server = RemotingServer::bind(
            &format!("{host}:{port}"),
            table,
            ServerConfig {
                tls: Arc::new(server_tls),
                ..ServerConfig::default()
            },
        )
        .await?;
        let metrics_server = match registry {
            Some(registry) => {
                match rocketpy_metrics::MetricsServer::bind(&exporter.listen_addr(host), registry)
                    .await
                {
                    Ok(m) => Some(m),
                    Err(e) => {
                        server.shutdown().await;
                        return Err(ServeError::Metrics(e));
                    }
                }
            }
            None => None,
        };
        let options = ControllerOptions {
            config: ControllerConfig {
                enable_elect_unclean_master: settings.enable_elect_unclean_master,
            },
            ..ControllerOptions::default()
        };
        let started = Controller::start(
            peers.self_id(),
            &settings.store_path(),
            transport::RemotingTransport::new(client),
            options,
        )
        .await;
        let controller = match started {
            Ok(c) => Arc::new(c),
            Err(e) => {
                server.shutdown().await;
                return Err(e.into());
            }
        };
        let _ = shared.raft.set(controller.raft().clone());
        let fresh = controller.log_report().entries == 0
            && controller
                .raft()
                .metrics()
                .borrow()
                .membership_config
                .membership()
                .nodes()
                .count()
                == 0;
        if fresh {
            tasks.push(tokio::spawn(form_group(controller.clone(), peers.clone())));
        }
        let _ = shared.controller.set(controller);
        tasks.push(tokio::spawn(expiry_scan(shared.clone())));
        tasks.push(tokio::spawn(master_scan(shared.clone())));
        tracing::info!(id = peers.self_name(), addr = %server.local_addr(), group = %settings.controller_dleger_group, "controller listening");
        Ok(Self {
            server,
            shared,
            tasks,
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

    /// The replicated controller.
    pub fn controller(&self) -> Arc<Controller> {
        // Set before `start` returns.
        self.shared
            .controller
            .get()
            .cloned()
            .expect("controller runs")
    }

    /// This controller's id as written in the peers.
    pub fn self_name(&self) -> &str {
        self.shared.peers.self_name()
    }

    /// The leader's written id, when one is known.
    pub fn leader_name(&self) -> Option<String> {
        let leader = self.controller().current_leader()?;
        self.shared.peers.name_of(leader).map(str::to_owned)
    }

    /// Brokers whose heartbeats this controller holds.
    pub fn tracked_brokers(&self) -> usize {
        self.shared.heartbeats.len()
    }

    /// Stops serving; the Raft store stays for a restart.
    pub async fn shutdown(&self) {
        self.shared
            .closing
            .store(true, std::sync::atomic::Ordering::Release);
        for t in &self.tasks {
            t.abort();
        }
        if let Some(m) = &self.metrics_server {
            m.shutdown();
        }
        self.server.shutdown().await;
        self.controller().shutdown().await;
        self.shared.client.shutdown();
        tracing::info!(id = self.self_name(), "controller stopped");
    }
}

/// Forms a new group. The controller with the lowest id does so at once; the others only if,
/// some election timeouts later, no leader has reached them (the lowest one is down): all
/// forming at once would start competing elections. openraft refuses a second formation on a
/// node that already has members, so a late one is harmless.
async fn form_group(controller: Arc<Controller>, peers: Peers) {
    if peers.self_id() != 0 {
        tokio::time::sleep(FORMATION_GRACE).await;
        let metrics = controller.raft().metrics().borrow().clone();
        if metrics.current_leader.is_some()
            || metrics.membership_config.membership().nodes().count() > 0
        {
            return;
        }
    }
    if let Err(e) = controller.initialize(peers.membership()).await {
        tracing::debug!(error = %e, "group already formed");
    }
}

/// How long a controller other than the lowest waits for the group to be formed.
const FORMATION_GRACE: Duration = Duration::from_secs(6);

fn interval(ms: u64) -> tokio::time::Interval {
    let mut tick = tokio::time::interval(Duration::from_millis(ms.max(10)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick
}

/// `scanNotActiveBrokerInterval`: brokers whose heartbeat expired leave the table.
async fn expiry_scan(shared: Arc<Shared>) {
    let mut tick = interval(shared.settings.read().scan_not_active_broker_interval);
    loop {
        tick.tick().await;
        let gone = shared.heartbeats.expire();
        if !gone.is_empty() {
            duties::departed(shared.clone(), gone).await;
        }
    }
}

/// `scanInactiveMasterInterval`: the leader re-elects groups whose master is gone.
async fn master_scan(shared: Arc<Shared>) {
    let mut tick = interval(shared.settings.read().scan_inactive_master_interval);
    loop {
        tick.tick().await;
        duties::scan_inactive_masters(&shared).await;
    }
}
