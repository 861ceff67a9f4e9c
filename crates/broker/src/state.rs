//! The state one broker's processors and services share ([`BrokerInner`]): its tables, its
//! store, its clients and its clock. Built once by `Broker::start` (see `start.rs`).

use std::net::SocketAddr;
use std::sync::Arc;

use rocketpy_protocol::clock::Clock;
use rocketpy_remoting::RemotingClient;
use rocketpy_store::MessageStore;

use crate::config::{BrokerConfig, BrokerSettings};
use crate::consumer_manager::ConsumerManager;
use crate::consumer_offset::ConsumerOffsetManager;
use crate::long_polling::PullHoldService;
use crate::topic_config::TopicConfigManager;
use crate::{
    ha, metrics, pop, producer_manager, rebalance_lock, stats, subscription_group, timer,
    transaction,
};

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
    /// Consumer groups' compiled SQL92 filters.
    pub filters: Arc<crate::filter::ConsumerFilterManager>,
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
    pub register_now: crate::register::RegisterNow,
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
    /// Controller mode's state (`enableControllerMode=true`), else `None`.
    pub replicas: Option<Arc<crate::controller_mode::replicas::ReplicasManager>>,
    /// The broker's time: pop invisibility, timer delivery, transaction checks, expiry and
    /// the times it stamps all read it (a manual clock in tests).
    pub clock: Clock,
}

impl BrokerInner {
    /// Milliseconds since the epoch on the broker's clock.
    pub fn now_millis(&self) -> i64 {
        self.clock.now_millis()
    }

    /// Broker config.
    pub fn config(&self) -> &BrokerConfig {
        &self.settings.broker
    }

    /// The id to register with name servers: `brokerId`, or in controller mode 0 as master
    /// and the controller id as slave; `None` while controller mode has not told the role.
    pub fn registration_id(&self) -> Option<i64> {
        match &self.replicas {
            Some(r) => r.registration_id(),
            None => Some(self.config().broker_id),
        }
    }

    /// The state version registered with name servers (controller mode's master epoch, so a
    /// deposed master's registration loses to the new master's).
    pub fn state_version(&self) -> i64 {
        self.replicas
            .as_ref()
            .map_or(0, |r| i64::from(r.master_epoch()))
    }

    /// The broker's permission now (`brokerPermission`, see [`BrokerInner::permission`]).
    pub fn permission(&self) -> i32 {
        self.permission.load(std::sync::atomic::Ordering::Relaxed)
    }
}
