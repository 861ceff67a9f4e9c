//! `MessageStore`: the CommitLog, the consume queues, the index and the schedule service,
//! with recovery, flushing and retention, behind one API used by the broker and by the
//! embedded Python store.
//!
//! Files under the root: `commitlog/`, `consumequeue/{topic}/{queueId}/`, `index/`,
//! `checkpoint`, `abort` (present while open: found at start = the last run did not shut down
//! cleanly), `lock` (held while open), `config/delayOffset.json` (the rest of `config/` is the
//! broker's).
//!
//! Background threads (each holds only a weak reference, so dropping the store stops them):
//! flush (group commit or periodic flush, consume queues, checkpoint), index, schedule
//! (delayed messages), clean (retention).

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::{Condvar, Mutex, RwLock};
use rustc_hash::FxHashMap;

use crate::checkpoint::{Checkpoint, StoreLock};
use crate::commit_log::{AppendResult, CommitLog, DispatchRequest};
use crate::config::{FlushDiskType, StoreConfig};
use crate::consume_queue::{ConsumeQueue, CqUnit};
use crate::delay;
use crate::error::{Result, StoreError};
use crate::flush::{FlushTicket, GroupCommit};
use crate::get::{GetMessageResult, GetMessageStatus};
use crate::index_service::{IndexConfig, IndexService};
use crate::io::{FsStorage, Storage};
use crate::mapped_file::parse_file_name;
use crate::padded::Padded;
use crate::schedule::ScheduleService;
use rocketpy_protocol::flag::message as sys_flag;
use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::message::record::{self, Decoded, MessageToStore, RecordView};
use rocketpy_protocol::topic::validate_topic;
use rocketpy_protocol::topic::SCHEDULE_TOPIC;

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

/// Puts that are stored and visible; under SYNC_FLUSH, `flush` completes when they are durable.
#[derive(Debug)]
pub struct Appended {
    /// Placement of each message, in order.
    pub results: Vec<AppendResult>,
    /// The durability wait, when the flush mode and the messages ask for one.
    pub flush: Option<FlushTicket>,
}

type QueueTable = FxHashMap<String, FxHashMap<i32, Arc<ConsumeQueue>>>;

/// Stops the background threads and wakes them from their sleeps.
#[derive(Default)]
struct StopSignal {
    stopped: Mutex<bool>,
    cond: Condvar,
}

impl StopSignal {
    /// Sleeps up to `d`; `false` if the store is stopping.
    fn sleep(&self, d: Duration) -> bool {
        let mut stopped = self.stopped.lock();
        if !*stopped {
            self.cond.wait_for(&mut stopped, d);
        }
        !*stopped
    }

    fn stop(&self) {
        *self.stopped.lock() = true;
        self.cond.notify_all();
    }

    fn is_stopped(&self) -> bool {
        *self.stopped.lock()
    }
}

/// The message store.
pub struct MessageStore {
    pub(crate) config: StoreConfig,
    pub(crate) storage: Arc<dyn Storage>,
    root: PathBuf,
    pub(crate) commit_log: CommitLog,
    /// Every consume queue. Entries are only ever added (never removed or replaced), which is
    /// what lets `put_queues` copy them.
    queues: Padded<RwLock<QueueTable>>,
    /// The put path's own copy of `queues`, used only by `dispatch`, which runs under the
    /// CommitLog's put lock (so this mutex is never contended). It keeps appends off the
    /// shared RwLock, whose reader count every lookup on every core writes.
    put_queues: Padded<Mutex<QueueTable>>,
    pub(crate) index: IndexService,
    schedule: ScheduleService,
    delay_levels: Vec<i64>,
    memory_for_cache: i64,
    /// Set once (by the broker); read without a lock on every put.
    listener: std::sync::OnceLock<Arc<dyn MessageArrivingListener>>,
    group_commit: Arc<GroupCommit>,
    pub(crate) disk_full: AtomicBool,
    physic_flushed_ts: AtomicI64,
    logics_flushed_ts: AtomicI64,
    index_flushed_ts: AtomicI64,
    shut_down: AtomicBool,
    stop: Arc<StopSignal>,
    threads: Mutex<Vec<JoinHandle<()>>>,
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

pub(crate) fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl MessageStore {
    /// Opens (creating if needed) the store at `config.store_path_root_dir` on the real file
    /// system, recovers it and starts its background threads.
    pub fn open(config: StoreConfig) -> Result<Arc<MessageStore>> {
        Self::open_with(config, FsStorage::shared())
    }

    /// [`MessageStore::open`] on any [`Storage`] (tests use a simulated disk).
    pub fn open_with(config: StoreConfig, storage: Arc<dyn Storage>) -> Result<Arc<MessageStore>> {
        config.validate()?;
        let root = config.store_path_root_dir.clone();
        let lock = StoreLock::acquire(storage.as_ref(), &root)?;
        let abort = root.join("abort");
        let was_abnormal = storage
            .file_len(&abort)
            .map_err(|e| StoreError::io(&abort, e))?
            .is_some();
        let delay_levels = delay::parse_delay_levels(&config.message_delay_level)?;
        let index = IndexService::new(
            storage.clone(),
            config.index_dir(),
            IndexConfig {
                enabled: config.message_index_enable,
                slot_num: config.max_hash_slot_num,
                max_index: config.max_index_num,
            },
        );
        let schedule = ScheduleService::load(storage.as_ref(), &root, delay_levels.clone())?;
        let store = Arc::new(MessageStore {
            commit_log: CommitLog::new(
                storage.clone(),
                config.commit_log_dir(),
                config.mapped_file_size_commit_log,
            ),
            queues: Padded(RwLock::new(FxHashMap::default())),
            put_queues: Padded(Mutex::new(FxHashMap::default())),
            index,
            schedule,
            delay_levels,
            memory_for_cache: total_physical_memory() / 100
                * config.access_message_in_memory_max_ratio as i64,
            listener: std::sync::OnceLock::new(),
            group_commit: Arc::default(),
            disk_full: AtomicBool::new(false),
            physic_flushed_ts: AtomicI64::new(0),
            logics_flushed_ts: AtomicI64::new(0),
            index_flushed_ts: AtomicI64::new(0),
            shut_down: AtomicBool::new(false),
            stop: Arc::default(),
            threads: Mutex::new(Vec::new()),
            lock: Mutex::new(Some(lock)),
            root: root.clone(),
            storage: storage.clone(),
            config,
            was_abnormal,
        });
        if was_abnormal {
            tracing::warn!(root = %root.display(), "abort file found: the last run did not shut down cleanly; recovering");
        }
        store.load_and_recover()?;
        storage
            .write_atomic(&abort, b"")
            .map_err(|e| StoreError::io(&abort, e))?;
        store.start_threads()?;
        Ok(store)
    }

    fn start_threads(self: &Arc<Self>) -> Result<()> {
        // Background loops yield the CPU to puts and reads (the flush loop only under
        // ASYNC_FLUSH: under SYNC_FLUSH writers wait for it).
        let async_flush = self.config.flush_disk_type != FlushDiskType::SyncFlush;
        let loops: [(&str, Step, bool); 4] = [
            (
                "rocketpy-store-flush",
                MessageStore::flush_step,
                async_flush,
            ),
            ("rocketpy-store-index", MessageStore::index_step, true),
            (
                "rocketpy-store-schedule",
                MessageStore::schedule_step,
                false,
            ),
            ("rocketpy-store-clean", MessageStore::clean_step, true),
        ];
        let mut threads = self.threads.lock();
        for (name, step, background) in loops {
            let weak = Arc::downgrade(self);
            let stop = self.stop.clone();
            let handle = std::thread::Builder::new()
                .name(name.into())
                .spawn(move || {
                    if background {
                        crate::io::lower_thread_priority();
                    }
                    run_loop(weak, stop, step)
                })
                .map_err(|e| StoreError::io(&self.root, e))?;
            threads.push(handle);
        }
        Ok(())
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

    /// Sets the listener told about new messages. There is one per store: returns `false`
    /// (and keeps the first) when one was already set.
    pub fn set_arriving_listener(&self, listener: Arc<dyn MessageArrivingListener>) -> bool {
        self.listener.set(listener).is_ok()
    }

    // -- recovery -------------------------------------------------------------------------

    fn load_and_recover(&self) -> Result<()> {
        self.commit_log.load()?;
        self.load_consume_queues()?;
        for cq in self.all_queues() {
            cq.recover()?;
        }
        let checkpoint = Checkpoint::read(self.storage.as_ref(), &self.root.join("checkpoint"))?;
        let files = self.commit_log.files().files();
        let start = if self.was_abnormal {
            self.abnormal_start_index(&files, &checkpoint)
        } else {
            files.len().saturating_sub(3)
        };
        // Pass 1 re-dispatches from `start`. A consume queue that lacks units from before
        // `start` (a lost or truncated consume-queue file) shows as a gap: then pass 2 rebuilds
        // every queue from the first file, instead of numbering around the hole.
        let gap = AtomicBool::new(false);
        let mut end = self
            .commit_log
            .recover(start, true, |view| self.redispatch(view, start > 0, &gap))?;
        if gap.load(Ordering::Acquire) {
            tracing::warn!("consume queues miss units from before the recovery window; rebuilding from the first CommitLog file");
            end = self
                .commit_log
                .recover(0, true, |view| self.redispatch(view, false, &gap))?;
        }
        let commit_min = self.commit_log.min_offset();
        let mut table: HashMap<String, HashMap<i32, i64>> = HashMap::new();
        for cq in self.all_queues() {
            cq.truncate_dirty(end)?;
            cq.correct_min_offset(commit_min);
            table
                .entry(cq.topic().to_owned())
                .or_default()
                .insert(cq.queue_id(), cq.max_offset());
        }
        self.commit_log.set_queue_offsets(table);
        self.index.load(
            self.was_abnormal,
            checkpoint.index_msg_timestamp,
            commit_min,
        )?;
        self.schedule.recover(&self.commit_log);
        // Saved now, so a crash before the next save still leaves a scan point for recover().
        self.schedule
            .persist(self.storage.as_ref(), || self.commit_log.max_offset(), true)?;
        let ts = self.commit_log.last_store_timestamp();
        self.physic_flushed_ts.store(ts, Ordering::Release);
        self.logics_flushed_ts.store(ts, Ordering::Release);
        tracing::info!(root = %self.root.display(), commit_log_end = end, abnormal = self.was_abnormal, "store recovered");
        Ok(())
    }

    /// Abnormal recovery starts from the newest file whose first message is older than the
    /// checkpoint (minus slack); with no usable checkpoint, from the first file.
    fn abnormal_start_index(
        &self,
        files: &[Arc<crate::mapped_file::MappedFile>],
        cp: &Checkpoint,
    ) -> usize {
        let min_ts = cp.min_timestamp();
        if min_ts <= 0 {
            return 0;
        }
        for (i, f) in files.iter().enumerate().rev() {
            // SAFETY: recovery runs before any writer starts.
            let data = unsafe { f.whole() };
            if let Ok(Decoded::Message(v)) = record::decode(data, false) {
                if v.store_timestamp <= min_ts {
                    return i;
                }
            }
        }
        0
    }

    fn redispatch(&self, view: &RecordView<'_>, detect_gaps: bool, gap: &AtomicBool) -> Result<()> {
        if validate_topic(view.topic).is_err() {
            tracing::warn!(
                topic = view.topic,
                offset = view.physical_offset,
                "record with an invalid topic name not dispatched"
            );
            return Ok(());
        }
        let req = DispatchRequest {
            topic: view.topic,
            queue_id: view.queue_id,
            commit_log_offset: view.physical_offset,
            msg_size: view.total_size,
            tags_code: delay::compute_tags_code(
                view.topic,
                view.properties,
                view.store_timestamp,
                &self.delay_levels,
            ),
            store_timestamp: view.store_timestamp,
            consume_queue_offset: view.queue_offset,
            properties: view.properties,
            sys_flag: view.sys_flag,
        };
        if detect_gaps && req.is_consumable() {
            let max = self
                .find_consume_queue(view.topic, view.queue_id)
                .map(|cq| cq.max_offset())
                .unwrap_or(0);
            if max < view.queue_offset {
                gap.store(true, Ordering::Release);
                return Ok(());
            }
        }
        match self.dispatch(&req) {
            Err(StoreError::Corrupt { what, reason }) => {
                tracing::error!(offset = view.physical_offset, %what, %reason, "record with a damaged header not dispatched");
                Ok(())
            }
            other => other,
        }
    }

    fn load_consume_queues(&self) -> Result<()> {
        let dir = self.config.consume_queue_dir();
        let topics = self
            .storage
            .list(&dir)
            .map_err(|e| StoreError::io(&dir, e))?;
        let mut table = self.queues.write();
        for name in topics {
            if validate_topic(&name).is_err() {
                tracing::warn!(dir = %dir.join(&name).display(), "ignoring consume queue directory with an invalid topic name");
                continue;
            }
            let topic_dir = dir.join(&name);
            for q in self
                .storage
                .list(&topic_dir)
                .map_err(|e| StoreError::io(&topic_dir, e))?
            {
                let Ok(queue_id) = q.parse::<i32>() else {
                    continue;
                };
                if queue_id < 0 || !self.storage.is_dir(&topic_dir.join(&q)) {
                    continue;
                }
                let cq = ConsumeQueue::new(
                    self.storage.clone(),
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

    pub(crate) fn all_queues(&self) -> Vec<Arc<ConsumeQueue>> {
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
                    self.storage.clone(),
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
        let tags_code = if req.topic == SCHEDULE_TOPIC {
            delay::compute_tags_code(
                req.topic,
                req.properties,
                req.store_timestamp,
                &self.delay_levels,
            )
        } else {
            req.tags_code
        };
        let mut cache = self.put_queues.lock();
        let cached = cache
            .get(req.topic)
            .is_some_and(|q| q.contains_key(&req.queue_id));
        if !cached {
            let cq = self.find_or_create_consume_queue(req.topic, req.queue_id);
            cache
                .entry(req.topic.to_owned())
                .or_default()
                .insert(req.queue_id, cq);
        }
        let cq = &cache[req.topic][&req.queue_id];
        cq.put(
            req.consume_queue_offset,
            CqUnit {
                commit_log_offset: req.commit_log_offset,
                size: req.msg_size,
                tags_code,
            },
        )
    }

    // -- put ------------------------------------------------------------------------------

    fn check_message(&self, msg: &MessageToStore) -> Result<()> {
        if self.shut_down.load(Ordering::Acquire) {
            return Err(StoreError::ShutDown);
        }
        if self.disk_full.load(Ordering::Acquire) {
            let (total, avail) = self.storage.disk_space(&self.root).unwrap_or((1, 1));
            return Err(StoreError::DiskFull {
                used_percent: (total.saturating_sub(avail) * 100)
                    .checked_div(total)
                    .unwrap_or(100),
                limit_percent: self.config.disk_space_warning_level_ratio,
            });
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

    /// A message with `DELAY=n` goes to the schedule topic (queue `n - 1`), its real topic and
    /// queue kept in properties; the schedule service delivers it when due.
    fn to_schedule_topic<'a>(&self, msg: &'a MessageToStore) -> Cow<'a, MessageToStore> {
        let tx = sys_flag::transaction_type(msg.sys_flag);
        if msg.topic == SCHEDULE_TOPIC
            || !matches!(
                tx,
                sys_flag::TRANSACTION_NOT_TYPE | sys_flag::TRANSACTION_COMMIT_TYPE
            )
        {
            return Cow::Borrowed(msg);
        }
        let level = match properties::find(&msg.properties, keys::DELAY_TIME_LEVEL)
            .map(|l| l.trim().parse::<i64>())
        {
            Some(Ok(l)) if l > 0 => l.min(self.delay_levels.len() as i64) as i32,
            _ => return Cow::Borrowed(msg),
        };
        let mut props: Vec<(&str, &str)> = properties::pairs(&msg.properties)
            .filter(|(k, _)| {
                *k != keys::REAL_TOPIC && *k != keys::REAL_QUEUE_ID && *k != keys::DELAY_TIME_LEVEL
            })
            .collect();
        let level_text = level.to_string();
        let qid = msg.queue_id.to_string();
        props.push((keys::DELAY_TIME_LEVEL, &level_text));
        props.push((keys::REAL_TOPIC, &msg.topic));
        props.push((keys::REAL_QUEUE_ID, &qid));
        let mut scheduled = msg.clone();
        scheduled.properties = properties::encode(props);
        scheduled.topic = SCHEDULE_TOPIC.to_owned();
        scheduled.queue_id = level - 1;
        Cow::Owned(scheduled)
    }

    /// Stores messages contiguously (all validated first) and returns at once; under
    /// SYNC_FLUSH the result carries the ticket to wait on before acknowledging.
    pub fn put_messages_nowait(&self, msgs: &[MessageToStore]) -> Result<Appended> {
        for msg in msgs {
            self.check_message(msg)?;
        }
        if msgs.is_empty() {
            return Ok(Appended {
                results: Vec::new(),
                flush: None,
            });
        }
        let needs_schedule = msgs
            .iter()
            .any(|m| properties::find(&m.properties, keys::DELAY_TIME_LEVEL).is_some());
        let transformed: Vec<MessageToStore>;
        let msgs: &[MessageToStore] = if needs_schedule {
            transformed = msgs
                .iter()
                .map(|m| self.to_schedule_topic(m).into_owned())
                .collect();
            &transformed
        } else {
            msgs
        };
        let results = self.commit_log.put_batch(msgs, |req| self.dispatch(req))?;
        let wait = self.config.flush_disk_type == FlushDiskType::SyncFlush
            && msgs
                .iter()
                .any(|m| properties::find(&m.properties, keys::WAIT_STORE_MSG_OK) != Some("false"));
        let flush = match (wait, results.last()) {
            (true, Some(_)) => Some(self.group_commit.request()),
            _ => None,
        };
        if let Some(listener) = self.listener.get() {
            for (msg, r) in msgs.iter().zip(&results) {
                listener.arriving(&msg.topic, msg.queue_id, r.logics_offset + 1, msg.tags_code);
            }
        }
        Ok(Appended { results, flush })
    }

    /// Stores messages and, under SYNC_FLUSH, waits until they are on disk (at most
    /// `syncFlushTimeout`, after which their status is FLUSH_DISK_TIMEOUT: stored, not yet
    /// known durable).
    pub fn put_messages(&self, msgs: &[MessageToStore]) -> Result<Vec<PutMessageResult>> {
        let appended = self.put_messages_nowait(msgs)?;
        let status = match &appended.flush {
            Some(ticket) if !ticket.wait(Duration::from_millis(self.config.sync_flush_timeout)) => {
                PutStatus::FlushDiskTimeout
            }
            _ => PutStatus::PutOk,
        };
        Ok(appended
            .results
            .into_iter()
            .map(|append| PutMessageResult { status, append })
            .collect())
    }

    /// Stores one message (see [`MessageStore::put_messages`]).
    pub fn put_message(&self, msg: MessageToStore) -> Result<PutMessageResult> {
        let mut results = self.put_messages(std::slice::from_ref(&msg))?;
        Ok(results.remove(0))
    }

    // -- get ------------------------------------------------------------------------------

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

    /// The record named by an offset message id (store address + physical offset).
    pub fn look_message_by_offset_msg_id(&self, msg_id: &str) -> Result<Option<Bytes>> {
        let (_, offset) = record::parse_offset_msg_id(msg_id)?;
        Ok(self.look_message_by_offset(offset))
    }

    fn store_timestamp_at(&self, cq: &ConsumeQueue, index: i64) -> Option<i64> {
        let unit = cq.get(index).filter(|u| !u.is_blank())?;
        let bytes = self.commit_log.read(unit.commit_log_offset, unit.size)?;
        match record::decode(&bytes, false) {
            Ok(Decoded::Message(v)) => Some(v.store_timestamp),
            _ => None,
        }
    }

    /// Store timestamp of the message at a queue offset.
    pub fn message_store_timestamp(&self, topic: &str, queue_id: i32, offset: i64) -> Option<i64> {
        let cq = self.find_consume_queue(topic, queue_id)?;
        self.store_timestamp_at(&cq, offset)
    }

    /// Store timestamp of the first readable message of a queue.
    pub fn earliest_message_time_in_queue(&self, topic: &str, queue_id: i32) -> Option<i64> {
        let cq = self.find_consume_queue(topic, queue_id)?;
        (cq.min_offset()..cq.max_offset()).find_map(|i| self.store_timestamp_at(&cq, i))
    }

    /// Store timestamp of the first message of the CommitLog.
    pub fn earliest_message_time(&self) -> Option<i64> {
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
    pub fn offset_by_time(&self, topic: &str, queue_id: i32, timestamp: i64) -> i64 {
        let Some(cq) = self.find_consume_queue(topic, queue_id) else {
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
    pub fn query_message(
        &self,
        topic: &str,
        key: &str,
        max_num: usize,
        begin: i64,
        end: i64,
    ) -> Vec<Bytes> {
        let target = self.commit_log.max_offset();
        let deadline = Instant::now() + Duration::from_secs(3);
        while self.config.message_index_enable
            && self.index.progress() < target
            && Instant::now() < deadline
        {
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
        let mut out: Vec<_> = self
            .queues
            .read()
            .iter()
            .flat_map(|(t, q)| q.keys().map(move |id| (t.clone(), *id)))
            .collect();
        out.sort();
        out
    }

    /// Next schedule offset per delay level.
    pub fn delay_offsets(&self) -> std::collections::BTreeMap<i32, i64> {
        self.schedule.offsets()
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

    // -- flush, shutdown --------------------------------------------------------------------

    /// Flushes the CommitLog, the consume queues and the index, then the checkpoint.
    pub fn flush(&self) -> Result<()> {
        let ts = self.commit_log.last_store_timestamp();
        self.commit_log.flush()?;
        self.physic_flushed_ts.fetch_max(ts, Ordering::AcqRel);
        for cq in self.all_queues() {
            cq.flush()?;
        }
        self.logics_flushed_ts.fetch_max(ts, Ordering::AcqRel);
        let index_ts = self.index.last_timestamp();
        self.index.flush()?;
        self.index_flushed_ts.fetch_max(index_ts, Ordering::AcqRel);
        self.write_checkpoint()
    }

    fn write_checkpoint(&self) -> Result<()> {
        Checkpoint {
            physic_msg_timestamp: self.physic_flushed_ts.load(Ordering::Acquire),
            logics_msg_timestamp: self.logics_flushed_ts.load(Ordering::Acquire),
            index_msg_timestamp: self.index_flushed_ts.load(Ordering::Acquire),
        }
        .write(self.storage.as_ref(), &self.root.join("checkpoint"))
    }

    fn stop_threads(&self) {
        self.stop.stop();
        self.group_commit.notify();
        let threads: Vec<_> = self.threads.lock().drain(..).collect();
        for handle in threads {
            if handle.thread().id() != std::thread::current().id() {
                let _ = handle.join();
            }
        }
    }

    /// Stops the background threads, finishes indexing, flushes everything, saves the delay
    /// offsets, removes `abort` and releases `lock`. Idempotent.
    pub fn shutdown(&self) -> Result<()> {
        if self.shut_down.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.stop_threads();
        if let Err(e) = self.index.index_pending(&self.commit_log) {
            tracing::error!(error = %e, "indexing at shutdown failed; the index is rebuilt at start-up");
        }
        self.flush()?;
        self.group_commit.fail_all();
        self.schedule
            .persist(self.storage.as_ref(), || self.commit_log.max_offset(), true)?;
        let abort = self.root.join("abort");
        self.storage
            .remove(&abort)
            .map_err(|e| StoreError::io(&abort, e))?;
        self.lock.lock().take();
        tracing::info!(root = %self.root.display(), "store shut down cleanly");
        Ok(())
    }

    /// Stops the store as a crash would: no flush, `abort` left in place, pending SYNC_FLUSH
    /// waits failed. For crash tests; what reaches the disk is up to the [`Storage`].
    pub fn halt(&self) {
        if self.shut_down.swap(true, Ordering::AcqRel) {
            return;
        }
        self.stop_threads();
        self.group_commit.fail_all();
        self.lock.lock().take();
    }

    /// Whether [`MessageStore::shutdown`] (or [`MessageStore::halt`]) ran.
    pub fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::Acquire)
    }

    // -- background steps: each returns how long to sleep before the next -------------------

    fn flush_step(&self, st: &mut LoopState) -> Duration {
        let sync = self.config.flush_disk_type == FlushDiskType::SyncFlush;
        if sync {
            // Group commit: one msync serves every put that asked before it started.
            if let Some(mut batch) = self.group_commit.take(Duration::from_millis(10)) {
                // Concurrent writers: the writers served by the last flush are still waking
                // up and re-queueing; give them up to GROUP_COMMIT_WINDOW so one msync serves
                // them too. A lone writer (last batch of one) never waits.
                let expected = st.last_group_commit;
                let deadline = Instant::now() + GROUP_COMMIT_WINDOW;
                while batch.len() < expected && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_micros(20));
                    if let Some(more) = self.group_commit.take(Duration::ZERO) {
                        batch.extend(more);
                    }
                }
                st.last_group_commit = batch.len();
                let ts = self.commit_log.last_store_timestamp();
                let ok = match self.commit_log.flush() {
                    Ok(()) => {
                        self.physic_flushed_ts.fetch_max(ts, Ordering::AcqRel);
                        true
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "sync flush failed");
                        false
                    }
                };
                for t in batch {
                    t.complete(ok);
                }
            }
        }
        let now = Instant::now();
        if !sync && now >= st.next_commit_log_flush {
            // ASYNC_FLUSH: every interval, hand new pages to the kernel's write-back without
            // waiting; every thorough interval, msync (durable) and only then advance the
            // checkpoint. An msync every interval forces journal commits that stall the
            // writers' page faults, holding puts to the disk's speed.
            st.next_commit_log_flush =
                now + Duration::from_millis(self.config.flush_interval_commit_log.max(1));
            let thorough = now.duration_since(st.last_thorough)
                >= Duration::from_millis(self.config.flush_commit_log_thorough_interval);
            let pages = self.commit_log.files().dirty_bytes() / 4096;
            if thorough {
                st.last_thorough = now;
                let ts = self.commit_log.last_store_timestamp();
                match self.commit_log.flush() {
                    Ok(()) => {
                        self.physic_flushed_ts.fetch_max(ts, Ordering::AcqRel);
                    }
                    Err(e) => tracing::error!(error = %e, "commit log flush failed"),
                }
            } else if pages >= self.config.flush_commit_log_least_pages {
                if let Err(e) = self.commit_log.files().start_writeback() {
                    tracing::error!(error = %e, "commit log write-back failed");
                }
            }
        }
        if now >= st.next_logic_flush {
            st.next_logic_flush =
                now + Duration::from_millis(self.config.flush_interval_consume_queue.max(1));
            let ts = self.commit_log.last_store_timestamp();
            let mut ok = true;
            for cq in self.all_queues() {
                if let Err(e) = cq.flush() {
                    tracing::error!(error = %e, "consume queue flush failed");
                    ok = false;
                }
            }
            if ok {
                self.logics_flushed_ts.fetch_max(ts, Ordering::AcqRel);
                if let Err(e) = self.write_checkpoint() {
                    tracing::error!(error = %e, "checkpoint write failed");
                }
            }
        }
        if sync {
            Duration::ZERO
        } else {
            st.next_commit_log_flush
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(100))
        }
    }

    fn index_step(&self, st: &mut LoopState) -> Duration {
        let busy = match self.index.index_pending(&self.commit_log) {
            Ok(progress) => progress,
            Err(e) => {
                tracing::error!(error = %e, "indexing failed; retrying");
                false
            }
        };
        if Instant::now() >= st.next_index_flush {
            st.next_index_flush = Instant::now() + Duration::from_secs(1);
            let ts = self.index.last_timestamp();
            match self.index.flush() {
                Ok(()) => {
                    self.index_flushed_ts.fetch_max(ts, Ordering::AcqRel);
                }
                Err(e) => tracing::error!(error = %e, "index flush failed"),
            }
        }
        if busy {
            Duration::ZERO
        } else {
            Duration::from_millis(10)
        }
    }

    fn schedule_step(&self, st: &mut LoopState) -> Duration {
        let now = now_millis();
        let next = self.schedule.deliver_due(
            now,
            |queue_id| self.find_consume_queue(SCHEDULE_TOPIC, queue_id),
            &self.commit_log,
            |msg| {
                self.put_messages_nowait(std::slice::from_ref(&msg))
                    .map(|_| ())
            },
        );
        if Instant::now() >= st.next_delay_persist {
            st.next_delay_persist = Instant::now()
                + Duration::from_millis(self.config.flush_delay_offset_interval.max(100));
            if let Err(e) = self.schedule.persist(
                self.storage.as_ref(),
                || self.commit_log.max_offset(),
                false,
            ) {
                tracing::error!(error = %e, "saving delay offsets failed");
            }
        }
        let wait = next
            .map(|t| (t - now_millis()).clamp(1, 100))
            .unwrap_or(100);
        Duration::from_millis(wait as u64)
    }

    fn clean_step(&self, st: &mut LoopState) -> Duration {
        if Instant::now() >= st.next_clean {
            st.next_clean = Instant::now()
                + Duration::from_millis(self.config.clean_resource_interval.max(100));
            match self.disk_used_ratio() {
                Ok(ratio) => {
                    if let Err(e) = self.clean_files(now_millis(), ratio, false) {
                        tracing::error!(error = %e, "retention clean-up failed");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "cannot read disk usage"),
            }
        }
        Duration::from_millis(100)
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

/// Longest wait for more SYNC_FLUSH puts to share a flush (see `flush_step`).
const GROUP_COMMIT_WINDOW: Duration = Duration::from_micros(300);

/// Timers of the background loops.
pub(crate) struct LoopState {
    last_group_commit: usize,
    next_commit_log_flush: Instant,
    last_thorough: Instant,
    next_logic_flush: Instant,
    next_index_flush: Instant,
    next_delay_persist: Instant,
    next_clean: Instant,
}

impl Default for LoopState {
    fn default() -> Self {
        let now = Instant::now();
        LoopState {
            last_group_commit: 1,
            next_commit_log_flush: now,
            last_thorough: now,
            next_logic_flush: now,
            next_index_flush: now,
            next_delay_persist: now,
            next_clean: now + Duration::from_secs(1),
        }
    }
}

/// One iteration of a background loop; returns how long to sleep before the next.
type Step = fn(&MessageStore, &mut LoopState) -> Duration;

fn run_loop(store: Weak<MessageStore>, stop: Arc<StopSignal>, step: Step) {
    let mut st = LoopState::default();
    loop {
        let wait = match store.upgrade() {
            Some(s) if !stop.is_stopped() => step(&s, &mut st),
            _ => return,
        };
        if !wait.is_zero() && !stop.sleep(wait) {
            return;
        }
    }
}
