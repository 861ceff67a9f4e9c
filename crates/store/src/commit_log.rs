//! The CommitLog: every message of every topic, appended in arrival order.
//!
//! One lock serialises appends: it assigns the queue offset, the physical offset and the store
//! timestamp, writes the record in place in the mapped file, and dispatches it to the consume
//! queue before releasing, so consume queues are always in CommitLog order and a message is
//! readable by the time its put returns.
//!
//! Recovery departs from RocketMQ on purpose: RocketMQ truncates the log at the first invalid
//! record, which throws away every later (acknowledged) message when one byte in the middle
//! of a file is damaged. Here an invalid record is skipped when a valid record follows it (the
//! next record is found by its magic code and its PHYSICALOFFSET field, which must equal its
//! own position); the damaged span is remembered as a *bad range* that readers skip. Only when
//! nothing valid follows (a torn tail) is the log cut.

use std::collections::HashMap;

use bytes::Bytes;

use crate::dispatch::{consumable, DispatchRequest, QueueUnits};
use crate::error::{Result, StoreError};
use crate::mapped_file::FileKind;
use crate::mapped_file_queue::MappedFileQueue;
use crate::padded::Padded;
use crate::put_state::PutState;
use crate::queue_table::ConsumeQueueTable;
use rocketpy_protocol::message::record::{self, Decoded, MessageToStore, Placement, RecordView};

/// Where a message went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendResult {
    /// Physical offset of the record.
    pub wrote_offset: i64,
    /// Record size.
    pub wrote_bytes: i32,
    /// The storing broker's address: with `wrote_offset`, the offset message id.
    pub store_host: std::net::SocketAddr,
    /// STORETIMESTAMP.
    pub store_timestamp: i64,
    /// Queue offset (index in the consume queue).
    pub logics_offset: i64,
}

impl AppendResult {
    /// The offset message id (store host + physical offset), formatted when asked: a batch's
    /// answer writes its ids into one string with [`AppendResult::push_msg_id`] instead.
    pub fn msg_id(&self) -> String {
        record::offset_msg_id(&self.store_host, self.wrote_offset)
    }

    /// Appends [`AppendResult::msg_id`] to `out`.
    pub fn push_msg_id(&self, out: &mut String) {
        record::push_offset_msg_id(out, &self.store_host, self.wrote_offset);
    }
}

/// Marks the put lock as held since now, and free again when dropped (on every exit path).
struct BusyMark<'a>(&'a std::sync::atomic::AtomicI64);

impl<'a> BusyMark<'a> {
    fn new(since: &'a std::sync::atomic::AtomicI64, now: i64) -> Self {
        since.store(now, std::sync::atomic::Ordering::Relaxed);
        BusyMark(since)
    }
}

impl Drop for BusyMark<'_> {
    fn drop(&mut self) {
        self.0.store(0, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A damaged span of the log `[start, end)`, found by recovery.
pub type BadRange = (i64, i64);

/// The CommitLog.
pub struct CommitLog {
    files: MappedFileQueue,
    /// The put lock. std's mutex, not parking_lot's: with more writer threads than cores,
    /// parking_lot's waiters `sched_yield` to each other before parking, and that churn cost
    /// a third of the 8-writer append rate on 2 cores (std's spins briefly, then sleeps).
    state: Padded<std::sync::Mutex<PutState>>,
    /// When the current holder of the put lock took it (ms; 0 = free): a put stuck for long
    /// (page faults on a starved page cache) makes the broker answer SYSTEM_BUSY.
    locked_since: Padded<std::sync::atomic::AtomicI64>,
    bad_ranges: parking_lot::RwLock<Vec<BadRange>>,
}

use rocketpy_protocol::clock::now_millis;

impl CommitLog {
    /// A CommitLog over `dir` with files of `file_size` bytes (not yet loaded).
    pub fn new(
        storage: std::sync::Arc<dyn crate::io::Storage>,
        dir: std::path::PathBuf,
        file_size: usize,
    ) -> Self {
        CommitLog {
            files: MappedFileQueue::new(storage, dir, file_size, FileKind::COMMIT_LOG)
                .with_preallocation(),
            state: Padded(std::sync::Mutex::new(PutState::default())),
            locked_since: Padded(std::sync::atomic::AtomicI64::new(0)),
            bad_ranges: parking_lot::RwLock::new(Vec::new()),
        }
    }

    /// Takes the put lock. A panic while it was held leaves nothing half-done that matters
    /// (a record is published only after it is complete), so a poisoned lock is used as is.
    fn lock_state(&self) -> std::sync::MutexGuard<'_, PutState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The files.
    pub fn files(&self) -> &MappedFileQueue {
        &self.files
    }

    /// Maps the existing files.
    pub fn load(&self) -> Result<()> {
        self.files.load()
    }

    /// Appends `msgs` under one lock acquisition and adds their units to `queues`, in order.
    ///
    /// Space comes first: the CommitLog's (the next file too when the batch will not fit in
    /// this one) and each consume queue's for the units the batch adds. On a full disk the
    /// batch is refused there, before any of it is stored, so it is never stored in part nor
    /// left without its queue units.
    pub fn put_batch(
        &self,
        msgs: &[MessageToStore],
        queues: &ConsumeQueueTable,
    ) -> Result<Vec<AppendResult>> {
        let file_size = self.files.file_size();
        let mut total = 0;
        for msg in msgs {
            let len = msg.record_len()?;
            if len + record::END_FILE_MIN_BLANK_LENGTH > file_size {
                return Err(StoreError::MessageTooLarge {
                    size: len,
                    max: file_size - record::END_FILE_MIN_BLANK_LENGTH,
                });
            }
            total += len;
        }
        // The CRC is the costliest part of encoding: computed before taking the lock.
        let single;
        let many: Vec<i32>;
        let crcs: &[i32] = if let [msg] = msgs {
            single = [record::body_crc(&msg.body)];
            &single
        } else {
            many = msgs.iter().map(|m| record::body_crc(&m.body)).collect();
            &many
        };
        // The clock is read before the lock, which is what concurrent writers queue for; the
        // `max` with the last stamp below keeps stamps monotonic in log order all the same.
        let now = now_millis();
        let mut state = self.lock_state();
        let mut writer = self.files.writer();
        let busy = BusyMark::new(&self.locked_since, now);
        {
            let tail = writer.roll(0)?;
            let start = tail.from_offset() + tail.wrote() as u64;
            let need = total + record::END_FILE_MIN_BLANK_LENGTH;
            writer.reserve(start, start + need as u64)?;
        }
        if let [msg] = msgs {
            // The common case, without the list below.
            if consumable(msg.effective_sys_flag()) {
                let slot = state.slot(&msg.topic, msg.queue_id);
                let cq = slot
                    .cq
                    .get_or_insert_with(|| queues.open(&msg.topic, msg.queue_id));
                cq.reserve(slot.next, 1)?;
            }
        } else {
            let mut units: Vec<QueueUnits<'_>> = Vec::new();
            for msg in msgs {
                if !consumable(msg.effective_sys_flag()) {
                    continue;
                }
                match units
                    .iter_mut()
                    .find(|u| u.1 == msg.queue_id && u.0 == msg.topic)
                {
                    Some(u) => u.3 += 1,
                    None => units.push((&msg.topic, msg.queue_id, 0, 1)),
                }
            }
            for (topic, queue_id, _, count) in &units {
                let slot = state.slot(topic, *queue_id);
                let cq = slot.cq.get_or_insert_with(|| queues.open(topic, *queue_id));
                cq.reserve(slot.next, *count)?;
            }
        }
        // One store time for the whole batch, as RocketMQ stamps a batch. It never goes
        // backwards within a process, so lookups by time can binary-search the log even if
        // the wall clock steps back.
        let store_timestamp = now.max(state.last_store_timestamp);
        state.last_store_timestamp = store_timestamp;
        let mut results = Vec::with_capacity(msgs.len());
        for (msg, &crc) in msgs.iter().zip(crcs) {
            let len = msg.record_len()?;

            let mut file = writer.roll(0)?;
            if len + record::END_FILE_MIN_BLANK_LENGTH > file.remaining() {
                let remaining = file.remaining();
                writer.append_tail(remaining, record::encode_blank)?;
                file = writer.roll(0)?;
            }
            let physical_offset = (file.from_offset() + file.wrote() as u64) as i64;
            let sys_flag = msg.effective_sys_flag();
            // One look-up per record: its offset, then its unit, through the same slot.
            let mut slot = consumable(sys_flag).then(|| state.slot(&msg.topic, msg.queue_id));
            let queue_offset = slot.as_ref().map_or(0, |s| s.next);
            let at = Placement {
                queue_offset,
                physical_offset,
                store_timestamp,
            };
            writer.append_tail(len, |buf| record::encode_into(msg, at, crc, buf))?;
            if let Some(slot) = slot.as_mut() {
                slot.next = queue_offset + 1;
                let cq = slot
                    .cq
                    .get_or_insert_with(|| queues.open(&msg.topic, msg.queue_id));
                queues.dispatch_into(
                    cq,
                    &DispatchRequest {
                        topic: &msg.topic,
                        queue_id: msg.queue_id,
                        commit_log_offset: physical_offset,
                        msg_size: len as i32,
                        tags_code: msg.tags_code,
                        store_timestamp,
                        consume_queue_offset: queue_offset,
                        properties: &msg.properties,
                        sys_flag,
                    },
                )?;
            }
            results.push(AppendResult {
                wrote_offset: physical_offset,
                wrote_bytes: len as i32,
                store_host: msg.store_host,
                store_timestamp,
                logics_offset: queue_offset,
            });
        }
        drop(busy);
        drop(writer);
        drop(state);
        Ok(results)
    }

    /// Replication (a slave): writes records received from the master verbatim at `offset`,
    /// which must be this log's end (or any file start when the log is empty: an empty slave
    /// starts at the master's newest file). Takes the complete records at the head of `data`
    /// and stops at the first incomplete one; a file's end filler consumes the filler's bytes
    /// present in `data` (only its 8-byte header is written: the rest stays unwritten, as on
    /// the master). Each record is checked (magic, sizes, CRC, and PHYSICALOFFSET equal to its
    /// position) before anything of it is written; `reserve` then `dispatch` run for it as for
    /// a put. Returns the bytes of `data` consumed and the log's new end.
    pub fn append_verbatim(
        &self,
        offset: i64,
        data: &[u8],
        mut reserve: impl FnMut(&QueueUnits<'_>) -> Result<()>,
        mut dispatch: impl FnMut(&RecordView<'_>) -> Result<()>,
    ) -> Result<(usize, i64)> {
        let mut state = self.lock_state();
        let mut writer = self.files.writer();
        let Ok(start) = u64::try_from(offset) else {
            return Err(StoreError::InvalidArgument(format!(
                "replica offset {offset} is negative"
            )));
        };
        let end = match writer.tail() {
            Some(tail) => tail.from_offset() + tail.wrote() as u64,
            None => {
                let file = writer.roll(start)?;
                file.from_offset()
            }
        };
        if end != start {
            return Err(StoreError::ReplicaOffset {
                expected: end as i64,
                got: offset,
            });
        }
        let (mut pos, mut end) = (0usize, offset);
        while let Some((size, magic)) = record::peek_size(&data[pos..]) {
            let file = writer.roll(0)?;
            let remaining = file.remaining();
            let rest = &data[pos..];
            if magic == record::BLANK_MAGIC_CODE {
                if usize::try_from(size).ok() != Some(remaining) {
                    return Err(StoreError::corrupt(
                        "replicated CommitLog",
                        format!("end filler of {size} bytes at {end} where the file has {remaining} left (do both brokers use the same mapedFileSizeCommitLog?)"),
                    ));
                }
                writer.append_tail(remaining, |buf| {
                    buf[..record::END_FILE_MIN_BLANK_LENGTH]
                        .copy_from_slice(&rest[..record::END_FILE_MIN_BLANK_LENGTH]);
                })?;
                pos += remaining.min(rest.len());
                end += remaining as i64;
                continue;
            }
            let len = usize::try_from(size).unwrap_or(0);
            if magic != record::MESSAGE_MAGIC_CODE
                || len < record::FIXED_LEN
                || len + record::END_FILE_MIN_BLANK_LENGTH > remaining
            {
                return Err(StoreError::corrupt(
                    "replicated CommitLog",
                    format!("no record at {end} (size {size}, magic {magic:#010x}, {remaining} bytes left in its file)"),
                ));
            }
            if len > rest.len() {
                break;
            }
            let Decoded::Message(view) = record::decode(&rest[..len], true)? else {
                unreachable!("the magic code was checked above");
            };
            if view.physical_offset != end {
                return Err(StoreError::corrupt(
                    "replicated CommitLog",
                    format!("record at {end} says it is at {}", view.physical_offset),
                ));
            }
            let consumable = consumable(view.sys_flag);
            if consumable {
                reserve(&(view.topic, view.queue_id, view.queue_offset, 1))?;
            }
            writer.reserve(end as u64, (end as usize + len) as u64)?;
            writer.append_tail(len, |buf| buf.copy_from_slice(&rest[..len]))?;
            if consumable {
                let slot = state.slot(view.topic, view.queue_id);
                slot.next = slot.next.max(view.queue_offset + 1);
            }
            state.last_store_timestamp = state.last_store_timestamp.max(view.store_timestamp);
            dispatch(&view)?;
            pos += len;
            end += len as i64;
        }
        Ok((pos, end))
    }

    /// Replication: cuts the log back to `offset` (a slave ahead of a master that lost its
    /// tail must not keep, nor serve, records the master no longer has).
    /// Runs `then` (cutting the consume queues) under the put lock too, so no append sees
    /// the log and its queues disagree.
    pub fn truncate_to<T>(&self, offset: i64, then: impl FnOnce() -> Result<T>) -> Result<T> {
        let _state = self.lock_state();
        self.files
            .writer()
            .truncate_to(u64::try_from(offset).unwrap_or(0))?;
        then()
    }

    /// The record bytes at `offset` of `size`, sharing the mapped memory.
    pub fn read(&self, offset: i64, size: i32) -> Option<Bytes> {
        if offset < 0 || size <= 0 || self.is_bad(offset) {
            return None;
        }
        let file = self.files.find(offset as u64)?;
        let pos = (offset as u64 - file.from_offset()) as usize;
        file.slice(pos, size as usize)
    }

    /// The written bytes from `offset` to what its file holds so far, sharing the mapped
    /// memory: records read one after another are slices of one span (see `get::Spans`).
    pub fn read_span(&self, offset: i64) -> Option<Bytes> {
        if offset < 0 || self.is_bad(offset) {
            return None;
        }
        let file = self.files.find(offset as u64)?;
        let pos = (offset as u64 - file.from_offset()) as usize;
        file.slice(pos, file.wrote().checked_sub(pos)?)
    }

    /// The record starting at `offset`, whatever its size.
    pub fn read_record(&self, offset: i64) -> Option<Bytes> {
        if self.is_bad(offset) {
            return None;
        }
        let file = self.files.find(u64::try_from(offset).ok()?)?;
        let pos = (offset as u64 - file.from_offset()) as usize;
        let (size, magic) = record::peek_size(file.read_from(pos)?)?;
        (magic == record::MESSAGE_MAGIC_CODE && size > 0)
            .then(|| file.slice(pos, size as usize))
            .flatten()
    }

    /// The first offset still stored.
    pub fn min_offset(&self) -> i64 {
        self.files.min_offset() as i64
    }

    /// One past the last byte written.
    pub fn max_offset(&self) -> i64 {
        self.files.max_offset() as i64
    }

    /// STORETIMESTAMP of the newest record.
    pub fn last_store_timestamp(&self) -> i64 {
        self.lock_state().last_store_timestamp
    }

    /// Replaces the queue offset table (after recovery).
    pub fn set_queue_offsets(&self, table: HashMap<String, HashMap<i32, i64>>) {
        self.lock_state().set_queue_offsets(table);
    }

    /// Runs `f` under the put lock after forgetting `topic`'s queue offsets (its queues are
    /// being deleted: a topic created again under that name starts at offset 0).
    pub fn forget_topic<T>(&self, topic: &str, f: impl FnOnce() -> T) -> T {
        let mut state = self.lock_state();
        state.forget_topic(topic);
        f()
    }

    /// The next queue offset of a queue.
    pub fn next_queue_offset(&self, topic: &str, queue_id: i32) -> i64 {
        self.lock_state().next_queue_offset(topic, queue_id)
    }

    /// Validates records from file `start_index` on, calls `on_record` for each, skips damaged
    /// spans that valid records follow, and cuts the log after the last valid record. Returns
    /// the recovered end offset.
    pub fn recover(
        &self,
        start_index: usize,
        check_crc: bool,
        mut on_record: impl FnMut(&RecordView<'_>) -> Result<()>,
    ) -> Result<i64> {
        let files = self.files.files();
        let Some(first) = files.get(start_index.min(files.len().saturating_sub(1))) else {
            return Ok(0);
        };
        let first_index = start_index.min(files.len() - 1);
        let mut end = first.from_offset();
        let mut last_ts = 0i64;
        let mut bad = Vec::new();
        let mut resume: Option<u64> = None;
        'files: for (i, file) in files.iter().enumerate().skip(first_index) {
            // SAFETY: recovery runs before any writer starts.
            let data = unsafe { file.whole() };
            let mut pos = match resume.take() {
                Some(at) if at >= file.from_offset() => (at - file.from_offset()) as usize,
                Some(_) | None => 0,
            };
            loop {
                end = file.from_offset() + pos as u64;
                if pos >= data.len() {
                    continue 'files;
                }
                match record::decode(&data[pos..], check_crc) {
                    Ok(Decoded::Message(view)) if view.physical_offset == end as i64 => {
                        on_record(&view)?;
                        last_ts = last_ts.max(view.store_timestamp);
                        pos += view.total_size as usize;
                    }
                    Ok(Decoded::EndOfFile) => {
                        end = file.from_offset() + data.len() as u64;
                        continue 'files;
                    }
                    Ok(Decoded::Empty) => break 'files,
                    other => {
                        let reason = match other {
                            Err(e) => e.to_string(),
                            Ok(_) => "record at the wrong physical offset".to_owned(),
                        };
                        match find_next_record(&files[i..], end, check_crc) {
                            Some(next) => {
                                tracing::error!(
                                    file = %file.path().display(), start = end, end = next, %reason,
                                    "damaged CommitLog span skipped; the messages after it are kept"
                                );
                                bad.push((end as i64, next as i64));
                                if next < file.from_offset() + data.len() as u64 {
                                    pos = (next - file.from_offset()) as usize;
                                    continue;
                                }
                                resume = Some(next);
                                continue 'files;
                            }
                            None => {
                                tracing::warn!(file = %file.path().display(), pos, %reason, "invalid record with nothing valid after it (a torn tail); log truncated here");
                                break 'files;
                            }
                        }
                    }
                }
            }
        }
        // The last file may have been skipped by `resume` past its end: nothing more to cut.
        self.files.writer().truncate_to(end)?;
        let mut state = self.lock_state();
        state.last_store_timestamp = state.last_store_timestamp.max(last_ts);
        drop(state);
        self.bad_ranges.write().extend(bad);
        Ok(end as i64)
    }

    /// Whether a put has held the lock for more than `limit_ms` (RocketMQ's
    /// `isOSPageCacheBusy`).
    pub fn is_busy(&self, limit_ms: i64) -> bool {
        let since = self.locked_since.load(std::sync::atomic::Ordering::Relaxed);
        since != 0 && now_millis() - since > limit_ms
    }

    /// The damaged spans found by recovery.
    pub fn bad_ranges(&self) -> Vec<BadRange> {
        self.bad_ranges.read().clone()
    }

    /// Whether `offset` lies in a damaged span.
    pub fn is_bad(&self, offset: i64) -> bool {
        let bad = self.bad_ranges.read();
        !bad.is_empty() && bad.iter().any(|(s, e)| (*s..*e).contains(&offset))
    }

    /// Where the record after `offset` should start when the one at `offset` is unreadable:
    /// the end of its bad range, or the next file.
    pub fn skip_unreadable(&self, offset: i64) -> i64 {
        if let Some((_, end)) = self
            .bad_ranges
            .read()
            .iter()
            .find(|(s, e)| (*s..*e).contains(&offset))
        {
            return *end;
        }
        let size = self.files.file_size() as i64;
        offset + size - offset % size
    }

    /// The written bytes from `offset` to the end of its file, sharing the mapped memory
    /// (sequential readers: index and schedule services).
    pub fn read_from(&self, offset: i64) -> Option<Bytes> {
        let file = self.files.find(u64::try_from(offset).ok()?)?;
        let pos = (offset as u64 - file.from_offset()) as usize;
        let wrote = file.wrote();
        (pos < wrote)
            .then(|| file.slice(pos, wrote - pos))
            .flatten()
    }

    /// Flushes dirty pages.
    pub fn flush(&self) -> Result<()> {
        self.files.flush()
    }
}

/// Finds the first valid record at or after `from` in `files` (the file holding `from` first):
/// its magic code in place, its PHYSICALOFFSET equal to its position, and its CRC intact.
fn find_next_record(
    files: &[std::sync::Arc<crate::mapped_file::MappedFile>],
    from: u64,
    check_crc: bool,
) -> Option<u64> {
    let magic = record::MESSAGE_MAGIC_CODE.to_be_bytes();
    for file in files {
        // SAFETY: recovery runs before any writer starts.
        let data = unsafe { file.whole() };
        let base = file.from_offset();
        let mut pos = from.saturating_sub(base) as usize + usize::from(from >= base);
        while pos + record::FIXED_LEN <= data.len() {
            let Some(hit) = data[pos + 4..].windows(4).position(|w| w == magic) else {
                break;
            };
            let start = pos + hit;
            if start + record::FIXED_LEN > data.len() {
                break;
            }
            let at = base + start as u64;
            let mut phys = [0u8; 8];
            phys.copy_from_slice(
                &data[start + record::PHYSICAL_OFFSET_POS..start + record::PHYSICAL_OFFSET_POS + 8],
            );
            if i64::from_be_bytes(phys) == at as i64 {
                if let Ok(Decoded::Message(_)) = record::decode(&data[start..], check_crc) {
                    return Some(at);
                }
            }
            pos = start + 1;
        }
        // The next file's first record, if any, starts at its beginning.
    }
    None
}
