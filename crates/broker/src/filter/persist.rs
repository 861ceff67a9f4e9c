//! `config/consumerFilter.json` (RocketMQ's `ConsumerFilterManager` file): the SQL92 filters
//! with their bloom bits and lifetimes, so bit maps written before a restart keep ruling
//! messages out after it.
//!
//! On load, as RocketMQ: every filter is dead (its group re-registers by heartbeat, which
//! revives it with the same version); a file whose bloom bits do not fit the current shape
//! (`maxErrorRateOfBloomFilter` or `expectConsumerNumUseFilter` changed) is ignored as a
//! whole, since the bit maps on disk were computed with the old shape; an expression that
//! no longer compiles is dropped and logged.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use rocketpy_filter::bloom::{BloomBits, BloomFilter};
use rocketpy_store::StoreError;
use serde::{Deserialize, Serialize};

use super::manager::{compile, ConsumerFilterManager, FilterData, FilterTable};
use crate::config_file;

/// How long before load a filter without a death time is taken to have died (RocketMQ's
/// 30 s): the messages stored since keep their bits.
const DEAD_AT_LOAD_MS: i64 = 30_000;

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileJson {
    #[serde(default)]
    filter_data_by_topic: BTreeMap<String, TopicJson>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TopicJson {
    #[serde(default)]
    group_filter_data: BTreeMap<String, DataJson>,
    #[serde(default)]
    topic: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DataJson {
    #[serde(default)]
    bloom_filter_data: Option<BloomJson>,
    #[serde(default)]
    born_time: i64,
    #[serde(default)]
    client_version: i64,
    #[serde(default)]
    consumer_group: String,
    /// Written as RocketMQ's getter writes it; read back from the times.
    #[serde(default)]
    dead: bool,
    #[serde(default)]
    dead_time: i64,
    #[serde(default)]
    expression: String,
    #[serde(default)]
    expression_type: String,
    #[serde(default)]
    topic: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BloomJson {
    bit_num: u32,
    #[serde(default)]
    bit_pos: Vec<u32>,
}

impl ConsumerFilterManager {
    /// The filters kept in `path`, loaded as of `now` (see the module documentation), with
    /// bits placed by `bloom` and bit maps computed at dispatch when `calc_bit_map`.
    pub fn open(
        bloom: BloomFilter,
        calc_bit_map: bool,
        path: PathBuf,
        now: i64,
    ) -> Result<Self, StoreError> {
        let mut m = ConsumerFilterManager::new(bloom, calc_bit_map);
        m.load_file(&path, now)?;
        m.file = Some(path);
        Ok(m)
    }

    /// Writes the filters to their file when they changed since the last write (a manager
    /// without a file keeps nothing).
    pub fn save(&self) -> Result<(), StoreError> {
        let Some(path) = &self.file else {
            return Ok(());
        };
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let result = self.persist(path);
        if result.is_err() {
            self.dirty.store(true, Ordering::Release);
        }
        result
    }

    /// Loads `path` (or its `.bak`), as of `now` (see the module documentation).
    pub fn load_file(&self, path: &Path, now: i64) -> Result<(), StoreError> {
        let Some(file) = config_file::load(path, |b| {
            serde_json::from_slice::<FileJson>(b).map_err(|e| e.to_string())
        })?
        else {
            return Ok(());
        };
        let mut table: FilterTable = HashMap::new();
        for (topic, t) in file.filter_data_by_topic {
            for (group, d) in t.group_filter_data {
                let bloom = d.bloom_filter_data.map(|b| BloomBits {
                    positions: b.bit_pos,
                    bit_num: b.bit_num,
                });
                if bloom.as_ref().is_some_and(|b| !self.bloom().is_valid(b)) {
                    tracing::warn!(file = %path.display(), "the bloom filter's shape changed: consumer filters written before are ignored (their bit maps are not used)");
                    return Ok(());
                }
                let filter = match compile(&d.expression_type, &d.expression) {
                    Ok(f) => Arc::new(f),
                    Err(e) => {
                        tracing::error!(file = %path.display(), topic, group, error = %e, "a saved consumer filter does not compile; dropped");
                        continue;
                    }
                };
                let dead_time = if d.dead_time == 0 {
                    d.born_time.max(now - DEAD_AT_LOAD_MS)
                } else {
                    d.dead_time
                };
                let data = FilterData {
                    group: group.clone(),
                    topic: topic.clone(),
                    expression: d.expression,
                    expression_type: d.expression_type,
                    client_version: d.client_version,
                    born_time: d.born_time,
                    dead_time,
                    filter,
                    bloom,
                };
                table
                    .entry(topic.clone())
                    .or_default()
                    .insert(group, Arc::new(data));
            }
        }
        self.replace(table);
        Ok(())
    }

    /// Writes the filters to `path` (the previous file kept as `.bak`).
    pub fn persist(&self, path: &Path) -> Result<(), StoreError> {
        let mut file = FileJson::default();
        for (topic, groups) in self.snapshot() {
            let t = file
                .filter_data_by_topic
                .entry(topic.clone())
                .or_insert_with(|| TopicJson {
                    topic: topic.clone(),
                    ..Default::default()
                });
            for (group, d) in groups {
                t.group_filter_data.insert(
                    group,
                    DataJson {
                        bloom_filter_data: d.bloom.as_ref().map(|b| BloomJson {
                            bit_num: b.bit_num,
                            bit_pos: b.positions.clone(),
                        }),
                        born_time: d.born_time,
                        client_version: d.client_version,
                        consumer_group: d.group.clone(),
                        dead: d.is_dead(),
                        dead_time: d.dead_time,
                        expression: d.expression.clone(),
                        expression_type: d.expression_type.clone(),
                        topic: d.topic.clone(),
                    },
                );
            }
        }
        let json = serde_json::to_vec_pretty(&file).map_err(|e| StoreError::Config {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        config_file::persist(path, &json)
    }
}

#[cfg(test)]
mod tests {
    use rocketpy_filter::bloom::BloomFilter;
    use rocketpy_protocol::subscription::build_typed_subscription;

    use super::*;
    use crate::filter::SQL92;

    #[test]
    fn round_trip_loads_dead_and_revives_by_heartbeat() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("consumerFilter.json");
        let m = ConsumerFilterManager::default();
        let sub = build_typed_subscription("T", "a > 5", Some(SQL92), 7);
        m.register("G", std::slice::from_ref(&sub), 1_000);
        m.persist(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("\"bitPos\"") && text.contains("\"filterDataByTopic\""),
            "{text}"
        );

        let loaded = ConsumerFilterManager::default();
        loaded.load_file(&path, 100_000).unwrap();
        let d = loaded.get("T", "G").expect("loaded");
        assert_eq!((d.born_time, d.client_version), (1_000, 7));
        assert_eq!(d.bloom, m.get("T", "G").unwrap().bloom, "the same bits");
        assert!(
            d.is_dead() && d.dead_time == 70_000,
            "dead since 30 s before the load"
        );
        loaded.register("G", &[sub], 100_001);
        assert!(
            !loaded.get("T", "G").unwrap().is_dead(),
            "the same version revives it"
        );
        assert_eq!(loaded.get("T", "G").unwrap().born_time, 1_000);

        // Another bloom shape: the saved bits mean nothing now.
        let other = ConsumerFilterManager::new(BloomFilter::create(10, 20).unwrap(), true);
        other.load_file(&path, 100_000).unwrap();
        assert!(other.get("T", "G").is_none());
    }
}
