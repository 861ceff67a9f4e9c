//! The read path: reading a queue's messages from an offset (RocketMQ's `getMessage`), its
//! result (`GetMessageResult`) and statuses.

use std::sync::Arc;

use bytes::Bytes;

use crate::commit_log::CommitLog;
use crate::config::StoreConfig;
use crate::consume_queue::ConsumeQueue;
use crate::filter::MessageFilter;

/// Outcome of a read from a consume queue (RocketMQ's `GetMessageStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GetMessageStatus {
    /// At least one message returned.
    Found,
    /// Messages exist but none matched the filter in the scanned range.
    NoMatchedMessage,
    /// The CommitLog file was deleted under the reader.
    MessageWasRemoving,
    /// The consume queue has no file at the offset.
    OffsetFoundNull,
    /// The offset is past the end by more than one.
    OffsetOverflowBadly,
    /// The offset is exactly the end: nothing new yet.
    OffsetOverflowOne,
    /// The offset is below the minimum (retention removed it).
    OffsetTooSmall,
    /// No such topic queue.
    NoMatchedLogicQueue,
    /// The queue exists but is empty.
    NoMessageInQueue,
}

/// Messages read from one queue.
#[derive(Debug, Clone)]
pub struct GetMessageResult {
    /// What happened.
    pub status: GetMessageStatus,
    /// Where the next read should start.
    pub next_begin_offset: i64,
    /// The queue's minimum offset.
    pub min_offset: i64,
    /// The queue's maximum offset (one past the last).
    pub max_offset: i64,
    /// The records, each sharing the mapped file's memory.
    pub messages: Vec<Bytes>,
    /// Queue offsets of `messages`.
    pub queue_offsets: Vec<i64>,
    /// Sum of record sizes.
    pub total_bytes: usize,
    /// The data is so far behind that it is likely no longer in the page cache.
    pub suggest_pulling_from_slave: bool,
    /// CommitLog bytes the read looked at: the records returned and those a filter judged
    /// by their contents and left out (not those ruled out by the consume queue).
    pub commit_log_bytes_read: usize,
}

impl GetMessageResult {
    pub(crate) fn empty(
        status: GetMessageStatus,
        next_begin_offset: i64,
        min_offset: i64,
        max_offset: i64,
    ) -> Self {
        GetMessageResult {
            status,
            next_begin_offset,
            min_offset,
            max_offset,
            messages: Vec::new(),
            queue_offsets: Vec::new(),
            total_bytes: 0,
            suggest_pulling_from_slave: false,
            commit_log_bytes_read: 0,
        }
    }

    /// The records concatenated, exactly as stored (a PULL_MESSAGE body).
    pub fn concat(&self) -> Bytes {
        match self.messages.len() {
            0 => Bytes::new(),
            1 => self.messages[0].clone(),
            _ => {
                let mut out = Vec::with_capacity(self.total_bytes);
                for m in &self.messages {
                    out.extend_from_slice(m);
                }
                out.into()
            }
        }
    }
}

/// Reads messages of consume queues out of the CommitLog.
pub(crate) struct QueueReader<'a> {
    pub commit_log: &'a CommitLog,
    pub config: &'a StoreConfig,
    /// Bytes behind the CommitLog's end beyond which a record is likely out of the page cache
    /// (`accessMessageInMemoryMaxRatio` of RAM): such reads transfer less per pull.
    pub memory_for_cache: i64,
    /// No record ending past this CommitLog offset is served (controller mode's confirm
    /// offset: bytes every in-sync replica has; `i64::MAX` otherwise). A read stops at the
    /// first such record, so queue order is kept and the rest is served once confirmed.
    pub read_limit: i64,
}

impl QueueReader<'_> {
    /// Reads up to `max_msg_nums` messages of a queue from `offset`, keeping those `filter`
    /// accepts (RocketMQ's `getMessage`).
    pub(crate) fn get(
        &self,
        cq: Option<Arc<ConsumeQueue>>,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_msg_nums: i32,
        filter: Option<&dyn MessageFilter>,
    ) -> GetMessageResult {
        let max_offset_py = self.commit_log.max_offset();
        let Some(cq) = cq else {
            return GetMessageResult::empty(GetMessageStatus::NoMatchedLogicQueue, 0, 0, 0);
        };
        let min = cq.min_offset();
        let max = cq.max_offset();
        let empty = |status, next| GetMessageResult::empty(status, next, min, max);
        if max == 0 {
            return empty(GetMessageStatus::NoMessageInQueue, 0);
        }
        if offset < min {
            return empty(GetMessageStatus::OffsetTooSmall, min);
        }
        if offset == max {
            return empty(GetMessageStatus::OffsetOverflowOne, offset);
        }
        if offset > max {
            let next = if min == 0 { min } else { max };
            return empty(GetMessageStatus::OffsetOverflowBadly, next);
        }
        let Some(units) = cq.units_from(offset) else {
            return empty(GetMessageStatus::OffsetFoundNull, cq.roll_next_file(offset));
        };
        let mut result = empty(GetMessageStatus::NoMatchedMessage, offset);
        let max_msg_nums = max_msg_nums.max(1) as usize;
        // RocketMQ bounds the scan in bytes of consume queue: max(16000, maxMsgNums * 20).
        let max_scan = (16_000usize).max(max_msg_nums * 20) / 20;
        let mut next_file_start: Option<i64> = None;
        let mut max_py_pulling = 0i64;
        let mut scanned = 0usize;
        let mut spans = Spans {
            log: self.commit_log,
            span: None,
        };
        while scanned < units.len() && scanned < max_scan {
            // The tags code and ext unit matter only to a filter.
            let (unit, ext) = match filter {
                Some(_) => units.get_ext(scanned),
                None => (units.get_raw(scanned), None),
            };
            let index = units.start_offset + scanned as i64;
            if unit.is_blank() {
                scanned += 1;
                continue;
            }
            max_py_pulling = unit.commit_log_offset;
            if let Some(start) = next_file_start {
                if unit.commit_log_offset < start {
                    scanned += 1;
                    continue;
                }
            }
            if unit.commit_log_offset.saturating_add(i64::from(unit.size)) > self.read_limit {
                break;
            }
            let in_disk = max_offset_py - unit.commit_log_offset > self.memory_for_cache;
            if self.batch_full(unit.size as usize, max_msg_nums, &result, in_disk) {
                break;
            }
            scanned += 1;
            if let Some(filter) = filter {
                if !filter.matches_unit(unit.tags_code, ext.as_ref()) {
                    continue;
                }
            }
            let read = spans.read(unit.commit_log_offset, unit.size);
            result.commit_log_bytes_read += read.as_ref().map_or(0, |b| b.len());
            match read {
                Some(bytes) if !is_unit_record(&bytes, queue_id, index) => {
                    // The unit outlived its record (the CommitLog lost it and wrote others
                    // there, or holds damage recovery did not see): never served.
                    tracing::warn!(
                        topic,
                        queue_id,
                        index,
                        "consume-queue unit points at another record; skipped"
                    );
                }
                Some(bytes) if filter.is_some_and(|f| !f.matches_record(&bytes)) => {}
                Some(bytes) => {
                    result.total_bytes += bytes.len();
                    result.messages.push(bytes);
                    result.queue_offsets.push(index);
                    result.status = GetMessageStatus::Found;
                    next_file_start = None;
                }
                None if self.commit_log.is_bad(unit.commit_log_offset) => {
                    tracing::warn!(
                        topic,
                        queue_id,
                        index,
                        "message in a damaged CommitLog span skipped"
                    );
                }
                None => {
                    if result.messages.is_empty() {
                        result.status = GetMessageStatus::MessageWasRemoving;
                    }
                    let fs = self.config.mapped_file_size_commit_log as i64;
                    next_file_start = Some(
                        unit.commit_log_offset
                            .saturating_add(fs - unit.commit_log_offset % fs),
                    );
                }
            }
        }
        result.next_begin_offset = offset + scanned as i64;
        result.suggest_pulling_from_slave = max_offset_py - max_py_pulling > self.memory_for_cache;
        result
    }

    fn batch_full(
        &self,
        size: usize,
        max_msg_nums: usize,
        r: &GetMessageResult,
        in_disk: bool,
    ) -> bool {
        let count = r.messages.len();
        if count == 0 || r.total_bytes == 0 {
            return false;
        }
        if count >= max_msg_nums {
            return true;
        }
        let (bytes, n) = if in_disk {
            (
                self.config.max_transfer_bytes_on_message_in_disk,
                self.config.max_transfer_count_on_message_in_disk,
            )
        } else {
            (
                self.config.max_transfer_bytes_on_message_in_memory,
                self.config.max_transfer_count_on_message_in_memory,
            )
        };
        r.total_bytes + size > bytes || count >= n
    }
}

/// Records read one after another as slices of one span of their CommitLog file — from
/// the first record read there to what the file held then: a `Bytes` owner is an
/// allocation, and a read's records mostly sit in one file, so a read of 32 messages makes
/// one owner (or one per file) instead of 32. A record keeps the same file mapped that its
/// own owner would have.
struct Spans<'a> {
    log: &'a CommitLog,
    /// The span's CommitLog offset and bytes (written bytes only: they never change).
    span: Option<(i64, Bytes)>,
}

impl Spans<'_> {
    /// The record at `offset` of `size` (as [`CommitLog::read`]).
    fn read(&mut self, offset: i64, size: i32) -> Option<Bytes> {
        let size = usize::try_from(size).ok().filter(|s| *s > 0)?;
        if let Some((start, span)) = &self.span {
            let at = offset
                .checked_sub(*start)
                .and_then(|d| usize::try_from(d).ok());
            if let Some(at) = at.filter(|at| span.len().saturating_sub(*at) >= size) {
                return (!self.log.is_bad(offset)).then(|| span.slice(at..at + size));
            }
        }
        // Not in the span (or none yet): a new one from here (`read_span` checks damage).
        let span = self.log.read_span(offset).filter(|s| s.len() >= size)?;
        let record = span.slice(..size);
        self.span = Some((offset, span));
        Some(record)
    }
}

/// Whether `bytes` are the record a consume-queue unit `index` of queue `queue_id` points at:
/// a message of exactly that size, stored with that queue id and queue offset. Cheap (fixed
/// header fields; the body CRC was checked when the record was written or recovered).
fn is_unit_record(bytes: &[u8], queue_id: i32, index: i64) -> bool {
    use rocketpy_protocol::message::record::MESSAGE_MAGIC_CODE;
    let i32_at = |at: usize| {
        bytes
            .get(at..at + 4)?
            .try_into()
            .ok()
            .map(i32::from_be_bytes)
    };
    let i64_at = |at: usize| {
        bytes
            .get(at..at + 8)?
            .try_into()
            .ok()
            .map(i64::from_be_bytes)
    };
    // TOTALSIZE, MAGICCODE, BODYCRC, QUEUEID, FLAG, QUEUEOFFSET (RocketMQ's record layout).
    i32_at(0) == Some(bytes.len() as i32)
        && i32_at(4) == Some(MESSAGE_MAGIC_CODE)
        && i32_at(12) == Some(queue_id)
        && i64_at(20) == Some(index)
}
