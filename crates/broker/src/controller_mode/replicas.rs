//! A broker's life in controller mode (RocketMQ's `ReplicasManager`, docs/controller-design.md
//! §4.1–4.2): start fenced, join the group, learn the role from the controller, then keep
//! following it — heartbeats to every controller, GET_REPLICA_INFO polls, pushed role changes
//! — and, as master, report which replicas are in sync.
//!
//! What must stay true:
//! - Fenced until the first role is known: no writes (the store is a slave's), no name server
//!   registration.
//! - A role change acts only on a master epoch greater than the one this broker knows, so a
//!   late or repeated notification never undoes a newer one.
//! - Becoming master records `(epoch, CommitLog end)` in the epoch file before the first write
//!   of the epoch is accepted: the epoch table always covers the CommitLog, which is what lets
//!   a returning replica find where it and the new master agree.
//! - A deposed master stops taking writes as soon as it learns of the newer epoch.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use rocketpy_store::BrokerRole;
use tokio::sync::{watch, Notify};

use super::client::{Beat, ControllerClient, ReplicaInfo};
use super::config::ControllerModeConfig;
use super::identity::IdentityFile;
use crate::ha::autoswitch::{AutoSwitchMaster, AutoSwitchSlave};
use crate::ha::epoch_file::EpochFile;
use crate::state::BrokerInner;
use rocketpy_remoting::lifecycle::{stopped, Stop};

/// What this broker is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// Not yet told.
    Fenced,
    Master,
    /// Following the master at this broker address.
    Slave {
        master_addr: String,
    },
}

/// Controller mode's state of one broker.
pub struct ReplicasManager {
    config: ControllerModeConfig,
    client: ControllerClient,
    identity: IdentityFile,
    broker_id: AtomicI64,
    master_epoch: AtomicI32,
    sync_state_set: Mutex<(BTreeSet<i64>, i32)>,
    fenced: AtomicBool,
    epochs: Arc<Mutex<EpochFile>>,
    /// Woken by the store listener when the CommitLog grows (the master's HA connections).
    pub grown: Arc<Notify>,
    ha_master: OnceLock<Arc<AutoSwitchMaster>>,
    ha_slave: OnceLock<Arc<AutoSwitchSlave>>,
    role: watch::Sender<Role>,
    /// Serializes role changes (poll, notification, election answer).
    changing: tokio::sync::Mutex<()>,
}

impl ReplicasManager {
    pub fn new(
        config: ControllerModeConfig,
        client: ControllerClient,
        identity: IdentityFile,
        epochs: EpochFile,
    ) -> Self {
        Self {
            config,
            client,
            identity,
            broker_id: AtomicI64::new(-1),
            master_epoch: AtomicI32::new(0),
            sync_state_set: Mutex::new((BTreeSet::new(), 0)),
            fenced: AtomicBool::new(true),
            epochs: Arc::new(Mutex::new(epochs)),
            grown: Arc::new(Notify::new()),
            ha_master: OnceLock::new(),
            ha_slave: OnceLock::new(),
            role: watch::Sender::new(Role::Fenced),
            changing: tokio::sync::Mutex::new(()),
        }
    }

    /// Whether the broker is still waiting for its first role.
    pub fn is_fenced(&self) -> bool {
        self.fenced.load(Ordering::Acquire)
    }

    /// The id to register with name servers: 0 as master, the controller id as slave; `None`
    /// while fenced.
    pub fn registration_id(&self) -> Option<i64> {
        match &*self.role.borrow() {
            Role::Fenced => None,
            Role::Master => Some(0),
            Role::Slave { .. } => Some(self.broker_id.load(Ordering::Acquire)),
        }
    }

    /// The master epoch this broker follows (the name server's state version).
    pub fn master_epoch(&self) -> i32 {
        self.master_epoch.load(Ordering::Acquire)
    }

    /// The controller id (-1 before joining).
    pub fn broker_id(&self) -> i64 {
        self.broker_id.load(Ordering::Acquire)
    }

    /// Role changes, for the HA loops.
    pub fn role(&self) -> watch::Receiver<Role> {
        self.role.subscribe()
    }

    /// The broker address of the master the controller told this slave to follow.
    pub fn followed_master(&self) -> Option<String> {
        match &*self.role.borrow() {
            Role::Slave { master_addr } => Some(master_addr.clone()),
            _ => None,
        }
    }

    /// The epoch table.
    pub fn epochs(&self) -> &Arc<Mutex<EpochFile>> {
        &self.epochs
    }

    /// The master side of replication, once the id is known.
    pub fn ha_master(&self) -> Option<&Arc<AutoSwitchMaster>> {
        self.ha_master.get()
    }

    /// The slave side of replication, once the id is known.
    pub fn ha_slave(&self) -> Option<&Arc<AutoSwitchSlave>> {
        self.ha_slave.get()
    }

    /// Where reads stop: the master's confirm offset, the confirm offset a slave last heard
    /// from its master, nothing while fenced (this store may hold bytes a new master does not
    /// have).
    pub fn read_limit(&self) -> i64 {
        match &*self.role.borrow() {
            Role::Master => self.ha_master.get().map_or(0, |m| m.confirm_offset()),
            Role::Slave { .. } => self.ha_slave.get().map_or(0, |s| s.confirm_offset().max(0)),
            Role::Fenced => 0,
        }
    }

    fn beat(&self, broker: &BrokerInner) -> Beat {
        let max = broker.store.commit_log_range().1;
        let confirm = match (self.ha_master.get(), self.ha_slave.get()) {
            (Some(m), _) if *self.role.borrow() == Role::Master => m.confirm_offset(),
            (_, Some(s)) => s.confirm_offset().max(0),
            _ => max,
        };
        Beat {
            broker_id: self.broker_id(),
            epoch: self.epochs.lock().cache().last_epoch(),
            max_offset: max,
            confirm_offset: confirm,
            timeout_ms: self.config.controller_heart_beat_timeout_mills,
            election_priority: self.config.broker_election_priority,
        }
    }

    /// Applies what the controller says about the group (a poll, a notification, an
    /// election's answer).
    pub async fn apply(&self, broker: &Arc<BrokerInner>, info: &ReplicaInfo) {
        let _changing = self.changing.lock().await;
        let me = self.broker_id();
        let known = self.master_epoch();
        if info.master_epoch < known {
            return;
        }
        if info.master_epoch == known && !self.is_fenced() {
            // Same epoch: only the SyncStateSet may have moved.
            let mut sss = self.sync_state_set.lock();
            if info.sync_state_set_epoch > sss.1 {
                *sss = (info.sync_state_set.clone(), info.sync_state_set_epoch);
                if let Some(m) = self.ha_master.get() {
                    m.set_sync_state_set(info.sync_state_set.clone());
                }
            }
            return;
        }
        match (info.master_broker_id, &info.master_address) {
            (Some(id), _) if id == me => self.become_master(broker, info),
            (Some(_), Some(addr)) => self.become_slave(broker, info, addr.clone()),
            _ => return, // no master yet: the poll asks for an election
        }
        self.master_epoch
            .store(info.master_epoch, Ordering::Release);
        self.fenced.store(false, Ordering::Release);
        broker.register_now.notify_one();
    }

    fn become_master(&self, broker: &Arc<BrokerInner>, info: &ReplicaInfo) {
        let (min, max) = broker.store.commit_log_range();
        let end = {
            let mut epochs = self.epochs.lock();
            // A store that never had an epoch (new, or written before controller mode) counts
            // its bytes as this first epoch's, so that replicas can be sent them.
            let start = if epochs.cache().is_empty() { min } else { max };
            let recorded = epochs
                .update(|cache| cache.truncate_suffix_by_epoch(info.master_epoch))
                .and_then(|_| epochs.append(info.master_epoch, start));
            if let Err(e) = recorded {
                // Without the epoch recorded, a replica could not find where it agrees with
                // this master: stay a slave and let the next poll try again.
                tracing::error!(error = %e, "cannot record the new epoch; not taking the master role");
                return;
            }
            start
        };
        *self.sync_state_set.lock() = (info.sync_state_set.clone(), info.sync_state_set_epoch);
        if let Some(m) = self.ha_master.get() {
            m.set_sync_state_set(info.sync_state_set.clone());
        }
        broker.ha.set_master(None, None, false);
        adopt_stored_topics(broker);
        take_over_services(broker);
        broker.store.set_role(BrokerRole::SyncMaster);
        self.role.send_replace(Role::Master);
        tracing::info!(
            epoch = info.master_epoch,
            start = end,
            "became the group's master"
        );
    }

    fn become_slave(&self, broker: &Arc<BrokerInner>, info: &ReplicaInfo, master_addr: String) {
        // A master's writing services stop at the role (each reads it); their state is read
        // again from the store when this broker is a master next time (take_over_services).
        broker.store.set_role(BrokerRole::Slave);
        // The master's HA address comes with the name server's answer to this slave's
        // registration (registered at once after this change).
        broker.ha.set_master(None, Some(master_addr.clone()), false);
        self.role.send_replace(Role::Slave {
            master_addr: master_addr.clone(),
        });
        tracing::info!(epoch = info.master_epoch, master = %master_addr, "following the group's master");
    }
}

/// A new master knows every topic its store holds messages of: a replica copies the master's
/// topic table only every 10 s (`ha::sync`), so a topic created just before the old master
/// went away would otherwise be missing here — its acknowledged messages unreadable, its route
/// gone from the name servers. Such a topic gets a read-write config with as many queues as
/// the store has for it.
fn adopt_stored_topics(broker: &BrokerInner) {
    let mut queues: std::collections::BTreeMap<String, i32> = Default::default();
    for (topic, queue_id) in broker.store.topic_queues() {
        let n = queues.entry(topic).or_insert(0);
        *n = (*n).max(queue_id + 1);
    }
    for (topic, count) in queues {
        if topic == rocketpy_protocol::topic::SCHEDULE_TOPIC || broker.topics.get(&topic).is_some()
        {
            continue;
        }
        let cfg = rocketpy_protocol::body::TopicConfig::new(topic.clone(), count.max(1));
        match broker.topics.update(cfg) {
            Ok(()) => tracing::info!(%topic, queues = count, "topic known from the store adopted"),
            Err(e) => tracing::error!(%topic, error = %e, "cannot adopt a topic of the store"),
        }
    }
}

/// The writing services a master runs — timer delivery, pop revival, transaction checks,
/// delayed delivery (the store's, by its role) — start from what the store holds, as after a
/// restart: the timer and transaction state are read again, the pop checkpoints replayed from
/// the revive log. Before the role is set, so that no pop or ack meets an empty table.
fn take_over_services(broker: &BrokerInner) {
    broker.timer.restart();
    broker.transactions.forget();
    match broker.pop.replay(broker) {
        Ok(live) => tracing::info!(
            checkpoints = live,
            "pop checkpoints replayed from the revive log"
        ),
        Err(e) => {
            tracing::error!(error = %e, "replaying the revive log failed: popped messages may not come back until they are popped again")
        }
    }
}

/// Joins the group and follows the controller until `stop`.
pub async fn run(manager: Arc<ReplicasManager>, broker: Arc<BrokerInner>, mut stop: Stop) {
    let retry = ControllerModeConfig::period(2_000);
    let broker_id = loop {
        match manager
            .client
            .join(&manager.identity, broker.now_millis())
            .await
        {
            Ok(id) => break id,
            Err(e) => tracing::warn!(error = %e, "joining the controller group failed; retrying"),
        }
        tokio::select! {
            _ = stopped(&mut stop) => return,
            _ = tokio::time::sleep(retry) => {}
        }
    };
    manager.broker_id.store(broker_id, Ordering::Release);
    let clock = broker.clock.clone();
    let _ = manager.ha_master.set(Arc::new(AutoSwitchMaster::new(
        broker.store.clone(),
        manager.epochs.clone(),
        broker_id,
        clock,
        manager.grown.clone(),
    )));
    let _ = manager.ha_slave.set(Arc::new(AutoSwitchSlave::new(
        broker.store.clone(),
        manager.epochs.clone(),
        broker_id,
    )));
    tracing::info!(broker_id, "joined the controller group");
    if let Some(master) = manager.ha_master.get() {
        tokio::spawn(wake_readers(
            master.subscribe(),
            broker.clone(),
            stop.clone(),
        ));
    }
    let heartbeat = ControllerModeConfig::period(manager.config.broker_heartbeat_interval);
    let poll = ControllerModeConfig::period(manager.config.sync_broker_metadata_period);
    let check = ControllerModeConfig::period(manager.config.check_sync_state_set_period);
    let mut registered = false;
    let mut next_poll = tokio::time::Instant::now();
    let mut next_check = tokio::time::Instant::now() + check;
    loop {
        manager.client.heartbeat(&manager.beat(&broker)).await;
        let now = tokio::time::Instant::now();
        if now >= next_poll {
            next_poll = now + poll;
            if !registered {
                registered = manager.client.register(broker_id).await.is_ok();
            }
            follow(&manager, &broker).await;
        }
        if now >= next_check && *manager.role.borrow() == Role::Master {
            next_check = now + check;
            check_sync_state_set(&manager, &broker).await;
        }
        tokio::select! {
            _ = stopped(&mut stop) => return,
            _ = tokio::time::sleep(heartbeat) => {}
        }
    }
}

/// Held pulls and pops look again when replicas acknowledge (the confirm offset moves):
/// messages that arrived while unconfirmed become readable then, not at the hold's timeout.
/// At most one wake-up per few milliseconds, however fast acks come.
async fn wake_readers(mut changes: watch::Receiver<u64>, broker: Arc<BrokerInner>, mut stop: Stop) {
    loop {
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { return },
            _ = stopped(&mut stop) => return,
        }
        broker.hold.wake_all();
        broker.pop.wake_all();
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
}

/// One GET_REPLICA_INFO: adopt a newer master, or ask for an election when there is none.
async fn follow(manager: &Arc<ReplicasManager>, broker: &Arc<BrokerInner>) {
    let info = match manager.client.replica_info().await {
        Ok(info) => info,
        Err(e) => {
            tracing::debug!(error = %e, "GET_REPLICA_INFO failed");
            return;
        }
    };
    if info.master_broker_id.is_none() {
        match manager.client.elect(manager.broker_id()).await {
            Ok(elected) => manager.apply(broker, &elected).await,
            Err(e) => tracing::debug!(error = %e, "election not won"),
        }
        return;
    }
    manager.apply(broker, &info).await;
}

/// The master's check: replicas that caught up join the SyncStateSet, laggards leave it.
async fn check_sync_state_set(manager: &Arc<ReplicasManager>, broker: &Arc<BrokerInner>) {
    let Some(master) = manager.ha_master.get() else {
        return;
    };
    let proposed = master.caught_up_slaves(
        broker.now_millis(),
        manager.config.ha_max_time_slave_not_catchup as i64,
    );
    let (current, epoch) = manager.sync_state_set.lock().clone();
    if proposed == current {
        return;
    }
    match manager
        .client
        .alter_sync_state_set(
            manager.broker_id(),
            manager.master_epoch(),
            &proposed,
            epoch,
        )
        .await
    {
        Ok(new_epoch) => {
            tracing::info!(?proposed, epoch = new_epoch, "SyncStateSet changed");
            *manager.sync_state_set.lock() = (proposed.clone(), new_epoch);
            master.set_sync_state_set(proposed);
        }
        Err(e) => tracing::warn!(error = %e, ?proposed, "SyncStateSet change refused"),
    }
}
