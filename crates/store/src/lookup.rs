//! Look-ups that search rather than read: the offset of a store time, the store time of an
//! offset, the messages of a key (through the index).

use std::time::{Duration, Instant};

use bytes::Bytes;
use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::message::record::{self, Decoded};

use crate::commit_log::CommitLog;
use crate::consume_queue::ConsumeQueue;
use crate::index_service::IndexService;
use crate::queue_table::ConsumeQueueTable;

/// What the look-ups search.
pub(crate) struct Lookup<'a> {
    pub commit_log: &'a CommitLog,
    pub queues: &'a ConsumeQueueTable,
    pub index: &'a IndexService,
    /// `messageIndexEnable`: without an index, key queries do not wait for it.
    pub index_enabled: bool,
}

impl Lookup<'_> {
    fn store_timestamp_at(&self, cq: &ConsumeQueue, index: i64) -> Option<i64> {
        let unit = cq.get(index).filter(|u| !u.is_blank())?;
        let bytes = self.commit_log.read(unit.commit_log_offset, unit.size)?;
        match record::decode(&bytes, false) {
            Ok(Decoded::Message(v)) => Some(v.store_timestamp),
            _ => None,
        }
    }

    /// Store timestamp of the message at a queue offset.
    pub(crate) fn message_store_timestamp(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
    ) -> Option<i64> {
        let cq = self.queues.find(topic, queue_id)?;
        self.store_timestamp_at(&cq, offset)
    }

    /// Store timestamp of the first readable message of a queue.
    pub(crate) fn earliest_message_time_in_queue(&self, topic: &str, queue_id: i32) -> Option<i64> {
        let cq = self.queues.find(topic, queue_id)?;
        (cq.min_offset()..cq.max_offset()).find_map(|i| self.store_timestamp_at(&cq, i))
    }

    /// Store timestamp of the first message of the CommitLog.
    pub(crate) fn earliest_message_time(&self) -> Option<i64> {
        let bytes = self.commit_log.read_record(self.commit_log.min_offset())?;
        match record::decode(&bytes, false) {
            Ok(Decoded::Message(v)) => Some(v.store_timestamp),
            _ => None,
        }
    }

    /// The first queue offset whose message was stored at or after `timestamp` (ms), by binary
    /// search on store time; the max offset when every message is older. (RocketMQ returns
    /// the offset with the *closest* time, which may skip messages stored right at
    /// `timestamp`; "first at or after" never does.)
    pub(crate) fn offset_by_time(&self, topic: &str, queue_id: i32, timestamp: i64) -> i64 {
        let Some(cq) = self.queues.find(topic, queue_id) else {
            return 0;
        };
        let (mut lo, mut hi) = (cq.min_offset(), cq.max_offset());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            // Blank or unreadable units take the time of the next readable one.
            let t = (mid..hi).find_map(|i| self.store_timestamp_at(&cq, i));
            match t {
                Some(t) if t < timestamp => lo = mid + 1,
                _ => hi = mid,
            }
        }
        lo
    }

    /// Messages of `topic` whose UNIQ_KEY or one of whose KEYS is `key`, stored in
    /// `[begin, end]` (ms), newest first, at most `max_num`. Waits briefly for the index to
    /// catch up with messages stored before the call.
    pub(crate) fn query_message(
        &self,
        topic: &str,
        key: &str,
        max_num: usize,
        begin: i64,
        end: i64,
    ) -> Vec<Bytes> {
        let target = self.commit_log.max_offset();
        let deadline = Instant::now() + Duration::from_secs(3);
        while self.index_enabled && self.index.progress() < target && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        let mut out = Vec::new();
        for offset in self.index.query(
            topic,
            key,
            max_num.saturating_mul(2).max(max_num),
            begin,
            end,
        ) {
            if out.len() >= max_num {
                break;
            }
            let Some(bytes) = self.commit_log.read_record(offset) else {
                continue;
            };
            let matches = match record::decode(&bytes, false) {
                Ok(Decoded::Message(v)) => {
                    v.topic == topic
                        && (properties::find(v.properties, keys::UNIQ_KEY) == Some(key)
                            || properties::find(v.properties, keys::KEYS)
                                .is_some_and(|ks| ks.split(' ').any(|k| k == key)))
                }
                _ => false,
            };
            if matches {
                out.push(bytes);
            }
        }
        out
    }
}
