//! Committed consumer offsets (`config/consumerOffset.json`):
//! `{"offsetTable":{"topic@group":{"0":12,"1":5}},"dataVersion":{...}}`. RocketMQ's fastjson
//! writes the queue ids without quotes; both forms are read, standard JSON is written.
//! `dataVersion` is 5.x's (4.x has the table only and skips it); 5.x-shaped readers such as
//! rocketmq-rust's slave sync require it in GET_ALL_CONSUMER_OFFSET's answer.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use parking_lot::RwLock;
use rocketpy_protocol::body::{fastjson, DataVersion};
use rocketpy_protocol::limits::JsonLimits;
use rocketpy_store::StoreError;
use serde::{Deserialize, Serialize};

use crate::config_file;

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct OffsetFile {
    #[serde(default)]
    offset_table: BTreeMap<String, BTreeMap<i32, i64>>,
    #[serde(default)]
    data_version: DataVersion,
}

/// Offsets by `topic@group`, then queue id.
#[derive(Debug)]
pub struct ConsumerOffsetManager {
    path: PathBuf,
    table: RwLock<HashMap<String, HashMap<i32, i64>>>,
    dirty: AtomicBool,
    /// `dataVersion`: changes to the table, and when the last one was made.
    changes: AtomicI64,
    changed_at: AtomicI64,
}

/// `(topic, group, [(queue id, offset)])`: one committed pair's offsets.
pub type GroupOffsets = (String, String, Vec<(i32, i64)>);

fn key(topic: &str, group: &str) -> String {
    format!("{topic}@{group}")
}

impl ConsumerOffsetManager {
    /// Loads `path` (or starts empty).
    pub fn load(path: PathBuf) -> Result<Self, StoreError> {
        let file = config_file::load(&path, |b| {
            fastjson::from_slice_within::<OffsetFile>(b, JsonLimits::TABLE)
                .map_err(|e| e.to_string())
        })?
        .unwrap_or_default();
        let version = file.data_version;
        let table = file
            .offset_table
            .into_iter()
            .map(|(k, v)| (k, v.into_iter().collect()))
            .collect();
        Ok(ConsumerOffsetManager {
            path,
            table: RwLock::new(table),
            dirty: AtomicBool::new(false),
            changes: AtomicI64::new(version.counter),
            changed_at: AtomicI64::new(version.timestamp),
        })
    }

    /// Marks the table changed: to be written, and a new `dataVersion`.
    fn changed(&self) {
        self.dirty.store(true, Ordering::Release);
        self.changes.fetch_add(1, Ordering::Relaxed);
        self.changed_at
            .store(rocketpy_protocol::clock::now_millis(), Ordering::Relaxed);
    }

    /// Records a committed offset.
    pub fn commit(&self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        let mut t = self.table.write();
        let entry = t.entry(key(topic, group)).or_default();
        if entry.insert(queue_id, offset) != Some(offset) {
            self.changed();
        }
    }

    /// The committed offset, if any.
    pub fn query(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        self.table
            .read()
            .get(&key(topic, group))
            .and_then(|q| q.get(&queue_id))
            .copied()
    }

    /// Writes the file if anything changed since the last write.
    pub fn persist(&self) -> Result<(), StoreError> {
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let json = serde_json::to_vec_pretty(&self.file()).map_err(|e| StoreError::Config {
            path: self.path.clone(),
            reason: e.to_string(),
        })?;
        let result = config_file::persist(&self.path, &json);
        if result.is_err() {
            self.dirty.store(true, Ordering::Release);
        }
        result
    }

    /// The table as `consumerOffset.json` holds it (GET_ALL_CONSUMER_OFFSET's answer).
    pub fn to_json(&self) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(&self.file())
    }

    /// The table in the file's shape.
    fn file(&self) -> OffsetFile {
        OffsetFile {
            offset_table: self
                .table
                .read()
                .iter()
                .map(|(k, v)| (k.clone(), v.iter().map(|(q, o)| (*q, *o)).collect()))
                .collect(),
            data_version: DataVersion {
                timestamp: self.changed_at.load(Ordering::Relaxed),
                counter: self.changes.load(Ordering::Relaxed),
                state_version: 0,
            },
        }
    }

    /// Takes a master's table (a slave's metadata sync): its entries replace ours, and entries
    /// only we have — offsets committed to this slave while the master was away — stay.
    pub fn merge_json(&self, body: &[u8]) -> Result<(), String> {
        let file = fastjson::from_slice_within::<OffsetFile>(body, JsonLimits::TABLE)
            .map_err(|e| e.to_string())?;
        let mut t = self.table.write();
        for (k, queues) in file.offset_table {
            let entry = t.entry(k).or_default();
            for (q, o) in queues {
                if entry.insert(q, o) != Some(o) {
                    self.changed();
                }
            }
        }
        Ok(())
    }

    /// Every committed `(topic, group)` pair with its `(queue id, offset)`s (metrics).
    pub fn all(&self) -> Vec<GroupOffsets> {
        self.table
            .read()
            .iter()
            .filter_map(|(k, q)| {
                let (topic, group) = k.split_once('@')?;
                Some((
                    topic.to_owned(),
                    group.to_owned(),
                    q.iter().map(|(id, o)| (*id, *o)).collect(),
                ))
            })
            .collect()
    }

    /// Every `(topic, queue id, offset)` committed by `group`.
    pub fn offsets_of_group(&self, group: &str) -> Vec<(String, i32, i64)> {
        let suffix = format!("@{group}");
        let t = self.table.read();
        let mut out: Vec<_> = t
            .iter()
            .filter_map(|(k, q)| Some((k.strip_suffix(&suffix)?, q)))
            .flat_map(|(topic, q)| q.iter().map(move |(id, o)| (topic.to_owned(), *id, *o)))
            .collect();
        out.sort();
        out
    }

    /// Forgets every offset of `topic` (`Some`) or of `group` (`None` topic) — topic and group
    /// removal.
    pub fn remove(&self, topic: Option<&str>, group: Option<&str>) {
        let mut t = self.table.write();
        let before = t.len();
        t.retain(|k, _| {
            let (kt, kg) = k.split_once('@').unwrap_or((k, ""));
            !(topic.is_none_or(|x| x == kt) && group.is_none_or(|x| x == kg))
        });
        if t.len() != before {
            self.changed();
        }
    }

    /// Groups with an offset for `topic`.
    pub fn groups_of_topic(&self, topic: &str) -> Vec<String> {
        self.table
            .read()
            .keys()
            .filter_map(|k| {
                k.split_once('@')
                    .filter(|(t, _)| *t == topic)
                    .map(|(_, g)| g.to_owned())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_persist_reload_and_java_format() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("consumerOffset.json");
        let m = ConsumerOffsetManager::load(path.clone()).unwrap();
        m.commit("g", "T", 0, 10);
        m.commit("g", "T", 3, 7);
        m.persist().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"T@g\""), "{text}");
        let m = ConsumerOffsetManager::load(path.clone()).unwrap();
        assert_eq!(m.query("g", "T", 3), Some(7));
        assert_eq!(m.query("g", "T", 1), None);

        std::fs::write(
            &path,
            r#"{"offsetTable":{"TopicTest@please_rename_unique_group_name_4":{0:250,1:249}}}"#,
        )
        .unwrap();
        let m = ConsumerOffsetManager::load(path).unwrap();
        assert_eq!(
            m.query("please_rename_unique_group_name_4", "TopicTest", 1),
            Some(249)
        );
    }
}
