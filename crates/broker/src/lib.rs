//! rocketpy's broker: RocketMQ 4.x request processors over the rocketpy store.
//!
//! The send and pull paths run entirely here, on tokio; nothing in this crate knows Python.

pub mod config;
pub mod config_file;
pub mod config_journal;
pub mod consumer_manager;
pub mod consumer_offset;
pub mod error;
pub mod ha;
pub mod long_polling;
pub mod metrics;
pub mod pop;
pub mod processor;
pub mod producer_manager;
pub mod rebalance_lock;
pub mod register;
pub mod stats;
pub mod subscription;
pub mod subscription_group;
pub mod timer;
pub mod topic_config;
pub mod transaction;

use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use rocketpy_remoting::{ClientConfig, RemotingClient, RemotingServer, ServerConfig, ServerTls};
use rocketpy_store::MessageStore;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

pub use config::{BrokerConfig, BrokerSettings};
pub use error::{BrokerError, Result};

use consumer_manager::ConsumerManager;
use consumer_offset::ConsumerOffsetManager;
use long_polling::PullHoldService;
use topic_config::TopicConfigManager;

/// State shared by the processors of one broker.
pub struct BrokerInner {
    /// Configuration.
    pub settings: BrokerSettings,
    /// The message store.
    pub store: Arc<MessageStore>,
    /// Topic configurations.
    pub topics: TopicConfigManager,
    /// Committed consumer offsets.
    pub offsets: ConsumerOffsetManager,
    /// Consumer groups (members, subscriptions).
    pub consumers: ConsumerManager,
    /// Producer groups (members), for transaction checks.
    pub producers: producer_manager::ProducerManager,
    /// Transactions' state, read back from the store.
    pub transactions: transaction::Transactions,
    /// Subscription group settings (retry, permissions).
    pub groups: subscription_group::SubscriptionGroupManager,
    /// Queue locks of orderly consumers.
    pub locks: rebalance_lock::RebalanceLockManager,
    /// Held pulls.
    pub hold: Arc<PullHoldService>,
    /// Pop consumption: checkpoints, revivals, FIFO holds, waiting pops.
    pub pop: Arc<pop::PopService>,
    /// Timer messages waiting for their delivery time.
    pub timer: timer::TimerService,
    /// Client for name servers.
    pub namesrv: RemotingClient,
    /// `ip:port` advertised to name servers and clients.
    pub broker_addr: String,
    /// STOREHOST written into records.
    pub store_host: SocketAddr,
    /// Wakes the registration task for an immediate re-registration.
    pub register_now: Notify,
    /// Replication: the master's slaves, or a slave's master.
    pub ha: Arc<ha::HaService>,
    /// `ip:port` of this broker's HA listener, advertised at registration (masters).
    pub ha_addr: Option<String>,
    /// Traffic statistics (mqadmin's brokerStatus, clusterList, statsAll).
    pub stats: stats::BrokerStats,
    /// When the broker started (ms since the epoch).
    pub boot_ms: i64,
    /// `brokerPermission` now: set from the config, changed at run time by
    /// UPDATE_BROKER_CONFIG (mqadmin updateBrokerConfig), read by every send and pull.
    pub permission: std::sync::atomic::AtomicI32,
    /// Traffic counters when `metricsExporterType=PROM`; `None` counts nothing.
    pub metrics: Option<metrics::BrokerMetrics>,
    /// The ACL (`aclEnable=true`): processors ask it about the stored messages requests name.
    pub acl: Option<Arc<rocketpy_acl::Acl>>,
}

/// Milliseconds since the epoch (0 if the clock is before it): store and version times.
pub(crate) use rocketpy_protocol::clock::now_millis;

impl BrokerInner {
    /// Broker config.
    pub fn config(&self) -> &BrokerConfig {
        &self.settings.broker
    }

    /// The broker's permission now (`brokerPermission`, see [`BrokerInner::permission`]).
    pub fn permission(&self) -> i32 {
        self.permission.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Takes the statistics' snapshots every 10 s (days are UTC days), and gives freed heap
/// memory back (see `rocketpy_remoting::memory`).
async fn sample_stats(broker: Arc<BrokerInner>) {
    let mut tick = tokio::time::interval(Duration::from_secs(10));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let now = now_millis();
        broker
            .stats
            .sample(now, now / 86_400_000, &broker.config().broker_cluster_name);
        rocketpy_remoting::memory::release_free_memory();
    }
}

/// Revives popped messages whose invisible time ended, every second (RocketMQ's
/// `reviveInterval`), off the I/O threads.
async fn revive_loop(broker: Arc<BrokerInner>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let b = broker.clone();
        let _ = tokio::task::spawn_blocking(move || b.pop.revive_due(&b, now_millis())).await;
    }
}

/// The 5.x clients' gRPC endpoint of a master with `grpcServerPort` set: a proxy in this
/// process reaching this broker (and the rest of the cluster) through the name servers, as
/// RocketMQ 5's broker runs its proxy (`--enable-proxy`).
async fn start_proxy(
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

/// A running broker.
pub struct Broker {
    inner: Arc<BrokerInner>,
    server: RemotingServer,
    /// The same requests on listenPort - 2 (see [`bind_vip`]).
    vip_server: Option<RemotingServer>,
    tasks: Vec<JoinHandle<()>>,
    /// Stops the replication tasks (HA listener and connections, or the slave's client).
    ha_stop: tokio::sync::watch::Sender<bool>,
    /// The Prometheus endpoint (`metricsExporterType=PROM`).
    metrics_server: Option<rocketpy_metrics::MetricsServer>,
    /// The 5.x clients' gRPC endpoint (`grpcServerPort`).
    proxy: Option<rocketpy_proxy::Proxy>,
}

/// RocketMQ's "VIP channel": a Java broker serves the same requests on `listenPort - 2` too (its
/// fast remoting server), and some peers only ever use that port — a 4.x slave's metadata sync
/// (GET_ALL_TOPIC_CONFIG and the rest, `MixAll.brokerVIPChannel(true, …)`) and clients with
/// `vipChannelEnabled`. It is derived, not configured, as in 4.x. A broker that cannot have
/// that port (taken, or the main port below 3) runs without it and says so.
async fn bind_vip(
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
fn advertised_ip(bind: &str) -> IpAddr {
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

impl Broker {
    /// Opens the store (recovering it), loads the config files, listens, and registers with
    /// the name servers. Runs on the current tokio runtime.
    pub async fn start(settings: BrokerSettings) -> Result<Broker> {
        settings.validate()?;
        // TLS problems (a missing key file, an unknown mode) stop the start before the store
        // opens.
        let server_tls = Arc::new(settings.tls.server().map_err(BrokerError::Config)?);
        let client_tls = settings.tls.client().map_err(BrokerError::Config)?;
        let store_config = settings.store.clone();
        let store = tokio::task::spawn_blocking(move || MessageStore::open(store_config))
            .await
            .map_err(|e| BrokerError::Config(format!("store open task failed: {e}")))??;
        let config_dir = settings.store.store_path_root_dir.join("config");
        let schedule_queues = store.delay_levels().len() as i32;
        let topics = TopicConfigManager::load(
            config_dir.join("topics.json"),
            &settings.broker,
            schedule_queues,
        )?;
        if let Err(e) = topics.persist(false) {
            // A broker restarted on a full disk must still serve reads; the table is written
            // again by housekeeping once changes are journaled.
            tracing::error!(error = %e, "cannot write topics.json at start");
        }
        let offsets = ConsumerOffsetManager::load(config_dir.join("consumerOffset.json"))?;
        let groups = subscription_group::SubscriptionGroupManager::load(
            config_dir.join("subscriptionGroup.json"),
            settings.broker.auto_create_subscription_group,
        )?;
        let locks = rebalance_lock::RebalanceLockManager::new(Some(Duration::from_millis(
            settings.broker.rebalance_lock_max_live_time,
        )));

        let broker_cfg = &settings.broker;
        let bind = format!("{}:{}", broker_cfg.bind_address, broker_cfg.listen_port);
        let table_slot: Arc<std::sync::OnceLock<Arc<BrokerInner>>> = Arc::default();
        let exporter = broker_cfg.exporter();
        // RocketMQ 5.x's constant labels of a broker.
        let mut registry = exporter.prometheus_enabled().then(|| {
            exporter.registry(vec![
                ("cluster", broker_cfg.broker_cluster_name.clone()),
                ("node_type", "broker".into()),
                ("node_id", broker_cfg.broker_name.clone()),
            ])
        });
        let metrics = registry.as_mut().map(metrics::BrokerMetrics::register);
        let rpc = registry
            .as_mut()
            .map(|r| Arc::new(rocketpy_metrics::rpc::RpcMetrics::register(r)));
        let acl = match broker_cfg.acl_enable {
            true => {
                let path = rocketpy_acl::guard::acl_path(
                    broker_cfg.acl_file.as_deref(),
                    broker_cfg.rocketmq_home.as_deref(),
                );
                let acl = rocketpy_acl::guard::load(&path, rocketpy_acl::Server::Broker)
                    .map_err(BrokerError::Config)?;
                tracing::info!(file = %path.display(), "ACL enabled");
                Some(acl)
            }
            false => None,
        };
        let table = || {
            let mut table = processor::processor_table(table_slot.clone());
            if let Some(rpc) = &rpc {
                table.observe(rpc.clone());
            }
            if let Some(acl) = &acl {
                table.guard(Arc::new(rocketpy_acl::guard::AclGuard::new(acl.clone())));
            }
            table
        };
        let server_config = ServerConfig {
            idle_timeout: Some(Duration::from_secs(
                broker_cfg.client_channel_max_idle_time_seconds.max(1),
            )),
            tls: server_tls.clone(),
            marks: broker_cfg.marks(),
            ..ServerConfig::default()
        };
        let server = RemotingServer::bind(&bind, table(), server_config.clone()).await?;
        let port = server.local_addr().port();
        let vip_server = bind_vip(&broker_cfg.bind_address, port, table(), server_config).await;
        let ip = match &broker_cfg.broker_ip1 {
            Some(ip) => ip.parse::<IpAddr>().map_err(|_| {
                BrokerError::Config(format!("brokerIP1 {ip:?} is not an IP address"))
            })?,
            None => advertised_ip(&broker_cfg.bind_address),
        };
        let store_host = SocketAddr::new(ip, port);
        let hold = Arc::new(PullHoldService::new());
        let pop = Arc::new(pop::PopService::new(
            config_dir.join("consumerOrderInfo.json"),
        )?);
        let ha_service = Arc::new(ha::HaService::default());
        // The store was opened just above, so no other listener can be set yet.
        let _first = store.set_arriving_listener(Arc::new(ha::Arrivals {
            hold: hold.clone(),
            pop: pop.clone(),
            ha: ha_service.clone(),
        }));
        let is_master = settings.store.broker_role.is_master();
        let ha_listener = if is_master {
            Some(
                ha::master::bind(
                    &broker_cfg.bind_address,
                    settings.store.ha_listen_port,
                    port,
                )
                .await
                .map_err(|e| {
                    BrokerError::Config(format!("cannot listen for slaves (haListenPort): {e}"))
                })?,
            )
        } else {
            None
        };
        let ha_addr = match &ha_listener {
            Some(l) => Some(
                SocketAddr::new(
                    ip,
                    l.local_addr()
                        .map_err(|e| BrokerError::Config(format!("HA listener: {e}")))?
                        .port(),
                )
                .to_string(),
            ),
            None => None,
        };
        let permission = settings.broker.broker_permission;
        if let Some(addr) = &settings.store.ha_master_address {
            ha_service.set_master(Some(addr.clone()), None, false);
        }
        let inner = Arc::new(BrokerInner {
            broker_addr: store_host.to_string(),
            store_host,
            namesrv: RemotingClient::new(
                ClientConfig {
                    credentials: settings.broker.credentials(),
                    tls: client_tls,
                    ..ClientConfig::default()
                },
                None,
                tokio::runtime::Handle::current(),
            ),
            settings,
            store,
            topics,
            offsets,
            consumers: ConsumerManager::new(),
            producers: producer_manager::ProducerManager::default(),
            transactions: transaction::Transactions::default(),
            groups,
            locks,
            hold,
            pop,
            timer: timer::TimerService::default(),
            register_now: Notify::new(),
            ha: ha_service,
            ha_addr,
            stats: stats::BrokerStats::new(),
            boot_ms: now_millis(),
            permission: std::sync::atomic::AtomicI32::new(permission),
            metrics,
            acl: acl.clone(),
        });
        if is_master {
            // Before any request is served: pops must see the checkpoints of the last run.
            let replaying = inner.clone();
            let live = tokio::task::spawn_blocking(move || replaying.pop.replay(&replaying))
                .await
                .map_err(|e| BrokerError::Config(format!("pop replay task failed: {e}")))??;
            if live > 0 {
                tracing::info!(
                    checkpoints = live,
                    "pop checkpoints restored from the revive log"
                );
            }
        }
        let _ = table_slot.set(inner.clone());
        let metrics_server = match registry {
            Some(mut registry) => {
                registry
                    .register_collector(Box::new(metrics::collector::BrokerCollector::new(&inner)));
                registry.register_collector(Box::new(rocketpy_metrics::process::ProcessCollector));
                let addr = exporter.listen_addr(&inner.config().bind_address);
                Some(
                    rocketpy_metrics::MetricsServer::bind(&addr, registry)
                        .await
                        .map_err(|e| {
                            BrokerError::Config(format!(
                                "cannot listen for metrics scrapes on {addr} (metricsPromExporterPort): {e}"
                            ))
                        })?,
                )
            }
            None => None,
        };

        let mut tasks = Vec::new();
        let (ha_stop, ha_stopped) = tokio::sync::watch::channel(false);
        match ha_listener {
            Some(listener) => {
                tokio::spawn(ha::master::serve(
                    inner.clone(),
                    listener,
                    ha_stopped.clone(),
                ));
            }
            None => {
                tokio::spawn(ha::slave::run(inner.clone(), ha_stopped.clone()));
                tasks.push(tokio::spawn(ha::sync::run(inner.clone(), ha_stopped)));
            }
        }
        if let Some(acl) = &acl {
            tasks.push(tokio::spawn(rocketpy_acl::guard::watch(acl.clone())));
        } else if !std::net::IpAddr::from_str(&inner.config().bind_address)
            .is_ok_and(|ip| ip.is_loopback())
        {
            tracing::warn!(bind = %inner.config().bind_address, "ACL is off (aclEnable=false) and the broker listens beyond loopback: anyone who reaches its port can create and delete topics, reset offsets and read every message");
        }
        register::register_all(&inner, true).await;
        tasks.push(tokio::spawn(register::registration_loop(inner.clone())));
        tasks.push(tokio::spawn(transaction::check::check_loop(inner.clone())));
        tasks.push(tokio::spawn(sample_stats(inner.clone())));
        if is_master {
            tasks.push(tokio::spawn(revive_loop(inner.clone())));
            tasks.push(tokio::spawn(timer::timer_loop(inner.clone())));
        }
        let housekeeping = inner.clone();
        tasks.push(tokio::spawn(async move {
            let period = Duration::from_millis(
                housekeeping
                    .config()
                    .flush_consumer_offset_interval
                    .max(100),
            );
            let expiry = Duration::from_millis(housekeeping.config().channel_expired_timeout);
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                if let Err(e) = housekeeping.offsets.persist() {
                    tracing::error!(error = %e, "persisting consumer offsets failed");
                }
                if let Err(e) = housekeeping.pop.order.persist() {
                    tracing::error!(error = %e, "persisting consumerOrderInfo.json failed");
                }
                let tables = housekeeping.clone();
                let persisted = tokio::task::spawn_blocking(move || {
                    (tables.topics.persist(true), tables.groups.persist(true))
                })
                .await;
                if let Ok((topics, groups)) = persisted {
                    if let Err(e) = topics {
                        tracing::error!(error = %e, "writing topics.json failed (changes stay in its journal)");
                    }
                    if let Err(e) = groups {
                        tracing::error!(error = %e, "writing subscriptionGroup.json failed (changes stay in its journal)");
                    }
                }
                housekeeping.producers.scan_expired(expiry);
                for changed in housekeeping.consumers.scan_expired(expiry) {
                    processor::client::notify_consumer_ids_changed(changed);
                }
            }
        }));
        let proxy = start_proxy(&inner, server_tls, &server).await?;
        tracing::info!(addr = %inner.broker_addr, listen = %server.local_addr(), name = %inner.config().broker_name, "broker started");
        Ok(Broker {
            inner,
            server,
            vip_server,
            tasks,
            ha_stop,
            metrics_server,
            proxy,
        })
    }

    /// Where the 5.x clients' gRPC endpoint listens, when `grpcServerPort` is set.
    pub fn grpc_addr(&self) -> Option<SocketAddr> {
        self.proxy.as_ref().map(|p| p.local_addr())
    }

    /// Where the Prometheus endpoint listens, when `metricsExporterType=PROM`.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_server.as_ref().map(|m| m.local_addr())
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// The address advertised to name servers.
    pub fn broker_addr(&self) -> &str {
        &self.inner.broker_addr
    }

    /// Shared state (tests and embedding).
    pub fn inner(&self) -> &Arc<BrokerInner> {
        &self.inner
    }

    /// Unregisters from the name servers, stops serving, persists offsets and topics, and
    /// shuts the store down (flushing it).
    pub async fn shutdown(&self) -> Result<()> {
        for task in &self.tasks {
            task.abort();
        }
        // A task stops at its next await: one in the middle of writing a config file (the
        // housekeeping) finishes that first, so the final writes below come after it.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while self.tasks.iter().any(|t| !t.is_finished()) && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if let Some(m) = &self.metrics_server {
            m.shutdown();
        }
        self.ha_stop.send_replace(true);
        if let Some(p) = &self.proxy {
            p.shutdown().await;
        }
        register::unregister_all(&self.inner).await;
        self.inner.hold.release_all();
        if let Some(vip) = &self.vip_server {
            vip.shutdown().await;
        }
        self.server.shutdown_graceful(Duration::from_secs(5)).await;
        self.inner.namesrv.shutdown();
        self.inner.offsets.persist()?;
        self.inner.pop.order.persist()?;
        self.inner.topics.persist(false)?;
        self.inner.groups.persist(false)?;
        let store = self.inner.store.clone();
        tokio::task::spawn_blocking(move || store.shutdown())
            .await
            .map_err(|e| BrokerError::Config(format!("store shutdown task failed: {e}")))??;
        tracing::info!(addr = %self.inner.broker_addr, "broker stopped");
        Ok(())
    }
}
