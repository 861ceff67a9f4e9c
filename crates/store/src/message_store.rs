//! `MessageStore`: the CommitLog, the consume queues, recovery and flushing, behind one API
//! used by the broker and by the embedded Python store.
//!
//! Files under the root: `commitlog/`, `consumequeue/{topic}/{queueId}/`, `checkpoint`,
//! `abort` (present while open: found at start = the last run did not shut down cleanly),
//! `lock` (flock'd while open), `config/` (owned by the broker).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::{Condvar, Mutex, RwLock};

use crate::checkpoint::{Checkpoint, StoreLock};
use crate::commit_log::{AppendResult, CommitLog, DispatchRequest};
use crate::config::{FlushDiskType, StoreConfig};
use crate::consume_queue::{ConsumeQueue, CqUnit};
use crate::delay;
use crate::error::{Result, StoreError};
use crate::get::{GetMessageResult, GetMessageStatus};
use crate::mapped_file::parse_file_name;
use crate::properties::{self, keys};
use crate::record::{self, Decoded, MessageToStore, RecordView};
use crate::topic::validate_topic;

/// Told when a message becomes readable (wakes long-polling pulls).
pub trait MessageArrivingListener: Send + Sync {
    /// `next_offset` is the queue's new maximum offset.
    fn arriving(&self, topic: &str, queue_id: i32, next_offset: i64, tags_code: i64);
}

/// Outcome of a put that stored the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutStatus {
    /// Stored (and, under SYNC_FLUSH, on disk).
    PutOk,
    /// Stored, but the SYNC_FLUSH wait exceeded `syncFlushTimeout`.
    FlushDiskTimeout,
}

/// A stored message's placement and status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutMessageResult {
    /// OK or flush timeout.
    pub status: PutStatus,
    /// Where it went.
    pub append: AppendResult,
}

type QueueTable = HashMap<String, HashMap<i32, Arc<ConsumeQueue>>>;

struct FlushState {
    stop: bool,
}

/// The message store.
pub struct MessageStore {
    config: StoreConfig,
    root: PathBuf,
    commit_log: CommitLog,
    queues: RwLock<QueueTable>,
    delay_levels: Vec<i64>,
    memory_for_cache: i64,
    listener: RwLock<Option<Arc<dyn MessageArrivingListener>>>,
    shut_down: AtomicBool,
    flush_state: Mutex<FlushState>,
    flush_wake: Condvar,
    flusher: Mutex<Option<JoinHandle<()>>>,
    lock: Mutex<Option<StoreLock>>,
    was_abnormal: bool,
}

impl std::fmt::Debug for MessageStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageStore")
            .field("root", &self.root)
            .finish()
    }
}

fn total_physical_memory() -> i64 {
    // SAFETY: sysconf has no preconditions.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages > 0 && page > 0 {
        #[allow(clippy::unnecessary_cast)] // c_long is i32 on some targets
        let total = pages as i64 * page as i64;
        total
    } else {
        8 << 30
    }
}

impl MessageStore {
    /// Opens (creating if needed) the store at `config.store_path_root_dir`, recovers it and
    /// starts the flush thread.
    pub fn open(config: StoreConfig) -> Result<Arc<MessageStore>> {
        config.validate()?;
        let root = config.store_path_root_dir.clone();
        let lock = StoreLock::acquire(&root)?;
        let abort = root.join("abort");
        let was_abnormal = abort.exists();
        let delay_levels = delay::parse_delay_levels(&config.message_delay_level)?;
        let store = Arc::new(MessageStore {
            commit_log: CommitLog::new(config.commit_log_dir(), config.mapped_file_size_commit_log),
            queues: RwLock::new(HashMap::new()),
            delay_levels,
            memory_for_cache: total_physical_memory() / 100
                * config.access_message_in_memory_max_ratio as i64,
            listener: RwLock::new(None),
            shut_down: AtomicBool::new(false),
            flush_state: Mutex::new(FlushState { stop: false }),
            flush_wake: Condvar::new(),
            flusher: Mutex::new(None),
            lock: Mutex::new(Some(lock)),
            root: root.clone(),
            config,
            was_abnormal,
        });
        if was_abnormal {
            tracing::warn!(root = %root.display(), "abort file found: the last run did not shut down cleanly; recovering");
        }
        store.load_and_recover()?;
        std::fs::write(&abort, b"").map_err(|e| StoreError::io(&abort, e))?;
        let weak = Arc::downgrade(&store);
        let handle = std::thread::Builder::new()
            .name("rocketpy-store-flush".into())
            .spawn(move || flush_loop(weak))
            .map_err(|e| StoreError::io(&root, e))?;
        *store.flusher.lock() = Some(handle);
        Ok(store)
    }

    /// The configuration.
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether the previous run ended without a clean shutdown.
    pub fn was_abnormal_shutdown(&self) -> bool {
        self.was_abnormal
    }

    /// Parsed delay levels in milliseconds.
    pub fn delay_levels(&self) -> &[i64] {
        &self.delay_levels
    }

    /// Sets the listener told about new messages.
    pub fn set_arriving_listener(&self, listener: Arc<dyn MessageArrivingListener>) {
        *self.listener.write() = Some(listener);
    }

    fn load_and_recover(&self) -> Result<()> {
        self.commit_log.load()?;
        self.load_consume_queues()?;
        for cq in self.all_queues() {
            cq.recover()?;
        }
        let files = self.commit_log.files().files();
        let start = if self.was_abnormal {
            self.abnormal_start_index(&files)?
        } else {
            files.len().saturating_sub(3)
        };
        let end = self
            .commit_log
            .recover(start, true, |view| self.redispatch(view))?;
        let mut table: HashMap<String, HashMap<i32, i64>> = HashMap::new();
        for cq in self.all_queues() {
            cq.truncate_dirty(end)?;
            table
                .entry(cq.topic().to_owned())
                .or_default()
                .insert(cq.queue_id(), cq.max_offset());
        }
        self.commit_log.set_queue_offsets(table);
        tracing::info!(root = %self.root.display(), commit_log_end = end, "store recovered");
        Ok(())
    }

    /// Abnormal recovery re-dispatches from the newest file whose first message is older than
    /// the checkpoint (minus slack); with no usable checkpoint, from the first file.
    fn abnormal_start_index(&self, files: &[Arc<crate::mapped_file::MappedFile>]) -> Result<usize> {
        let cp = Checkpoint::read(&self.root.join("checkpoint"))?;
        let min_ts = cp.min_timestamp();
        if min_ts <= 0 {
            return Ok(0);
        }
        for (i, f) in files.iter().enumerate().rev() {
            // SAFETY: recovery runs before any writer starts.
            let data = unsafe { f.whole() };
            if let Ok(Decoded::Message(v)) = record::decode(data, false) {
                if v.store_timestamp <= min_ts {
                    return Ok(i);
                }
            }
        }
        Ok(0)
    }

    fn redispatch(&self, view: &RecordView<'_>) -> Result<()> {
        let tags_code = delay::compute_tags_code(
            view.topic,
            view.properties,
            view.store_timestamp,
            &self.delay_levels,
        );
        let req = DispatchRequest {
            topic: view.topic,
            queue_id: view.queue_id,
            commit_log_offset: view.physical_offset,
            msg_size: view.total_size,
            tags_code,
            store_timestamp: view.store_timestamp,
            consume_queue_offset: view.queue_offset,
            properties: view.properties,
            sys_flag: view.sys_flag,
        };
        if validate_topic(view.topic).is_err() {
            tracing::warn!(
                topic = view.topic,
                offset = view.physical_offset,
                "record with an invalid topic name not dispatched"
            );
            return Ok(());
        }
        self.dispatch(&req)
    }

    fn load_consume_queues(&self) -> Result<()> {
        let dir = self.config.consume_queue_dir();
        let topics = match std::fs::read_dir(&dir) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(StoreError::io(&dir, e)),
        };
        let mut table = self.queues.write();
        for topic in topics {
            let topic = topic.map_err(|e| StoreError::io(&dir, e))?;
            let Some(name) = topic.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if validate_topic(&name).is_err() {
                tracing::warn!(dir = %topic.path().display(), "ignoring consume queue directory with an invalid topic name");
                continue;
            }
            let queues =
                std::fs::read_dir(topic.path()).map_err(|e| StoreError::io(topic.path(), e))?;
            for q in queues {
                let q = q.map_err(|e| StoreError::io(topic.path(), e))?;
                let Some(queue_id) = q.file_name().to_str().and_then(|s| s.parse::<i32>().ok())
                else {
                    continue;
                };
                let cq = ConsumeQueue::new(
                    &dir,
                    &name,
                    queue_id,
                    self.config.mapped_file_size_consume_queue,
                );
                cq.load()?;
                table
                    .entry(name.clone())
                    .or_default()
                    .insert(queue_id, Arc::new(cq));
            }
        }
        Ok(())
    }

    fn all_queues(&self) -> Vec<Arc<ConsumeQueue>> {
        self.queues
            .read()
            .values()
            .flat_map(|q| q.values().cloned())
            .collect()
    }

    /// The consume queue of a topic queue, if it exists.
    pub fn find_consume_queue(&self, topic: &str, queue_id: i32) -> Option<Arc<ConsumeQueue>> {
        self.queues
            .read()
            .get(topic)
            .and_then(|q| q.get(&queue_id))
            .cloned()
    }

    fn find_or_create_consume_queue(&self, topic: &str, queue_id: i32) -> Arc<ConsumeQueue> {
        if let Some(cq) = self.find_consume_queue(topic, queue_id) {
            return cq;
        }
        let mut table = self.queues.write();
        table
            .entry(topic.to_owned())
            .or_default()
            .entry(queue_id)
            .or_insert_with(|| {
                Arc::new(ConsumeQueue::new(
                    &self.config.consume_queue_dir(),
                    topic,
                    queue_id,
                    self.config.mapped_file_size_consume_queue,
                ))
            })
            .clone()
    }

    fn dispatch(&self, req: &DispatchRequest<'_>) -> Result<()> {
        if !req.is_consumable() {
            return Ok(());
        }
        let cq = self.find_or_create_consume_queue(req.topic, req.queue_id);
        cq.put(
            req.consume_queue_offset,
            CqUnit {
                commit_log_offset: req.commit_log_offset,
                size: req.msg_size,
                tags_code: req.tags_code,
            },
        )
    }

    fn check_message(&self, msg: &MessageToStore) -> Result<()> {
        if self.shut_down.load(Ordering::Acquire) {
            return Err(StoreError::ShutDown);
        }
        validate_topic(&msg.topic)?;
        if msg.queue_id < 0 {
            return Err(StoreError::InvalidArgument(format!(
                "queue id {} is negative",
                msg.queue_id
            )));
        }
        if msg.body.len() > self.config.max_message_size {
            return Err(StoreError::MessageTooLarge {
                size: msg.body.len(),
                max: self.config.max_message_size,
            });
        }
        Ok(())
    }

    /// Stores one message.
    pub fn put_message(&self, msg: MessageToStore) -> Result<PutMessageResult> {
        let mut results = self.put_messages(std::slice::from_ref(&msg))?;
        Ok(results.remove(0))
    }

    /// Stores messages contiguously, under one lock acquisition, all or none validated first.
    pub fn put_messages(&self, msgs: &[MessageToStore]) -> Result<Vec<PutMessageResult>> {
        for msg in msgs {
            self.check_message(msg)?;
        }
        if msgs.is_empty() {
            return Ok(Vec::new());
        }
        let appended = self.commit_log.put_batch(msgs, |req| self.dispatch(req))?;
        let wait = msgs
            .iter()
            .any(|m| properties::find(&m.properties, keys::WAIT_STORE_MSG_OK) != Some("false"));
        let status = if self.config.flush_disk_type == FlushDiskType::SyncFlush && wait {
            self.sync_flush()
        } else {
            PutStatus::PutOk
        };
        if let Some(listener) = self.listener.read().clone() {
            for (msg, r) in msgs.iter().zip(&appended) {
                listener.arriving(&msg.topic, msg.queue_id, r.logics_offset + 1, msg.tags_code);
            }
        }
        Ok(appended
            .into_iter()
            .map(|append| PutMessageResult { status, append })
            .collect())
    }

    fn sync_flush(&self) -> PutStatus {
        let started = Instant::now();
        match self.commit_log.flush() {
            Ok(())
                if started.elapsed() <= Duration::from_millis(self.config.sync_flush_timeout) =>
            {
                PutStatus::PutOk
            }
            Ok(()) => PutStatus::FlushDiskTimeout,
            Err(e) => {
                tracing::error!(error = %e, "sync flush failed");
                PutStatus::FlushDiskTimeout
            }
        }
    }

    /// Reads up to `max_msg_nums` messages of a queue from `offset`, keeping those whose tags
    /// code passes `filter` (RocketMQ's `getMessage`).
    pub fn get_message(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_msg_nums: i32,
        filter: Option<&dyn Fn(i64) -> bool>,
    ) -> GetMessageResult {
        let max_offset_py = self.commit_log.max_offset();
        let Some(cq) = self.find_consume_queue(topic, queue_id) else {
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
        while scanned < units.len() && scanned < max_scan {
            let unit = units.get(scanned);
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
            let in_disk = max_offset_py - unit.commit_log_offset > self.memory_for_cache;
            if self.batch_full(unit.size as usize, max_msg_nums, &result, in_disk) {
                break;
            }
            scanned += 1;
            if let Some(filter) = filter {
                if !filter(unit.tags_code) {
                    continue;
                }
            }
            match self.commit_log.read(unit.commit_log_offset, unit.size) {
                Some(bytes) => {
                    result.total_bytes += bytes.len();
                    result.messages.push(bytes);
                    result.queue_offsets.push(index);
                    result.status = GetMessageStatus::Found;
                    next_file_start = None;
                }
                None => {
                    if result.messages.is_empty() {
                        result.status = GetMessageStatus::MessageWasRemoving;
                    }
                    let fs = self.config.mapped_file_size_commit_log as i64;
                    next_file_start =
                        Some(unit.commit_log_offset + fs - unit.commit_log_offset % fs);
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

    /// One past the last offset of a queue (0 if it does not exist).
    pub fn max_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.find_consume_queue(topic, queue_id)
            .map(|cq| cq.max_offset())
            .unwrap_or(0)
    }

    /// The first readable offset of a queue (0 if it does not exist).
    pub fn min_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.find_consume_queue(topic, queue_id)
            .map(|cq| cq.min_offset())
            .unwrap_or(0)
    }

    /// Whether the message at a queue offset is likely out of the page cache (RocketMQ's
    /// `checkInDiskByConsumeOffset`); false if there is no such message.
    pub fn check_in_disk_by_consume_offset(&self, topic: &str, queue_id: i32, offset: i64) -> bool {
        self.find_consume_queue(topic, queue_id)
            .and_then(|cq| cq.get(offset))
            .filter(|u| !u.is_blank())
            .map(|u| self.commit_log.max_offset() - u.commit_log_offset > self.memory_for_cache)
            .unwrap_or(false)
    }

    /// The record at a physical offset.
    pub fn look_message_by_offset(&self, commit_log_offset: i64) -> Option<Bytes> {
        self.commit_log.read_record(commit_log_offset)
    }

    /// Store timestamp of the message at a queue offset.
    pub fn message_store_timestamp(&self, topic: &str, queue_id: i32, offset: i64) -> Option<i64> {
        let unit = self.find_consume_queue(topic, queue_id)?.get(offset)?;
        let bytes = self.commit_log.read(unit.commit_log_offset, unit.size)?;
        match record::decode(&bytes, false) {
            Ok(Decoded::Message(v)) => Some(v.store_timestamp),
            _ => None,
        }
    }

    /// The CommitLog's first and one-past-last offsets.
    pub fn commit_log_range(&self) -> (i64, i64) {
        (self.commit_log.min_offset(), self.commit_log.max_offset())
    }

    /// Every (topic, queue id) with a consume queue.
    pub fn topic_queues(&self) -> Vec<(String, i32)> {
        let mut out: Vec<_> = self
            .queues
            .read()
            .iter()
            .flat_map(|(t, q)| q.keys().map(move |id| (t.clone(), *id)))
            .collect();
        out.sort();
        out
    }

    /// Flushes the CommitLog and every consume queue, then the checkpoint.
    pub fn flush(&self) -> Result<()> {
        let ts = self.commit_log.last_store_timestamp();
        self.commit_log.flush()?;
        for cq in self.all_queues() {
            cq.flush()?;
        }
        Checkpoint {
            physic_msg_timestamp: ts,
            logics_msg_timestamp: ts,
            index_msg_timestamp: ts,
        }
        .write(&self.root.join("checkpoint"))
    }

    /// Stops the flush thread, flushes everything, removes `abort` and releases `lock`.
    /// Idempotent.
    pub fn shutdown(&self) -> Result<()> {
        if self.shut_down.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.flush_state.lock().stop = true;
        self.flush_wake.notify_all();
        if let Some(handle) = self.flusher.lock().take() {
            if handle.thread().id() != std::thread::current().id() {
                let _ = handle.join();
            }
        }
        self.flush()?;
        let abort = self.root.join("abort");
        match std::fs::remove_file(&abort) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(StoreError::io(&abort, e)),
        }
        self.lock.lock().take();
        tracing::info!(root = %self.root.display(), "store shut down cleanly");
        Ok(())
    }

    /// Whether [`MessageStore::shutdown`] ran.
    pub fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::Acquire)
    }

    /// File names of the CommitLog, in order (diagnostics and tests).
    pub fn commit_log_files(&self) -> Vec<u64> {
        self.commit_log
            .files()
            .files()
            .iter()
            .filter_map(|f| f.path().file_name()?.to_str().and_then(parse_file_name))
            .collect()
    }
}

impl Drop for MessageStore {
    fn drop(&mut self) {
        if !self.shut_down.load(Ordering::Acquire) {
            if let Err(e) = self.shutdown() {
                tracing::error!(error = %e, "store shutdown on drop failed");
            }
        }
    }
}

/// The background flusher: CommitLog every `flushIntervalCommitLog` when enough pages are dirty
/// (or the thorough interval passed), consume queues every `flushIntervalConsumeQueue`, then the
/// checkpoint. Holds only a weak reference so dropping the store stops it.
fn flush_loop(store: Weak<MessageStore>) {
    let mut last_thorough = Instant::now();
    let mut last_cq = Instant::now();
    loop {
        let interval = match store.upgrade() {
            Some(s) => Duration::from_millis(s.config.flush_interval_commit_log.max(1)),
            None => return,
        };
        {
            let Some(s) = store.upgrade() else { return };
            let mut state = s.flush_state.lock();
            if state.stop {
                return;
            }
            s.flush_wake.wait_for(&mut state, interval);
            if state.stop {
                return;
            }
        }
        let Some(s) = store.upgrade() else { return };
        let thorough = last_thorough.elapsed()
            >= Duration::from_millis(s.config.flush_commit_log_thorough_interval);
        let dirty_pages = s.commit_log.files().dirty_bytes() / 4096;
        let ts = s.commit_log.last_store_timestamp();
        if thorough || dirty_pages >= s.config.flush_commit_log_least_pages {
            if thorough {
                last_thorough = Instant::now();
            }
            if let Err(e) = s.commit_log.flush() {
                tracing::error!(error = %e, "commit log flush failed");
                continue;
            }
        }
        if last_cq.elapsed() >= Duration::from_millis(s.config.flush_interval_consume_queue) {
            last_cq = Instant::now();
            let mut ok = true;
            for cq in s.all_queues() {
                if let Err(e) = cq.flush() {
                    tracing::error!(error = %e, "consume queue flush failed");
                    ok = false;
                }
            }
            let physic = if s.commit_log.files().dirty_bytes() == 0 {
                ts
            } else {
                0
            };
            if ok && physic > 0 {
                let cp = Checkpoint {
                    physic_msg_timestamp: physic,
                    logics_msg_timestamp: ts,
                    index_msg_timestamp: ts,
                };
                if let Err(e) = cp.write(&s.root.join("checkpoint")) {
                    tracing::error!(error = %e, "checkpoint write failed");
                }
            }
        }
    }
}
