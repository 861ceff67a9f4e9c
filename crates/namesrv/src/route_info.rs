//! The route tables (RocketMQ's `RouteInfoManager`): which brokers are alive, which clusters
//! they form, and which queues each topic has on each broker group.
//!
//! Invariants: a broker address is in `live` iff it is in some `BrokerData.broker_addrs`;
//! a broker name in `brokers` has at least one address; queue data only names known brokers
//! (removed together when the last address of a broker name goes).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use rocketpy_protocol::clock::Clock;

use parking_lot::RwLock;
use rocketpy_protocol::body::{
    BrokerData, ClusterInfo, DataVersion, QueueData, TopicConfig, TopicRouteData,
};
use rocketpy_protocol::flag::perm;

/// A registration, as carried by REGISTER_BROKER.
#[derive(Debug, Clone)]
pub struct Registration {
    pub cluster_name: String,
    pub broker_addr: String,
    pub broker_name: String,
    pub broker_id: i64,
    pub ha_server_addr: String,
    pub data_version: DataVersion,
    /// The broker's topics; `None` when the caller has not read them because the data version
    /// may be unchanged (then [`RegisterResult::needs_topics`] says when they are needed).
    pub topics: Option<Vec<TopicConfig>>,
    /// Id of the connection the registration came on (closing it unregisters the broker).
    pub connection_id: u64,
}

/// What a broker learns back from registering.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegisterResult {
    /// Master's HA address (for slaves).
    pub ha_server_addr: String,
    /// Master's address (for slaves).
    pub master_addr: String,
    /// The registration was not applied: it came without topics, and the master is new or
    /// its data version changed. Register again with them.
    pub needs_topics: bool,
}

#[derive(Debug)]
struct LiveInfo {
    /// ms of the name server's clock.
    last_update: i64,
    data_version: DataVersion,
    connection_id: u64,
    ha_server_addr: String,
}

#[derive(Debug, Default)]
struct Tables {
    /// topic -> broker name -> queues.
    topics: HashMap<String, BTreeMap<String, QueueData>>,
    /// broker name -> addresses.
    brokers: BTreeMap<String, BrokerData>,
    /// cluster -> broker names.
    clusters: BTreeMap<String, BTreeSet<String>>,
    /// broker address -> liveness.
    live: HashMap<String, LiveInfo>,
}

/// The route tables.
#[derive(Debug, Default)]
pub struct RouteInfoManager {
    tables: RwLock<Tables>,
    /// What "silent for" is measured on (a manual clock in tests).
    clock: Clock,
}

impl RouteInfoManager {
    /// Empty tables.
    pub fn new() -> Self {
        Self::default()
    }

    /// Tables whose brokers' silence is measured on `clock`.
    pub fn with_clock(clock: Clock) -> Self {
        RouteInfoManager {
            tables: RwLock::default(),
            clock,
        }
    }

    /// When `broker_addr` last registered (or queried an unchanged data version), in ms of
    /// this name server's clock; None when it is not live.
    pub fn last_heard(&self, broker_addr: &str) -> Option<i64> {
        self.tables
            .read()
            .live
            .get(broker_addr)
            .map(|l| l.last_update)
    }

    /// Records a broker and, for masters, its topics (replacing what it reported before).
    pub fn register_broker(&self, reg: Registration) -> RegisterResult {
        let mut t = self.tables.write();
        if reg.topics.is_none() && reg.broker_id == 0 {
            let known = t
                .brokers
                .get(&reg.broker_name)
                .is_some_and(|b| b.broker_addrs.get(&reg.broker_id) == Some(&reg.broker_addr));
            let same = t
                .live
                .get(&reg.broker_addr)
                .is_some_and(|l| l.data_version == reg.data_version);
            if !(known && same) {
                return RegisterResult {
                    needs_topics: true,
                    ..RegisterResult::default()
                };
            }
        }
        t.clusters
            .entry(reg.cluster_name.clone())
            .or_default()
            .insert(reg.broker_name.clone());
        let data = t
            .brokers
            .entry(reg.broker_name.clone())
            .or_insert_with(|| BrokerData {
                cluster: reg.cluster_name.clone(),
                broker_name: reg.broker_name.clone(),
                broker_addrs: HashMap::new(),
                enable_acting_master: false,
                zone_name: None,
            });
        // The same address under another id means the broker changed role (slave -> master).
        data.broker_addrs
            .retain(|id, addr| !(*addr == reg.broker_addr && *id != reg.broker_id));
        // Another live address under this id with a newer state version (controller mode:
        // the master epoch) wins: a deposed master cannot take id 0 back from the new one
        // (RocketMQ's RouteInfoManager; the rejected address is dropped from the live table).
        if let Some(old) = data.broker_addrs.get(&reg.broker_id).cloned() {
            let newer = t.live.get(&old).is_some_and(|l| {
                old != reg.broker_addr
                    && l.data_version.state_version > reg.data_version.state_version
            });
            if newer {
                tracing::warn!(
                    broker = %reg.broker_name, id = reg.broker_id, kept = %old,
                    refused = %reg.broker_addr,
                    "registration refused: another broker holds this id with a newer state version"
                );
                t.live.remove(&reg.broker_addr);
                return RegisterResult::default();
            }
        }
        let data = t.brokers.get_mut(&reg.broker_name).expect("inserted above");
        let first = data
            .broker_addrs
            .insert(reg.broker_id, reg.broker_addr.clone())
            .is_none();
        let changed = t
            .live
            .get(&reg.broker_addr)
            .map(|l| l.data_version != reg.data_version)
            .unwrap_or(true);
        let topics = reg.topics.as_deref().unwrap_or_default();
        if reg.broker_id == 0 && (first || changed) {
            let names: BTreeSet<&str> = topics.iter().map(|c| c.topic_name.as_str()).collect();
            for (topic, per_broker) in t.topics.iter_mut() {
                if !names.contains(topic.as_str()) {
                    per_broker.remove(&reg.broker_name);
                }
            }
            t.topics.retain(|_, per_broker| !per_broker.is_empty());
            for cfg in topics {
                t.topics.entry(cfg.topic_name.clone()).or_default().insert(
                    reg.broker_name.clone(),
                    QueueData {
                        broker_name: reg.broker_name.clone(),
                        read_queue_nums: cfg.read_queue_nums,
                        write_queue_nums: cfg.write_queue_nums,
                        perm: cfg.perm,
                        topic_sys_flag: cfg.topic_sys_flag,
                    },
                );
            }
        }
        if first {
            tracing::info!(broker = %reg.broker_name, addr = %reg.broker_addr, id = reg.broker_id, cluster = %reg.cluster_name, "broker registered");
        }
        t.live.insert(
            reg.broker_addr.clone(),
            LiveInfo {
                last_update: self.clock.now_millis(),
                data_version: reg.data_version,
                connection_id: reg.connection_id,
                ha_server_addr: reg.ha_server_addr,
            },
        );
        let mut result = RegisterResult::default();
        if reg.broker_id != 0 {
            if let Some(master) = t
                .brokers
                .get(&reg.broker_name)
                .and_then(|b| b.master_addr())
            {
                result.master_addr = master.to_owned();
                if let Some(live) = t.live.get(master) {
                    result.ha_server_addr = live.ha_server_addr.clone();
                }
            }
        }
        result
    }

    /// QUERY_DATA_VERSION: whether `version` differs from what `broker_addr` last registered
    /// (true when the broker is unknown), and the version this name server holds. An unchanged
    /// answer counts as a heartbeat: a broker with `forceRegister=false` stays alive by
    /// querying and registers only when this says changed.
    pub fn query_data_version(
        &self,
        broker_addr: &str,
        version: &DataVersion,
    ) -> (bool, Option<DataVersion>) {
        let mut t = self.tables.write();
        match t.live.get_mut(broker_addr) {
            Some(live) => {
                let changed = live.data_version != *version;
                if !changed {
                    live.last_update = self.clock.now_millis();
                }
                (changed, Some(live.data_version.clone()))
            }
            None => (true, None),
        }
    }

    /// Removes one broker address (UNREGISTER_BROKER, a closed channel, or expiry).
    pub fn unregister_broker(&self, broker_addr: &str) {
        let mut t = self.tables.write();
        Self::remove_addr(&mut t, broker_addr);
    }

    fn remove_addr(t: &mut Tables, broker_addr: &str) {
        t.live.remove(broker_addr);
        let mut emptied = Vec::new();
        for (name, data) in t.brokers.iter_mut() {
            let before = data.broker_addrs.len();
            data.broker_addrs.retain(|_, addr| addr != broker_addr);
            if data.broker_addrs.len() != before {
                tracing::info!(broker = %name, addr = broker_addr, "broker address removed");
            }
            if data.broker_addrs.is_empty() {
                emptied.push((name.clone(), data.cluster.clone()));
            }
        }
        for (name, cluster) in emptied {
            t.brokers.remove(&name);
            if let Some(names) = t.clusters.get_mut(&cluster) {
                names.remove(&name);
                if names.is_empty() {
                    t.clusters.remove(&cluster);
                }
            }
            for per_broker in t.topics.values_mut() {
                per_broker.remove(&name);
            }
            t.topics.retain(|_, per_broker| !per_broker.is_empty());
        }
    }

    /// Removes the broker registered over connection `connection_id`, if any.
    pub fn on_connection_closed(&self, connection_id: u64) {
        let mut t = self.tables.write();
        let addrs: Vec<String> = t
            .live
            .iter()
            .filter(|(_, l)| l.connection_id == connection_id)
            .map(|(a, _)| a.clone())
            .collect();
        for addr in addrs {
            tracing::info!(addr = %addr, "broker connection closed; removing it");
            Self::remove_addr(&mut t, &addr);
        }
    }

    /// Removes brokers silent for longer than `expiry`; returns their addresses.
    pub fn scan_not_active(&self, expiry: Duration) -> Vec<String> {
        let now = self.clock.now_millis();
        let mut t = self.tables.write();
        let dead: Vec<String> = t
            .live
            .iter()
            .filter(|(_, l)| now.saturating_sub(l.last_update) > expiry.as_millis() as i64)
            .map(|(a, _)| a.clone())
            .collect();
        for addr in &dead {
            tracing::warn!(addr = %addr, ?expiry, "broker expired: no registration within the expiry");
            Self::remove_addr(&mut t, addr);
        }
        dead
    }

    /// The route of `topic`, if any live broker has it.
    pub fn topic_route(&self, topic: &str) -> Option<TopicRouteData> {
        let t = self.tables.read();
        let per_broker = t.topics.get(topic)?;
        let queue_datas: Vec<QueueData> = per_broker.values().cloned().collect();
        let broker_datas: Vec<BrokerData> = per_broker
            .keys()
            .filter_map(|name| t.brokers.get(name).cloned())
            .collect();
        if queue_datas.is_empty() || broker_datas.is_empty() {
            return None;
        }
        Some(TopicRouteData {
            order_topic_conf: None,
            queue_datas,
            broker_datas,
            filter_server_table: HashMap::new(),
        })
    }

    /// Clusters and brokers.
    pub fn cluster_info(&self) -> ClusterInfo {
        let t = self.tables.read();
        ClusterInfo {
            broker_addr_table: t.brokers.clone(),
            cluster_addr_table: t.clusters.clone(),
        }
    }

    /// Every topic known.
    pub fn topic_list(&self) -> Vec<String> {
        let mut topics: Vec<String> = self.tables.read().topics.keys().cloned().collect();
        topics.sort();
        topics
    }

    /// Addresses of live brokers.
    pub fn live_brokers(&self) -> Vec<String> {
        let mut addrs: Vec<String> = self.tables.read().live.keys().cloned().collect();
        addrs.sort();
        addrs
    }

    /// WIPE_WRITE_PERM_OF_BROKER (`add` false) and ADD_WRITE_PERM_OF_BROKER (`add` true):
    /// takes the write permission from, or gives read and write back to, every topic's queues
    /// on `broker_name`, as RocketMQ's `operateWritePermOfBroker` does. Returns how many topics
    /// that touched. Lasts until the broker registers a changed topic table.
    pub fn set_write_perm(&self, broker_name: &str, add: bool) -> i32 {
        let mut t = self.tables.write();
        let mut count = 0;
        for per_broker in t.topics.values_mut() {
            if let Some(qd) = per_broker.get_mut(broker_name) {
                qd.perm = if add {
                    perm::READ | perm::WRITE
                } else {
                    qd.perm & !perm::WRITE
                };
                count += 1;
            }
        }
        count
    }

    /// DELETE_TOPIC_IN_NAMESRV: forgets `topic`'s route (only on `cluster`'s brokers when
    /// given).
    pub fn delete_topic(&self, topic: &str, cluster: Option<&str>) {
        let mut t = self.tables.write();
        let Some(cluster) = cluster else {
            t.topics.remove(topic);
            return;
        };
        let names = t.clusters.get(cluster).cloned().unwrap_or_default();
        if let Some(per_broker) = t.topics.get_mut(topic) {
            per_broker.retain(|name, _| !names.contains(name));
            if per_broker.is_empty() {
                t.topics.remove(topic);
            }
        }
    }

    /// GET_TOPICS_BY_CLUSTER: topics with queues on a broker of `cluster`, sorted.
    pub fn topics_of_cluster(&self, cluster: &str) -> Vec<String> {
        let t = self.tables.read();
        let Some(names) = t.clusters.get(cluster) else {
            return Vec::new();
        };
        let mut topics: Vec<String> = t
            .topics
            .iter()
            .filter(|(_, per_broker)| per_broker.keys().any(|b| names.contains(b)))
            .map(|(topic, _)| topic.clone())
            .collect();
        topics.sort();
        topics
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(
        name: &str,
        addr: &str,
        id: i64,
        topics: &[&str],
        conn: u64,
        counter: i64,
    ) -> Registration {
        Registration {
            cluster_name: "C".into(),
            broker_addr: addr.into(),
            broker_name: name.into(),
            broker_id: id,
            ha_server_addr: format!("{addr}-ha"),
            data_version: DataVersion {
                timestamp: 1,
                counter,
                ..DataVersion::default()
            },
            topics: Some(topics.iter().map(|t| TopicConfig::new(*t, 4)).collect()),
            connection_id: conn,
        }
    }

    #[test]
    fn a_deposed_master_cannot_take_id_0_back_from_a_newer_epoch() {
        let m = RouteInfoManager::new();
        let with_epoch = |addr: &str, epoch: i64| {
            let mut r = reg("b", addr, 0, &["T"], 1, 1);
            r.data_version.state_version = epoch;
            r
        };
        m.register_broker(with_epoch("10.0.0.1:10911", 1));
        // The controller elected the replica: it registers as master with epoch 2.
        m.register_broker(with_epoch("10.0.0.2:10911", 2));
        let master = |m: &RouteInfoManager| m.tables.read().brokers["b"].broker_addrs[&0].clone();
        assert_eq!(master(&m), "10.0.0.2:10911");
        // The old master, still running with epoch 1, registers again: refused, and no
        // longer live.
        assert_eq!(
            m.register_broker(with_epoch("10.0.0.1:10911", 1)),
            RegisterResult::default()
        );
        assert_eq!(master(&m), "10.0.0.2:10911");
        assert!(m.last_heard("10.0.0.1:10911").is_none());
        // Once it learned the newer epoch (as a slave it registers under its own id), or a
        // later epoch, it is taken.
        m.register_broker(with_epoch("10.0.0.1:10911", 3));
        assert_eq!(master(&m), "10.0.0.1:10911");
    }

    #[test]
    fn registration_without_topics_applies_only_to_a_known_unchanged_master() {
        let m = RouteInfoManager::new();
        let bare = |counter| Registration {
            topics: None,
            ..reg("a", "h1:1", 0, &[], 1, counter)
        };
        assert!(bare(1).needs_topics_of(&m), "a new master");
        assert!(m.topic_list().is_empty(), "nothing applied");
        m.register_broker(reg("a", "h1:1", 0, &["T1"], 1, 1));
        let r = m.register_broker(bare(1));
        assert!(!r.needs_topics, "same version: applied");
        assert_eq!(m.topic_list(), vec!["T1"], "topics kept");
        assert!(bare(2).needs_topics_of(&m), "changed version");
        assert_eq!(m.topic_list(), vec!["T1"]);
        m.unregister_broker("h1:1");
        assert!(bare(1).needs_topics_of(&m), "gone, then back");
        let slave = Registration {
            topics: None,
            ..reg("a", "h3:1", 1, &[], 3, 1)
        };
        assert!(
            !m.register_broker(slave).needs_topics,
            "slaves' topics are not used"
        );
    }

    #[test]
    fn an_unchanged_data_version_query_keeps_the_broker_alive() {
        let clock = Clock::manual(0);
        let m = RouteInfoManager::with_clock(clock.clone());
        let v = |counter| DataVersion {
            timestamp: 1,
            counter,
            ..DataVersion::default()
        };
        assert_eq!(m.query_data_version("h1:1", &v(1)), (true, None), "unknown");
        m.register_broker(reg("a", "h1:1", 0, &["T1"], 1, 1));
        assert_eq!(m.query_data_version("h1:1", &v(2)), (true, Some(v(1))));
        clock.advance(30);
        assert_eq!(m.query_data_version("h1:1", &v(1)), (false, Some(v(1))));
        assert!(
            m.scan_not_active(Duration::from_millis(20)).is_empty(),
            "the unchanged query refreshed the broker"
        );
        clock.advance(30);
        m.query_data_version("h1:1", &v(2));
        assert_eq!(
            m.scan_not_active(Duration::from_millis(20)),
            vec!["h1:1"],
            "a changed answer is not a heartbeat: the broker must register"
        );
    }

    impl Registration {
        fn needs_topics_of(self, m: &RouteInfoManager) -> bool {
            m.register_broker(self).needs_topics
        }
    }

    #[test]
    fn register_route_and_remove() {
        let m = RouteInfoManager::new();
        m.register_broker(reg("a", "h1:1", 0, &["T1", "T2"], 1, 1));
        m.register_broker(reg("b", "h2:1", 0, &["T1"], 2, 1));
        let slave = m.register_broker(reg("a", "h3:1", 1, &[], 3, 1));
        assert_eq!(slave.master_addr, "h1:1");
        assert_eq!(slave.ha_server_addr, "h1:1-ha");

        let route = m.topic_route("T1").unwrap();
        assert_eq!(route.queue_datas.len(), 2);
        assert_eq!(route.broker_datas.len(), 2);
        assert!(m.topic_route("nope").is_none());
        assert_eq!(m.topic_list(), vec!["T1", "T2"]);

        // A master re-registering without T2 drops it.
        m.register_broker(reg("a", "h1:1", 0, &["T1"], 1, 2));
        assert!(m.topic_route("T2").is_none());

        m.on_connection_closed(2);
        assert_eq!(m.topic_route("T1").unwrap().broker_datas.len(), 1);
        m.unregister_broker("h1:1");
        // Broker "a" still has its slave, so its queues stay.
        assert!(m.topic_route("T1").is_some());
        m.unregister_broker("h3:1");
        assert!(m.topic_route("T1").is_none());
        assert!(m.cluster_info().cluster_addr_table.is_empty());
    }

    #[test]
    fn expiry() {
        let clock = Clock::manual(1_000);
        let m = RouteInfoManager::with_clock(clock.clone());
        m.register_broker(reg("a", "h1:1", 0, &["T"], 1, 1));
        assert_eq!(m.last_heard("h1:1"), Some(1_000));
        clock.advance(60_000);
        assert!(
            m.scan_not_active(Duration::from_secs(60)).is_empty(),
            "60 s: not over"
        );
        clock.advance(1);
        assert_eq!(
            m.scan_not_active(Duration::from_secs(60)),
            vec!["h1:1".to_string()]
        );
        assert!(m.topic_route("T").is_none());
    }
}
