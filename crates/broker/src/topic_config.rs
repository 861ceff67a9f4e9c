//! Topic configurations (`config/topics.json`, changes journaled in
//! `topics.json.journal` between rewrites), system topics, and the auto-creation rules.

use std::collections::HashMap;
use std::path::PathBuf;

use parking_lot::RwLock;
use rocketpy_protocol::body::{fastjson, DataVersion, TopicConfig, TopicConfigSerializeWrapper};
use rocketpy_protocol::flag::perm;
use rocketpy_protocol::limits::JsonLimits;
use rocketpy_protocol::topic::{
    dlq_topic, is_broker_internal_topic, retry_topic, validate_topic, AUTO_CREATE_TOPIC_KEY_TOPIC,
    OFFSET_MOVED_EVENT, SELF_TEST_TOPIC,
};
use rocketpy_store::StoreError;

use crate::config::BrokerConfig;
use crate::config_file;
use crate::config_journal::{self, Change, Journal};
use rocketpy_protocol::clock::now_millis;

/// Whether an admin may not create or delete `topic` (RocketMQ's `TopicValidator`
/// system-topic check, with its broker's additions): the topics the broker writes itself
/// (delays, half messages and their outcomes, timers, pop checkpoints: every `rmq_sys_`
/// topic), the auto-creation template TBW102, and the broker's cluster and broker names and
/// its cluster's reply topic. `BenchmarkTest` and `RMQ_SYS_TRACE_TOPIC`, which RocketMQ's
/// broker creates at start, stay creatable: rocketpy's broker does not make them itself, and
/// its benchmarks and traced clients write to them.
pub fn is_reserved_topic(cfg: &BrokerConfig, topic: &str) -> bool {
    is_broker_internal_topic(topic)
        || topic == AUTO_CREATE_TOPIC_KEY_TOPIC
        || topic == cfg.broker_cluster_name
        || topic == cfg.broker_name
        || topic
            .strip_suffix("_REPLY_TOPIC")
            .is_some_and(|c| c == cfg.broker_cluster_name)
}

/// The part of a topic's config a read checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadView {
    /// PERM_* bits.
    pub perm: i32,
    /// Readable queues.
    pub read_queue_nums: i32,
}

/// Topics known to the broker.
#[derive(Debug)]
pub struct TopicConfigManager {
    path: PathBuf,
    table: RwLock<TopicConfigSerializeWrapper>,
    /// Changes since `topics.json` was last written (see [`crate::config_journal`]).
    journal: Journal,
}

impl TopicConfigManager {
    /// Loads `path` and adds the system topics.
    pub fn load(
        path: PathBuf,
        broker: &BrokerConfig,
        schedule_queues: i32,
    ) -> Result<Self, StoreError> {
        let loaded = config_file::load(&path, |b| {
            fastjson::from_slice_within::<TopicConfigSerializeWrapper>(b, JsonLimits::TABLE)
                .map_err(|e| e.to_string())
        })?
        .unwrap_or_default();
        let mut wrapper = loaded;
        let (journal, changes, counter) = config_journal::open_changes::<TopicConfig>(
            &path,
            wrapper.data_version.counter,
            "topic",
        )?;
        for change in changes {
            match change {
                Change::Put(cfg) => {
                    wrapper
                        .topic_config_table
                        .insert(cfg.topic_name.clone(), cfg);
                }
                Change::Delete(name) => {
                    wrapper.topic_config_table.remove(&name);
                }
            }
        }
        wrapper.data_version.counter = counter;
        // Entries whose name would be an unsafe directory are dropped, not trusted.
        wrapper.topic_config_table.retain(|name, cfg| {
            let ok = validate_topic(name).is_ok() && cfg.topic_name == *name;
            if !ok {
                tracing::warn!(topic = %name, "ignoring invalid topic in topics.json");
            }
            ok
        });
        let mut system = vec![
            TopicConfig::new(SELF_TEST_TOPIC, 1),
            TopicConfig::new(OFFSET_MOVED_EVENT, 1),
            TopicConfig::new(
                rocketpy_protocol::topic::SCHEDULE_TOPIC,
                schedule_queues.max(1),
            ),
        ];
        for name in [&broker.broker_cluster_name, &broker.broker_name] {
            let mut cfg = TopicConfig::new(name.as_str(), 1);
            // RocketMQ's clusterTopicEnable / brokerTopicEnable (both on by default).
            cfg.perm = perm::INHERIT | perm::READ_WRITE;
            system.push(cfg);
        }
        if broker.auto_create_topic_enable {
            let mut tbw =
                TopicConfig::new(AUTO_CREATE_TOPIC_KEY_TOPIC, broker.default_topic_queue_nums);
            tbw.perm = perm::INHERIT | perm::READ_WRITE;
            system.push(tbw);
        }
        for cfg in system {
            wrapper
                .topic_config_table
                .entry(cfg.topic_name.clone())
                .or_insert(cfg);
        }
        if !broker.auto_create_topic_enable {
            wrapper
                .topic_config_table
                .remove(AUTO_CREATE_TOPIC_KEY_TOPIC);
        }
        wrapper.data_version.counter += 1;
        wrapper.data_version.timestamp = now_millis();
        Ok(TopicConfigManager {
            path,
            table: RwLock::new(wrapper),
            journal,
        })
    }

    /// One topic's configuration.
    pub fn get(&self, topic: &str) -> Option<TopicConfig> {
        self.table.read().topic_config_table.get(topic).cloned()
    }

    /// Whether `topic` exists (no copy of its config).
    pub fn exists(&self, topic: &str) -> bool {
        self.table.read().topic_config_table.contains_key(topic)
    }

    /// What a read of `topic` checks, without copying its config (every pop and ack asks).
    pub fn read_view(&self, topic: &str) -> Option<ReadView> {
        self.table
            .read()
            .topic_config_table
            .get(topic)
            .map(|c| ReadView {
                perm: c.perm,
                read_queue_nums: c.read_queue_nums,
            })
    }

    /// A snapshot of all topics and the data version.
    pub fn snapshot(&self) -> TopicConfigSerializeWrapper {
        self.table.read().clone()
    }

    /// The current data version.
    pub fn data_version(&self) -> DataVersion {
        self.table.read().data_version.clone()
    }

    /// Adds or replaces a topic, bumps the data version and makes the change durable (one
    /// journal line, whatever the number of topics; `topics.json` follows in the background,
    /// [`TopicConfigManager::persist`]).
    pub fn update(&self, cfg: TopicConfig) -> Result<(), StoreError> {
        validate_topic(&cfg.topic_name)?;
        let entry = serde_json::json!({ "put": &cfg });
        let counter = {
            let mut t = self.table.write();
            t.topic_config_table.insert(cfg.topic_name.clone(), cfg);
            t.data_version.counter += 1;
            t.data_version.timestamp = now_millis();
            t.data_version.counter
        };
        // Outside the table's lock: sends look topics up while the line is synced.
        self.journal.append(counter, entry)
    }

    /// A new data version with no change to the table: the name servers take the topics again
    /// at the next registration (after the broker's permission changed).
    pub fn bump_version(&self) {
        let mut t = self.table.write();
        t.data_version.counter += 1;
        t.data_version.timestamp = now_millis();
    }

    /// Removes a topic (DELETE_TOPIC_IN_BROKER), durably; false if it did not exist.
    pub fn delete(&self, topic: &str) -> Result<bool, StoreError> {
        let counter = {
            let mut t = self.table.write();
            if t.topic_config_table.remove(topic).is_none() {
                return Ok(false);
            }
            t.data_version.counter += 1;
            t.data_version.timestamp = now_millis();
            t.data_version.counter
        };
        self.journal
            .append(counter, serde_json::json!({ "delete": topic }))?;
        Ok(true)
    }

    /// RocketMQ's `createTopicInSendMessageMethod`: when `topic` is unknown, creates it from
    /// the template `default_topic` (if that template may be inherited) with
    /// `min(client_queue_nums, template queues)` queues. Returns the config and whether it was
    /// created just now.
    pub fn create_in_send(
        &self,
        topic: &str,
        default_topic: &str,
        client_queue_nums: i32,
        auto_create_enabled: bool,
    ) -> Result<Option<(TopicConfig, bool)>, StoreError> {
        if let Some(cfg) = self.get(topic) {
            return Ok(Some((cfg, false)));
        }
        validate_topic(topic)?;
        let Some(template) = self.get(default_topic) else {
            return Ok(None);
        };
        let mut template_perm = template.perm;
        if default_topic == AUTO_CREATE_TOPIC_KEY_TOPIC && !auto_create_enabled {
            template_perm = perm::READ_WRITE;
        }
        if !perm::is_inherited(template_perm) {
            tracing::warn!(
                topic,
                default_topic,
                "template topic may not be inherited; topic not created"
            );
            return Ok(None);
        }
        let queues = client_queue_nums.min(template.write_queue_nums).max(1);
        let mut cfg = TopicConfig::new(topic, queues);
        cfg.perm = template_perm & !perm::INHERIT;
        self.update(cfg.clone())?;
        tracing::info!(topic, queues, "topic auto-created on send");
        Ok(Some((cfg, true)))
    }

    /// The retry topic of consumer group `group`, created with `queues` read-write queues
    /// if it does not exist; returns its config and whether it was created just now.
    pub fn create_retry_topic(
        &self,
        group: &str,
        queues: i32,
    ) -> Result<(TopicConfig, bool), StoreError> {
        self.create_system_topic(&retry_topic(group), queues.max(1), perm::READ_WRITE)
    }

    /// The dead-letter topic of consumer group `group`: one queue, readable and writable, as
    /// RocketMQ creates them since 4.9.4 (and in 5.x; before, write only): operators read dead letters with ordinary pulls — mqadmin, the dashboard, the
    /// console — to inspect and resend them. DLQ topics created write-only stay so.
    pub fn create_dlq_topic(&self, group: &str) -> Result<(TopicConfig, bool), StoreError> {
        self.create_system_topic(&dlq_topic(group), 1, perm::READ_WRITE)
    }

    /// Creates `topic` with `queues` queues and `perm` unless it exists; whether it was
    /// created just now. An existing topic's config is not copied (the pop path asks for the
    /// revive topic on every record it writes).
    pub fn ensure_system_topic(
        &self,
        topic: &str,
        queues: i32,
        perm: i32,
    ) -> Result<bool, StoreError> {
        if self.exists(topic) {
            return Ok(false);
        }
        Ok(self.create_system_topic(topic, queues, perm)?.1)
    }

    /// `topic` as it is, or created with `queues` queues and `perm` if it does not exist;
    /// returns its config and whether it was created just now.
    pub fn create_system_topic(
        &self,
        topic: &str,
        queues: i32,
        perm: i32,
    ) -> Result<(TopicConfig, bool), StoreError> {
        if let Some(cfg) = self.get(topic) {
            return Ok((cfg, false));
        }
        let mut cfg = TopicConfig::new(topic, queues);
        cfg.perm = perm;
        self.update(cfg.clone())?;
        Ok((cfg, true))
    }

    /// Writes `topics.json` and drops the journal lines it now holds; with `only_if_changed`,
    /// only when topics changed since the last time (the broker's housekeeping, off the
    /// request path).
    pub fn persist(&self, only_if_changed: bool) -> Result<(), StoreError> {
        self.journal.write_config(&self.path, only_if_changed, || {
            config_journal::versioned_json(&*self.table.read(), |t| t.data_version.counter)
        })
    }

    /// Number of topics.
    pub fn len(&self) -> usize {
        self.table.read().topic_config_table.len()
    }

    /// Whether there are no topics.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// All configs by name.
    pub fn all(&self) -> HashMap<String, TopicConfig> {
        self.table.read().topic_config_table.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_create_from_template() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("topics.json");
        let broker = BrokerConfig::default();
        let m = TopicConfigManager::load(path.clone(), &broker, 18).unwrap();
        assert_eq!(m.get("TBW102").unwrap().perm, 7);
        let (cfg, created) = m.create_in_send("New", "TBW102", 4, true).unwrap().unwrap();
        assert!(created);
        assert_eq!(
            (cfg.read_queue_nums, cfg.write_queue_nums, cfg.perm),
            (4, 4, 6)
        );
        assert!(m.create_in_send("../x", "TBW102", 4, true).is_err());
        assert!(m
            .create_in_send("Other", "NoTemplate", 4, true)
            .unwrap()
            .is_none());

        let again = TopicConfigManager::load(path, &broker, 18).unwrap();
        assert_eq!(again.get("New").unwrap().write_queue_nums, 4);
    }

    #[test]
    fn changes_survive_through_the_journal_until_topics_json_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("topics.json");
        let journal = dir.path().join("topics.json.journal");
        let broker = BrokerConfig::default();
        let m = TopicConfigManager::load(path.clone(), &broker, 18).unwrap();
        m.persist(false).unwrap();
        assert!(!journal.exists());
        for name in ["A", "B", "C"] {
            m.update(TopicConfig::new(name, 2)).unwrap();
        }
        m.update(TopicConfig::new("B", 5)).unwrap();
        assert!(journal.exists());
        let json = std::fs::read_to_string(&path).unwrap();
        assert!(
            !json.contains("\"A\""),
            "topics.json is written later, not per change"
        );
        let counter = m.data_version().counter;
        drop(m); // a crash: nothing but the journal has the changes

        let m = TopicConfigManager::load(path.clone(), &broker, 18).unwrap();
        assert_eq!(m.get("A").unwrap().write_queue_nums, 2);
        assert_eq!(
            m.get("B").unwrap().write_queue_nums,
            5,
            "the later change wins"
        );
        assert!(m.data_version().counter > counter, "versions never go back");
        m.persist(true).unwrap();
        assert!(
            !journal.exists(),
            "written into topics.json, the journal is dropped"
        );
        let json = std::fs::read_to_string(&path).unwrap();
        assert!(json.contains("\"C\""));
        let again = TopicConfigManager::load(path, &broker, 18).unwrap();
        assert_eq!(again.get("B").unwrap().write_queue_nums, 5);
    }

    #[test]
    fn no_auto_create_without_flag() {
        let dir = tempfile::tempdir().unwrap();
        let broker = BrokerConfig {
            auto_create_topic_enable: false,
            ..Default::default()
        };
        let m = TopicConfigManager::load(dir.path().join("t.json"), &broker, 18).unwrap();
        assert!(m.get("TBW102").is_none());
        assert!(m
            .create_in_send("New", "TBW102", 4, false)
            .unwrap()
            .is_none());
    }
}
