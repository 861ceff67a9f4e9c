//! FIFO pops (RocketMQ 5.x's `ConsumerOrderInfoManager`): a queue popped in order is held for
//! its group until every message of the last pop is acked or visible again; then the
//! un-acked ones are popped again, in order, each with its delivery count one higher. The
//! group's offset stays at the first un-acked message, so nothing is skipped, and nothing is
//! revived: redelivery is reading the queue again.
//!
//! The table is kept in `config/consumerOrderInfo.json` (RocketMQ's file name and field
//! names), written by the broker's housekeeping; a broker restarted without it still
//! redelivers from the group's offset, only with the counts and invisible times reset.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::config_file;
use rocketpy_store::StoreError;

/// What the broker remembers of the last FIFO pop of one queue by one group.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderInfo {
    /// When the last pop took the messages (ms).
    #[serde(rename = "popTime")]
    pub pop_time: i64,
    /// Its invisible time (ms).
    #[serde(rename = "i")]
    pub invisible_time: i64,
    /// Offsets popped: the first as is, the others as differences from the first.
    #[serde(rename = "o")]
    offsets_stored: Vec<i64>,
    /// Offsets whose invisible time was changed: offset -> when visible again (ms).
    #[serde(rename = "ot", default)]
    pub next_visible: BTreeMap<i64, i64>,
    /// How often each offset was delivered before this pop.
    #[serde(rename = "oc", default)]
    pub counts: BTreeMap<i64, i32>,
    /// When the last pop happened (ms).
    #[serde(rename = "l", default)]
    pub last_consume: i64,
    /// Acked offsets: bit i for offsets\[i\].
    #[serde(rename = "cm", default)]
    pub acked: u64,
    /// The receive attempt that popped them.
    #[serde(rename = "a", default, skip_serializing_if = "Option::is_none")]
    pub attempt_id: Option<String>,
}

impl OrderInfo {
    /// The popped offsets, in order.
    pub fn offsets(&self) -> Vec<i64> {
        let Some(&first) = self.offsets_stored.first() else {
            return Vec::new();
        };
        std::iter::once(first)
            .chain(self.offsets_stored[1..].iter().map(|d| first + d))
            .collect()
    }

    fn set_offsets(&mut self, offsets: &[i64]) {
        self.offsets_stored = match offsets.first() {
            Some(&first) => std::iter::once(first)
                .chain(offsets[1..].iter().map(|o| o - first))
                .collect(),
            None => Vec::new(),
        };
    }

    /// Whether the queue is held: some popped message is neither acked nor visible again.
    /// A receive retried with the same attempt id is not held (it gets the same messages).
    fn blocks(&self, attempt_id: Option<&str>, now: i64) -> bool {
        if self.offsets_stored.is_empty()
            || (attempt_id.is_some() && attempt_id == self.attempt_id.as_deref())
        {
            return false;
        }
        self.offsets()
            .iter()
            .enumerate()
            .filter(|(i, _)| self.acked & (1 << i) == 0)
            .any(|(_, o)| {
                let visible_at = self
                    .next_visible
                    .get(o)
                    .copied()
                    .unwrap_or(self.pop_time + self.invisible_time);
                visible_at > now
            })
    }

    /// The first un-acked offset, or one past the last when all are acked.
    fn next_offset(&self) -> i64 {
        let offsets = self.offsets();
        offsets
            .iter()
            .enumerate()
            .find(|(i, _)| self.acked & (1 << i) == 0)
            .map(|(_, o)| *o)
            .unwrap_or_else(|| offsets.last().map_or(0, |o| o + 1))
    }
}

/// The outcome of an ordered ack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderAck {
    /// Recorded; the group's offset moves to this one.
    Commit(i64),
    /// The pop time is not the last pop's (an ack of an older delivery): nothing changes.
    Stale,
    /// The offset was not popped.
    Unknown,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct OrderFile {
    /// `topic@group` -> queue id -> info.
    table: HashMap<String, BTreeMap<i32, OrderInfo>>,
}

/// The FIFO pop state of every (topic, group, queue).
#[derive(Debug)]
pub struct OrderTable {
    path: PathBuf,
    table: Mutex<HashMap<String, BTreeMap<i32, OrderInfo>>>,
    dirty: AtomicBool,
}

fn key(topic: &str, group: &str) -> String {
    format!("{topic}@{group}")
}

impl OrderTable {
    /// Loads `path` (or starts empty).
    pub fn load(path: PathBuf) -> Result<Self, StoreError> {
        let file = config_file::load(&path, |b| {
            serde_json::from_slice::<OrderFile>(b).map_err(|e| e.to_string())
        })?
        .unwrap_or_default();
        Ok(OrderTable {
            path,
            table: Mutex::new(file.table),
            dirty: AtomicBool::new(false),
        })
    }

    /// Whether a FIFO pop must skip this queue now.
    pub fn blocks(
        &self,
        topic: &str,
        group: &str,
        queue_id: i32,
        attempt_id: Option<&str>,
        now: i64,
    ) -> bool {
        self.table
            .lock()
            .get(&key(topic, group))
            .and_then(|q| q.get(&queue_id))
            .is_some_and(|info| info.blocks(attempt_id, now))
    }

    /// Records a FIFO pop of `offsets`; returns each offset's earlier delivery count.
    pub fn popped(
        &self,
        (topic, group, queue_id): (&str, &str, i32),
        offsets: &[i64],
        (pop_time, invisible_time): (i64, i64),
        attempt_id: Option<&str>,
    ) -> Vec<i32> {
        let mut table = self.table.lock();
        let queues = table.entry(key(topic, group)).or_default();
        let previous = queues.remove(&queue_id).unwrap_or_default();
        let same_attempt = attempt_id.is_some() && attempt_id == previous.attempt_id.as_deref();
        let earlier = previous.offsets();
        let mut info = OrderInfo {
            pop_time,
            invisible_time,
            last_consume: pop_time,
            attempt_id: attempt_id.map(str::to_owned),
            ..OrderInfo::default()
        };
        info.set_offsets(offsets);
        let counts: Vec<i32> = offsets
            .iter()
            .map(|o| {
                let before = previous.counts.get(o).copied().unwrap_or(0);
                if same_attempt || !earlier.contains(o) {
                    before
                } else {
                    before + 1
                }
            })
            .collect();
        for (o, c) in offsets.iter().zip(&counts) {
            if *c > 0 {
                info.counts.insert(*o, *c);
            }
        }
        queues.insert(queue_id, info);
        self.dirty.store(true, Ordering::Release);
        counts
    }

    /// An ack of `offset` from the pop at `pop_time`.
    pub fn ack(
        &self,
        topic: &str,
        group: &str,
        queue_id: i32,
        offset: i64,
        pop_time: i64,
    ) -> OrderAck {
        let mut table = self.table.lock();
        let Some(info) = table
            .get_mut(&key(topic, group))
            .and_then(|q| q.get_mut(&queue_id))
        else {
            return OrderAck::Unknown;
        };
        if info.pop_time != pop_time {
            return OrderAck::Stale;
        }
        let Some(i) = info.offsets().iter().position(|o| *o == offset) else {
            return OrderAck::Unknown;
        };
        info.acked |= 1 << i;
        self.dirty.store(true, Ordering::Release);
        OrderAck::Commit(info.next_offset())
    }

    /// Makes `offset` visible again at `now + invisible_time`; returns the pop time and the
    /// invisible time (from it) its new POP_CK carries, or None when the pop is not the last.
    pub fn change_invisible(
        &self,
        (topic, group, queue_id): (&str, &str, i32),
        offset: i64,
        pop_time: i64,
        visible_at: i64,
    ) -> Option<(i64, i64)> {
        let mut table = self.table.lock();
        let info = table
            .get_mut(&key(topic, group))
            .and_then(|q| q.get_mut(&queue_id))?;
        if info.pop_time != pop_time || !info.offsets().contains(&offset) {
            return None;
        }
        info.next_visible.insert(offset, visible_at);
        self.dirty.store(true, Ordering::Release);
        Some((info.pop_time, visible_at - info.pop_time))
    }

    /// Forgets a group's or a topic's state (deleted).
    pub fn remove(&self, topic: Option<&str>, group: Option<&str>) {
        self.table.lock().retain(|k, _| {
            let (t, g) = k.split_once('@').unwrap_or((k, ""));
            !(topic.is_none_or(|x| x == t) && group.is_none_or(|x| x == g))
        });
        self.dirty.store(true, Ordering::Release);
    }

    /// Writes the file if anything changed.
    pub fn persist(&self) -> Result<(), StoreError> {
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let file = OrderFile {
            table: self.table.lock().clone(),
        };
        let json = serde_json::to_vec(&file).map_err(|e| StoreError::Config {
            path: self.path.clone(),
            reason: e.to_string(),
        })?;
        let result = config_file::persist(&self.path, &json);
        if result.is_err() {
            self.dirty.store(true, Ordering::Release);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> (tempfile::TempDir, OrderTable) {
        let dir = tempfile::tempdir().unwrap();
        let t = OrderTable::load(dir.path().join("consumerOrderInfo.json")).unwrap();
        (dir, t)
    }

    #[test]
    fn a_queue_is_held_until_acked_or_visible_and_counts_grow() {
        let (_dir, t) = table();
        let q = ("T", "g", 0);
        assert!(!t.blocks("T", "g", 0, None, 1000));
        assert_eq!(
            t.popped(q, &[5, 6, 7], (1000, 100), Some("a1")),
            vec![0, 0, 0]
        );
        assert!(t.blocks("T", "g", 0, None, 1050), "invisible, un-acked");
        assert!(
            !t.blocks("T", "g", 0, Some("a1"), 1050),
            "the same attempt again"
        );
        assert!(!t.blocks("T", "g", 0, None, 1100), "visible again");
        assert_eq!(t.ack("T", "g", 0, 5, 1000), OrderAck::Commit(6));
        assert_eq!(t.ack("T", "g", 0, 5, 999), OrderAck::Stale);
        assert_eq!(t.ack("T", "g", 0, 42, 1000), OrderAck::Unknown);
        // Popped again from the first un-acked: their counts go up.
        assert_eq!(
            t.popped(q, &[6, 7, 8], (1200, 100), Some("a2")),
            vec![1, 1, 0]
        );
        assert_eq!(
            t.popped(q, &[6, 7, 8], (1210, 100), Some("a2")),
            vec![1, 1, 0],
            "retried attempt"
        );
        assert_eq!(t.change_invisible(q, 7, 1210, 5000), Some((1210, 3790)));
        assert_eq!(t.ack("T", "g", 0, 6, 1210), OrderAck::Commit(7));
        assert_eq!(t.ack("T", "g", 0, 8, 1210), OrderAck::Commit(7));
        assert!(
            t.blocks("T", "g", 0, None, 4000),
            "7 is invisible until 5000"
        );
        assert_eq!(t.ack("T", "g", 0, 7, 1210), OrderAck::Commit(9));
        assert!(!t.blocks("T", "g", 0, None, 4000));
    }

    #[test]
    fn the_table_survives_a_restart() {
        let (dir, t) = table();
        t.popped(("T", "g", 2), &[10, 12], (1000, 100), None);
        t.persist().unwrap();
        let again = OrderTable::load(dir.path().join("consumerOrderInfo.json")).unwrap();
        assert!(again.blocks("T", "g", 2, None, 1050));
        assert_eq!(again.ack("T", "g", 2, 12, 1000), OrderAck::Commit(10));
    }
}
