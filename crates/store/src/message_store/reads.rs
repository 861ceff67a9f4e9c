//! The read side of [`MessageStore`]: messages by queue offset, by physical offset, by id,
//! by time and by key; queue bounds; the commit log's range, damaged spans and files; delay
//! offsets; disk figures.

use bytes::Bytes;
use rocketpy_protocol::message::record;

use super::MessageStore;
use crate::error::{Result, StoreError};
use crate::filter::MessageFilter;
use crate::get::{GetMessageResult, QueueReader};
use crate::lookup::Lookup;
use crate::mapped_file::parse_file_name;

impl MessageStore {
    /// Reads up to `max_msg_nums` messages of a queue from `offset`, keeping those `filter`
    /// accepts (RocketMQ's `getMessage`).
    pub fn get_message(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_msg_nums: i32,
        filter: Option<&dyn MessageFilter>,
    ) -> GetMessageResult {
        self.read_queue(
            topic,
            queue_id,
            offset,
            max_msg_nums,
            filter,
            self.read_limit(),
        )
    }

    /// [`MessageStore::get_message`] past the read limit too: for the broker's own services
    /// (timer delivery, pop revival and replay, transaction checks), which must see every
    /// record this store holds. What they write from it is appended after it, so no consumer
    /// sees a product before its source is confirmed.
    pub fn get_message_unconfirmed(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_msg_nums: i32,
    ) -> GetMessageResult {
        self.read_queue(topic, queue_id, offset, max_msg_nums, None, i64::MAX)
    }

    fn read_queue(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_msg_nums: i32,
        filter: Option<&dyn MessageFilter>,
        read_limit: i64,
    ) -> GetMessageResult {
        QueueReader {
            commit_log: &self.commit_log,
            config: &self.config,
            memory_for_cache: self.memory_for_cache,
            read_limit,
        }
        .get(
            self.queues.find(topic, queue_id),
            topic,
            queue_id,
            offset,
            max_msg_nums,
            filter,
        )
    }

    /// One past the last offset of a queue (0 if it does not exist).
    pub fn max_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.queues
            .find(topic, queue_id)
            .map(|cq| cq.max_offset())
            .unwrap_or(0)
    }

    /// The first readable offset of a queue (0 if it does not exist).
    pub fn min_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.queues
            .find(topic, queue_id)
            .map(|cq| cq.min_offset())
            .unwrap_or(0)
    }

    /// Whether the message at a queue offset is likely out of the page cache (RocketMQ's
    /// `checkInDiskByConsumeOffset`); false if there is no such message.
    pub fn check_in_disk_by_consume_offset(&self, topic: &str, queue_id: i32, offset: i64) -> bool {
        self.queues
            .find(topic, queue_id)
            .and_then(|cq| cq.get(offset))
            .filter(|u| !u.is_blank())
            .map(|u| self.commit_log.max_offset() - u.commit_log_offset > self.memory_for_cache)
            .unwrap_or(false)
    }

    /// The record at a physical offset.
    pub fn look_message_by_offset(&self, commit_log_offset: i64) -> Option<Bytes> {
        self.commit_log.read_record(commit_log_offset)
    }

    /// The record named by an offset message id (store address + physical offset).
    pub fn look_message_by_offset_msg_id(&self, msg_id: &str) -> Result<Option<Bytes>> {
        let (_, offset) = record::parse_offset_msg_id(msg_id)?;
        Ok(self.look_message_by_offset(offset))
    }

    fn lookup(&self) -> Lookup<'_> {
        Lookup {
            commit_log: &self.commit_log,
            queues: &self.queues,
            index: &self.index,
            index_enabled: self.config.message_index_enable,
        }
    }

    /// Store timestamp of the message at a queue offset.
    pub fn message_store_timestamp(&self, topic: &str, queue_id: i32, offset: i64) -> Option<i64> {
        self.lookup()
            .message_store_timestamp(topic, queue_id, offset)
    }

    /// Store timestamp of the first readable message of a queue.
    pub fn earliest_message_time_in_queue(&self, topic: &str, queue_id: i32) -> Option<i64> {
        self.lookup()
            .earliest_message_time_in_queue(topic, queue_id)
    }

    /// Store timestamp of the first message of the CommitLog.
    pub fn earliest_message_time(&self) -> Option<i64> {
        self.lookup().earliest_message_time()
    }

    /// The first queue offset whose message was stored at or after `timestamp` (ms), by binary
    /// search on store time; the max offset when every message is older. (RocketMQ returns
    /// the offset with the *closest* time, which may skip messages stored right at
    /// `timestamp`; "first at or after" never does.)
    pub fn offset_by_time(&self, topic: &str, queue_id: i32, timestamp: i64) -> i64 {
        self.lookup().offset_by_time(topic, queue_id, timestamp)
    }

    /// Messages of `topic` whose UNIQ_KEY or one of whose KEYS is `key`, stored in
    /// `[begin, end]` (ms), newest first, at most `max_num`. Waits briefly for the index to
    /// catch up with messages stored before the call.
    pub fn query_message(
        &self,
        topic: &str,
        key: &str,
        max_num: usize,
        begin: i64,
        end: i64,
    ) -> Vec<Bytes> {
        self.lookup().query_message(topic, key, max_num, begin, end)
    }

    /// Whether a put has been stuck in the CommitLog for more than `limit_ms`.
    pub fn is_os_page_cache_busy(&self, limit_ms: i64) -> bool {
        self.commit_log.is_busy(limit_ms)
    }

    /// The CommitLog's first and one-past-last offsets.
    pub fn commit_log_range(&self) -> (i64, i64) {
        (self.commit_log.min_offset(), self.commit_log.max_offset())
    }

    /// Damaged CommitLog spans found by recovery.
    pub fn bad_ranges(&self) -> Vec<(i64, i64)> {
        self.commit_log.bad_ranges()
    }

    /// Every (topic, queue id) with a consume queue.
    pub fn topic_queues(&self) -> Vec<(String, i32)> {
        self.queues.topic_queues()
    }

    /// Next schedule offset per delay level.
    pub fn delay_offsets(&self) -> std::collections::BTreeMap<i32, i64> {
        self.schedule.offsets()
    }

    /// Replaces the delay offsets with a master's (a slave runs no delayed delivery of its
    /// own) and saves `config/delayOffset.json`.
    pub fn set_delay_offsets(&self, offsets: std::collections::BTreeMap<i32, i64>) -> Result<()> {
        self.schedule.replace_offsets(offsets);
        self.schedule.persist(
            self.storage.as_ref(),
            || self.commit_log.max_offset(),
            false,
        )
    }

    /// `config/delayOffset.json` as RocketMQ writes it: `{"offsetTable":{level:offset}}`
    /// (GET_ALL_DELAY_OFFSET's answer).
    pub fn delay_offsets_json(&self) -> String {
        let table: Vec<String> = self
            .schedule
            .offsets()
            .iter()
            .map(|(l, o)| format!("\"{l}\":{o}"))
            .collect();
        format!("{{\"offsetTable\":{{{}}}}}", table.join(","))
    }

    /// File names (start offsets) of the CommitLog, in order.
    pub fn commit_log_files(&self) -> Vec<u64> {
        self.commit_log
            .files()
            .files()
            .iter()
            .filter_map(|f| f.path().file_name()?.to_str().and_then(parse_file_name))
            .collect()
    }

    // -- retention, flush, shutdown -------------------------------------------------------

    /// CommitLog bytes appended but not yet flushed to disk (metrics' flush-behind).
    pub fn flush_behind_bytes(&self) -> i64 {
        let flushed = i64::try_from(self.commit_log.files().flushed_offset()).unwrap_or(i64::MAX);
        (self.commit_log.max_offset() - flushed).max(0)
    }

    /// Total and available bytes of the disk holding the store.
    pub fn disk_space(&self) -> Result<(u64, u64)> {
        self.storage
            .disk_space(&self.root)
            .map_err(|e| StoreError::io(&self.root, e))
    }

    /// Fraction of the disk holding the store that is in use.
    pub fn disk_used_ratio(&self) -> Result<f64> {
        self.clean.disk_used_ratio()
    }
}
