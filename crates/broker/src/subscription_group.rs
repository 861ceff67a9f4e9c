//! Subscription groups (`config/subscriptionGroup.json`, changes journaled in
//! `subscriptionGroup.json.journal` between rewrites, as topics are): per consumer group,
//! whether it may consume and how failed messages are retried. Created on first use when
//! `autoCreateSubscriptionGroup` is on, as in RocketMQ.

use std::collections::BTreeMap;
use std::path::PathBuf;

use parking_lot::RwLock;
use rocketpy_protocol::body::{fastjson, DataVersion};
use rocketpy_protocol::limits::JsonLimits;
use rocketpy_store::StoreError;
use serde::{Deserialize, Serialize};

use crate::config_file;
use crate::config_journal::{self, Change, Journal};

/// One group's settings (RocketMQ's `SubscriptionGroupConfig` field names).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionGroupConfig {
    pub group_name: String,
    #[serde(default = "yes")]
    pub consume_enable: bool,
    #[serde(default = "yes")]
    pub consume_from_min_enable: bool,
    #[serde(default = "yes")]
    pub consume_broadcast_enable: bool,
    /// 5.x: the group consumes in order (a 5.x client's FIFO consumption through the proxy).
    #[serde(default)]
    pub consume_message_orderly: bool,
    /// Queues of the group's retry topic.
    #[serde(default = "one")]
    pub retry_queue_nums: i32,
    /// Deliveries before a message goes to the dead-letter topic.
    #[serde(default = "sixteen")]
    pub retry_max_times: i32,
    #[serde(default)]
    pub broker_id: i64,
    #[serde(default = "one_i64")]
    pub which_broker_when_consume_slowly: i64,
    #[serde(default = "yes")]
    pub notify_consumer_ids_changed_enable: bool,
}

fn yes() -> bool {
    true
}
fn one() -> i32 {
    1
}
fn one_i64() -> i64 {
    1
}
fn sixteen() -> i32 {
    16
}

impl SubscriptionGroupConfig {
    /// Defaults for `group`.
    pub fn new(group: &str) -> Self {
        SubscriptionGroupConfig {
            group_name: group.to_owned(),
            consume_enable: true,
            consume_from_min_enable: true,
            consume_broadcast_enable: true,
            consume_message_orderly: false,
            retry_queue_nums: 1,
            retry_max_times: 16,
            broker_id: 0,
            which_broker_when_consume_slowly: 1,
            notify_consumer_ids_changed_enable: true,
        }
    }
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GroupFile {
    #[serde(default)]
    subscription_group_table: BTreeMap<String, SubscriptionGroupConfig>,
    /// 5.x's per-group forbidden topics (group -> topic -> flags). Not enforced here; kept and
    /// always written as 5.x does, because 5.x-shaped readers (rocketmq-rust's slave sync)
    /// require the field, and 4.x readers skip it.
    #[serde(default)]
    forbidden_table: BTreeMap<String, BTreeMap<String, i32>>,
    #[serde(default)]
    data_version: DataVersion,
}

/// The groups known to the broker.
#[derive(Debug)]
pub struct SubscriptionGroupManager {
    path: PathBuf,
    table: RwLock<GroupFile>,
    auto_create: bool,
    /// Changes since the file was last written (see [`crate::config_journal`]).
    journal: Journal,
}

impl SubscriptionGroupManager {
    /// Loads `path` and its journal (or starts empty).
    pub fn load(path: PathBuf, auto_create: bool) -> Result<Self, StoreError> {
        let mut file = config_file::load(&path, |b| {
            fastjson::from_slice_within::<GroupFile>(b, JsonLimits::TABLE)
                .map_err(|e| e.to_string())
        })?
        .unwrap_or_default();
        let (journal, changes, counter) = config_journal::open_changes::<SubscriptionGroupConfig>(
            &path,
            file.data_version.counter,
            "subscription group",
        )?;
        for change in changes {
            match change {
                Change::Put(cfg) => {
                    file.subscription_group_table
                        .insert(cfg.group_name.clone(), cfg);
                }
                Change::Delete(name) => {
                    file.subscription_group_table.remove(&name);
                }
            }
        }
        file.data_version.counter = counter;
        Ok(SubscriptionGroupManager {
            path,
            table: RwLock::new(file),
            auto_create,
            journal,
        })
    }

    /// Subscription groups configured (metrics' `rocketmq_consumer_group_number`).
    pub fn len(&self) -> usize {
        self.table.read().subscription_group_table.len()
    }

    /// Whether no group is configured.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The group's config, created with defaults (and saved) if allowed.
    /// A group's settings, if it exists (never created here).
    pub fn find(&self, group: &str) -> Option<SubscriptionGroupConfig> {
        self.table
            .read()
            .subscription_group_table
            .get(group)
            .cloned()
    }

    /// A group's settings, created with the defaults when missing and
    /// `autoCreateSubscriptionGroup` allows it.
    pub fn find_or_create(&self, group: &str) -> Option<SubscriptionGroupConfig> {
        if let Some(cfg) = self.table.read().subscription_group_table.get(group) {
            return Some(cfg.clone());
        }
        if !self.auto_create {
            return None;
        }
        let cfg = SubscriptionGroupConfig::new(group);
        self.update(cfg.clone());
        Some(cfg)
    }

    /// Adds or replaces a group and makes the change durable: one journal line, whatever the
    /// number of groups (the file follows in the background, [`Self::persist`]).
    pub fn update(&self, cfg: SubscriptionGroupConfig) {
        let entry = serde_json::json!({ "put": &cfg });
        let counter = {
            let mut t = self.table.write();
            t.subscription_group_table
                .insert(cfg.group_name.clone(), cfg);
            t.data_version.counter += 1;
            t.data_version.timestamp = rocketpy_protocol::clock::now_millis();
            t.data_version.counter
        };
        if let Err(e) = self.journal.append(counter, entry) {
            tracing::error!(error = %e, "journaling a subscription group change failed");
        }
    }

    /// Removes a group's settings (DELETE_SUBSCRIPTIONGROUP), durably; false if it had none.
    pub fn delete(&self, group: &str) -> bool {
        let counter = {
            let mut t = self.table.write();
            if t.subscription_group_table.remove(group).is_none() {
                return false;
            }
            t.data_version.counter += 1;
            t.data_version.timestamp = rocketpy_protocol::clock::now_millis();
            t.data_version.counter
        };
        if let Err(e) = self
            .journal
            .append(counter, serde_json::json!({ "delete": group }))
        {
            tracing::error!(error = %e, "journaling a subscription group removal failed");
        }
        true
    }

    /// Takes a master's groups (a slave's metadata sync): new or changed ones are stored.
    pub fn merge_json(&self, body: &[u8]) -> Result<(), String> {
        let file = fastjson::from_slice_within::<GroupFile>(body, JsonLimits::TABLE)
            .map_err(|e| e.to_string())?;
        for (_, cfg) in file.subscription_group_table {
            let same = self
                .table
                .read()
                .subscription_group_table
                .get(&cfg.group_name)
                .is_some_and(|ours| *ours == cfg);
            if !same {
                self.update(cfg);
            }
        }
        Ok(())
    }

    /// Every group as `SubscriptionGroupWrapper` JSON.
    pub fn to_json(&self) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(&*self.table.read())
    }

    /// Writes the file and drops the journal lines it now holds; with `only_if_changed`, only
    /// when groups changed since the last time (housekeeping, off the request path).
    pub fn persist(&self, only_if_changed: bool) -> Result<(), StoreError> {
        self.journal.write_config(&self.path, only_if_changed, || {
            config_journal::versioned_json(&*self.table.read(), |t| t.data_version.counter)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_create_persist_reload() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("subscriptionGroup.json");
        let m = SubscriptionGroupManager::load(path.clone(), true).unwrap();
        let mut cfg = m.find_or_create("g1").unwrap();
        assert_eq!((cfg.retry_max_times, cfg.retry_queue_nums), (16, 1));
        cfg.retry_max_times = 3;
        m.update(cfg);
        drop(m); // a crash: only the journal has the groups
        let m = SubscriptionGroupManager::load(path.clone(), false).unwrap();
        assert_eq!(m.find_or_create("g1").unwrap().retry_max_times, 3);
        assert!(m.find_or_create("other").is_none(), "no auto-create");

        m.persist(true).unwrap();
        assert!(path.exists());
        assert!(!dir.path().join("subscriptionGroup.json.journal").exists());
        let m = SubscriptionGroupManager::load(path, false).unwrap();
        assert_eq!(m.find_or_create("g1").unwrap().retry_max_times, 3);
    }
}
