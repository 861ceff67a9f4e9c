//! A running broker: [`Broker::start`] in named phases — open the store, load the tables,
//! open the doors, build the shared state, spawn the services — and [`Broker::shutdown`],
//! which sets the one stop signal, waits for the services, and writes the tables last.

use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::registry::Registry;
use rocketpy_protocol::clock::Clock;
use rocketpy_remoting::{ClientConfig, RemotingClient, RemotingServer, ServerConfig};
use rocketpy_store::MessageStore;

use crate::config::BrokerSettings;
use crate::consumer_manager::ConsumerManager;
use crate::consumer_offset::ConsumerOffsetManager;
use crate::error::{BrokerError, Result};
use crate::listen::{advertised_ip, bind_vip, start_proxy};
use crate::long_polling::PullHoldService;
use crate::state::BrokerInner;
use crate::topic_config::TopicConfigManager;
use crate::{
    ha, housekeeping, metrics, pop, processor, producer_manager, rebalance_lock, register, stats,
    subscription_group, timer, transaction,
};
use rocketpy_remoting::lifecycle::{stopped, Services};

/// A running broker.
pub struct Broker {
    inner: Arc<BrokerInner>,
    server: RemotingServer,
    /// The same requests on listenPort - 2 (see `listen::bind_vip`).
    vip_server: Option<RemotingServer>,
    /// Every background loop, replication included, and the stop signal they select on.
    services: tokio::sync::Mutex<Services>,
    /// The Prometheus endpoint (`metricsExporterType=PROM`).
    metrics_server: Option<rocketpy_metrics::MetricsServer>,
    /// The 5.x clients' gRPC endpoint (`grpcServerPort`).
    proxy: Option<rocketpy_proxy::Proxy>,
}

/// The config tables read from `<storePathRootDir>/config` at start.
struct Tables {
    topics: TopicConfigManager,
    offsets: ConsumerOffsetManager,
    groups: subscription_group::SubscriptionGroupManager,
    pop: pop::PopService,
    filters: Arc<crate::filter::ConsumerFilterManager>,
}

/// Metrics and access control, decided from the config before any port opens.
struct Guards {
    registry: Option<Registry>,
    metrics: Option<metrics::BrokerMetrics>,
    rpc: Option<Arc<rocketpy_metrics::rpc::RpcMetrics>>,
    acl: Option<Arc<rocketpy_acl::Acl>>,
}

/// Phase 1: the store, opened (and recovered) off the I/O threads, with the consumer
/// groups' SQL92 filters computing bit maps at its dispatch.
async fn open_store(
    settings: &BrokerSettings,
    filters: &Arc<crate::filter::ConsumerFilterManager>,
) -> Result<Arc<MessageStore>> {
    let store_config = settings.store.clone();
    let bit_maps = crate::filter::bit_maps_for(settings, filters);
    tokio::task::spawn_blocking(move || match bit_maps {
        Some(calc) => MessageStore::open_with_bit_maps(store_config, calc),
        None => MessageStore::open(store_config),
    })
    .await
    .map_err(|e| BrokerError::Config(format!("store open task failed: {e}")))?
    .map_err(Into::into)
}

/// Phase 2: topics, offsets, subscription groups, FIFO pop holds (and the SQL92 filters, loaded
/// before the store so its recovery computes bit maps).
fn load_tables(
    settings: &BrokerSettings,
    store: &MessageStore,
    filters: Arc<crate::filter::ConsumerFilterManager>,
) -> Result<Tables> {
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
    Ok(Tables {
        topics,
        offsets: ConsumerOffsetManager::load(config_dir.join("consumerOffset.json"))?,
        groups: subscription_group::SubscriptionGroupManager::load(
            config_dir.join("subscriptionGroup.json"),
            settings.broker.auto_create_subscription_group,
        )?,
        pop: pop::PopService::new(config_dir.join("consumerOrderInfo.json"))?,
        filters,
    })
}

/// Phase 3: the Prometheus registry (with RocketMQ 5.x's constant labels of a broker) and
/// the ACL file.
fn guards(settings: &BrokerSettings) -> Result<Guards> {
    let cfg = &settings.broker;
    let exporter = cfg.exporter();
    let mut registry = exporter.prometheus_enabled().then(|| {
        exporter.registry(vec![
            ("cluster", cfg.broker_cluster_name.clone()),
            ("node_type", "broker".into()),
            ("node_id", cfg.broker_name.clone()),
        ])
    });
    let metrics = registry.as_mut().map(metrics::BrokerMetrics::register);
    let rpc = registry
        .as_mut()
        .map(|r| Arc::new(rocketpy_metrics::rpc::RpcMetrics::register(r)));
    let acl = match cfg.acl_enable {
        true => {
            let path = rocketpy_acl::guard::acl_path(
                cfg.acl_file.as_deref(),
                cfg.rocketmq_home.as_deref(),
            );
            let acl = rocketpy_acl::guard::load(&path, rocketpy_acl::Server::Broker)
                .map_err(BrokerError::Config)?;
            tracing::info!(file = %path.display(), "ACL enabled");
            Some(acl)
        }
        false => None,
    };
    Ok(Guards {
        registry,
        metrics,
        rpc,
        acl,
    })
}

impl Broker {
    /// Opens the store (recovering it), loads the config files, listens, and registers with
    /// the name servers, on the system clock. Runs on the current tokio runtime.
    pub async fn start(settings: BrokerSettings) -> Result<Broker> {
        Broker::start_with_clock(settings, Clock::system()).await
    }

    /// [`Broker::start`] on `clock`: a manual clock lets tests move pop invisibility, timer
    /// delivery and transaction checks forward without waiting.
    pub async fn start_with_clock(settings: BrokerSettings, clock: Clock) -> Result<Broker> {
        settings.validate()?;
        // TLS problems (a missing key file, an unknown mode) stop the start before the store
        // opens.
        let server_tls = Arc::new(settings.tls.server().map_err(BrokerError::Config)?);
        let client_tls = settings.tls.client().map_err(BrokerError::Config)?;
        let config_dir = settings.store.store_path_root_dir.join("config");
        let filters = crate::filter::open(&settings.broker, &config_dir, clock.now_millis())?;
        let store = open_store(&settings, &filters).await?;
        let controller_mode = settings.controller.enable_controller_mode;
        let epochs = match controller_mode {
            // Fenced: a slave's store (no writes) until the controller tells the role.
            true => {
                store.set_role(rocketpy_store::BrokerRole::Slave);
                let root = &settings.store.store_path_root_dir;
                Some(ha::epoch_file::EpochFile::open(
                    &settings.controller.epoch_file(root),
                )?)
            }
            false => None,
        };
        let tables = load_tables(&settings, &store, filters)?;
        let mut guards = guards(&settings)?;

        // Phase 4: the doors. Processors reach the state through this slot, filled below
        // before any request is served.
        let cfg = &settings.broker;
        let slot: Arc<std::sync::OnceLock<Arc<BrokerInner>>> = Arc::default();
        let table = || {
            let mut table = processor::processor_table(slot.clone());
            if let Some(rpc) = &guards.rpc {
                table.observe(rpc.clone());
            }
            if let Some(acl) = &guards.acl {
                table.guard(Arc::new(rocketpy_acl::guard::AclGuard::new(acl.clone())));
            }
            table
        };
        let server_config = ServerConfig {
            idle_timeout: Some(Duration::from_secs(
                cfg.client_channel_max_idle_time_seconds.max(1),
            )),
            tls: server_tls.clone(),
            marks: cfg.marks(),
            ..ServerConfig::default()
        };
        let bind = format!("{}:{}", cfg.bind_address, cfg.listen_port);
        let server = RemotingServer::bind(&bind, table(), server_config.clone()).await?;
        let port = server.local_addr().port();
        let vip_server = bind_vip(&cfg.bind_address, port, table(), server_config).await;
        let ip = match &cfg.broker_ip1 {
            Some(ip) => ip.parse::<IpAddr>().map_err(|_| {
                BrokerError::Config(format!("brokerIP1 {ip:?} is not an IP address"))
            })?,
            None => advertised_ip(&cfg.bind_address),
        };
        // In controller mode every replica may become master: its HA port is open from start.
        let ha_listener = match settings.store.broker_role.is_master() || controller_mode {
            true => Some(
                ha::master::bind(&cfg.bind_address, settings.store.ha_listen_port, port)
                    .await
                    .map_err(|e| {
                        BrokerError::Config(format!("cannot listen for slaves (haListenPort): {e}"))
                    })?,
            ),
            false => None,
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

        // Phase 5: the shared state.
        let inner = build_state(
            settings,
            store,
            tables,
            &mut guards,
            SocketAddr::new(ip, port),
            ha_addr,
            client_tls,
            clock,
            epochs,
        );
        if inner.settings.store.broker_role.is_master() {
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
        let _ = slot.set(inner.clone());
        let metrics_server = match guards.registry.take() {
            Some(registry) => Some(serve_metrics(&inner, registry).await?),
            None => None,
        };

        // Phase 6: the services, then the gRPC endpoint.
        let services = spawn_services(&inner, ha_listener, guards.acl.clone()).await;
        let proxy = start_proxy(&inner, server_tls, &server).await?;
        tracing::info!(addr = %inner.broker_addr, listen = %server.local_addr(), name = %inner.config().broker_name, "broker started");
        Ok(Broker {
            inner,
            server,
            vip_server,
            services: tokio::sync::Mutex::new(services),
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

    /// Stops the services (each finishes the round it is in), unregisters from the name
    /// servers, stops serving, persists offsets and topics, and shuts the store down
    /// (flushing it).
    pub async fn shutdown(&self) -> Result<()> {
        self.services
            .lock()
            .await
            .stop(Duration::from_secs(5))
            .await;
        if let Some(m) = &self.metrics_server {
            m.shutdown();
        }
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
        self.inner.filters.save()?;
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

/// Phase 5: [`BrokerInner`] from what the phases before built; the store's arrivals wake
/// held pulls, waiting pops and replication.
#[allow(clippy::too_many_arguments)]
fn build_state(
    settings: BrokerSettings,
    store: Arc<MessageStore>,
    tables: Tables,
    guards: &mut Guards,
    store_host: SocketAddr,
    ha_addr: Option<String>,
    client_tls: Option<rocketpy_remoting::ClientTls>,
    clock: Clock,
    epochs: Option<ha::epoch_file::EpochFile>,
) -> Arc<BrokerInner> {
    let hold = Arc::new(PullHoldService::new());
    let pop = Arc::new(tables.pop);
    let ha_service = Arc::new(ha::HaService::default());
    let namesrv = RemotingClient::new(
        ClientConfig {
            credentials: settings.broker.credentials(),
            tls: client_tls,
            ..ClientConfig::default()
        },
        None,
        tokio::runtime::Handle::current(),
    );
    let replicas = epochs.map(|epochs| {
        let cm = &settings.controller;
        let client = crate::controller_mode::client::ControllerClient::new(
            namesrv.clone(),
            cm.controller_addrs(),
            &settings.broker.broker_cluster_name,
            &settings.broker.broker_name,
            &store_host.to_string(),
        );
        let identity = crate::controller_mode::identity::IdentityFile::new(
            &cm.identity_file(&settings.store.store_path_root_dir),
        );
        Arc::new(crate::controller_mode::replicas::ReplicasManager::new(
            cm.clone(),
            client,
            identity,
            epochs,
        ))
    });
    if let Some(r) = &replicas {
        // Controller mode: consumers read only what every in-sync replica has.
        let manager = Arc::downgrade(r);
        store.set_read_limit(Arc::new(move || {
            manager.upgrade().map_or(0, |m| m.read_limit())
        }));
    }
    // The store was just opened, so no other listener can be set yet.
    let _first = store.set_arriving_listener(Arc::new(ha::Arrivals {
        hold: hold.clone(),
        pop: pop.clone(),
        ha: ha_service.clone(),
        autoswitch: replicas.as_ref().map(|r| r.grown.clone()),
    }));
    if let Some(addr) = &settings.store.ha_master_address {
        ha_service.set_master(Some(addr.clone()), None, false);
    }
    let locks = rebalance_lock::RebalanceLockManager::new(Some(Duration::from_millis(
        settings.broker.rebalance_lock_max_live_time,
    )));
    let permission = settings.broker.broker_permission;
    Arc::new(BrokerInner {
        broker_addr: store_host.to_string(),
        store_host,
        namesrv,
        settings,
        store,
        topics: tables.topics,
        offsets: tables.offsets,
        consumers: ConsumerManager::new(),
        filters: tables.filters,
        producers: producer_manager::ProducerManager::default(),
        transactions: transaction::Transactions::default(),
        groups: tables.groups,
        locks,
        hold,
        pop,
        timer: timer::TimerService::default(),
        register_now: Default::default(),
        ha: ha_service,
        ha_addr,
        stats: stats::BrokerStats::new(),
        boot_ms: clock.now_millis(),
        permission: std::sync::atomic::AtomicI32::new(permission),
        metrics: guards.metrics.take(),
        acl: guards.acl.clone(),
        replicas,
        clock,
    })
}

/// The Prometheus endpoint (`metricsExporterType=PROM`) with the broker's collectors.
async fn serve_metrics(
    inner: &Arc<BrokerInner>,
    mut registry: Registry,
) -> Result<rocketpy_metrics::MetricsServer> {
    registry.register_collector(Box::new(metrics::collector::BrokerCollector::new(inner)));
    registry.register_collector(Box::new(rocketpy_metrics::process::ProcessCollector));
    let addr = inner
        .config()
        .exporter()
        .listen_addr(&inner.config().bind_address);
    rocketpy_metrics::MetricsServer::bind(&addr, registry)
        .await
        .map_err(|e| {
            BrokerError::Config(format!(
                "cannot listen for metrics scrapes on {addr} (metricsPromExporterPort): {e}"
            ))
        })
}

/// Phase 6: replication, the ACL file's watch, registration (the first one before this
/// returns), transaction checks, statistics, and on a master pop revival and timer delivery;
/// all under one stop signal.
async fn spawn_services(
    inner: &Arc<BrokerInner>,
    ha_listener: Option<tokio::net::TcpListener>,
    acl: Option<Arc<rocketpy_acl::Acl>>,
) -> Services {
    let mut services = Services::default();
    let signal = services.stop_signal();
    let stop = || signal.clone();
    match (&inner.replicas, ha_listener) {
        (Some(replicas), listener) => {
            use crate::controller_mode::{ha_loops, replicas as cm};
            services.spawn(cm::run(replicas.clone(), inner.clone(), stop()));
            if let Some(listener) = listener {
                services.spawn(ha_loops::accept(
                    replicas.clone(),
                    inner.clone(),
                    listener,
                    stop(),
                ));
            }
            services.spawn(ha_loops::follow(replicas.clone(), inner.clone(), stop()));
            services.spawn(ha::sync::run(inner.clone(), stop()));
        }
        (None, Some(listener)) => {
            services.spawn(ha::master::serve(inner.clone(), listener, stop()))
        }
        (None, None) => {
            services.spawn(ha::slave::run(inner.clone(), stop()));
            services.spawn(ha::sync::run(inner.clone(), stop()));
        }
    }
    match acl {
        Some(acl) => {
            let mut stop = stop();
            services.spawn(async move {
                tokio::select! {
                    _ = stopped(&mut stop) => {}
                    _ = rocketpy_acl::guard::watch(acl) => {}
                }
            });
        }
        None if !IpAddr::from_str(&inner.config().bind_address)
            .is_ok_and(|ip| ip.is_loopback()) =>
        {
            tracing::warn!(bind = %inner.config().bind_address, "ACL is off (aclEnable=false) and the broker listens beyond loopback: anyone who reaches its port can create and delete topics, reset offsets and read every message");
        }
        None => {}
    }
    register::register_all(inner, true).await;
    services.spawn(register::registration_loop(inner.clone(), stop()));
    services.spawn(transaction::check::check_loop(inner.clone(), stop()));
    services.spawn(housekeeping::sample_stats(inner.clone(), stop()));
    services.spawn(housekeeping::tables(inner.clone(), stop()));
    // Pop revival and timer delivery write messages: each round does nothing unless this
    // broker is a master (in controller mode, whenever it holds the role).
    if inner.settings.store.broker_role.is_master() || inner.replicas.is_some() {
        services.spawn(housekeeping::revive(inner.clone(), stop()));
        services.spawn(timer::deliver::timer_loop(inner.clone(), stop()));
    }
    services
}
