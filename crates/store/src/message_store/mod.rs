//! `MessageStore`: the CommitLog, the consume queues, the index and the schedule service,
//! with recovery, flushing and retention, behind one API used by the broker and by the
//! embedded Python store.
//!
//! Files under the root: `commitlog/`, `consumequeue/{topic}/{queueId}/`, `index/`,
//! `checkpoint`, `abort` (present while open: found at start = the last run did not shut down
//! cleanly), `lock` (held while open), `config/delayOffset.json` (the rest of `config/` is the
//! broker's).
//!
//! Background threads, one per service (see `start_threads`): flush (group commit or periodic
//! flush, consume queues, checkpoint), index, schedule (delayed messages), clean (retention).
//! They hold their services, and the schedule thread a weak reference to the store; shutdown
//! (also on drop) stops and joins them all.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use crate::config::BrokerRole;

use parking_lot::Mutex;
use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::message::record::MessageToStore;
use rocketpy_protocol::topic::{validate_topic, SCHEDULE_TOPIC};

use crate::background::Workers;
use crate::checkpoint::StoreLock;
use crate::cleanup::{CleanReport, CleanService};
use crate::commit_log::{AppendResult, CommitLog};
use crate::config::StoreConfig;
use crate::consume_queue::ConsumeQueue;
use crate::delay;
use crate::error::{Result, StoreError};
use crate::flush::{FlushService, FlushTicket, FlushTimers};
use crate::index_service::{IndexConfig, IndexService};
use crate::io::{FsStorage, Storage};
use crate::now_millis;
use crate::queue_table::ConsumeQueueTable;
use crate::recovery::Recovery;
use crate::schedule::ScheduleService;

mod arriving;
mod reads;

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

/// The message store.
pub struct MessageStore {
    config: StoreConfig,
    storage: Arc<dyn Storage>,
    root: PathBuf,
    pub(crate) commit_log: Arc<CommitLog>,
    pub(crate) queues: Arc<ConsumeQueueTable>,
    index: Arc<IndexService>,
    schedule: ScheduleService,
    flush: Arc<FlushService>,
    pub(crate) clean: Arc<CleanService>,
    pub(crate) delay_levels: Vec<i64>,
    /// See [`QueueReader::memory_for_cache`].
    memory_for_cache: i64,
    /// Set once (by the broker); read without a lock on every put.
    pub(crate) listener: OnceLock<Arc<dyn MessageArrivingListener>>,
    pub(crate) shut_down: AtomicBool,
    workers: Workers,
    /// Topics whose queues the prepare thread creates ahead ([`MessageStore::prepare_queues_later`]).
    to_prepare: parking_lot::Mutex<std::collections::VecDeque<(String, i32)>>,
    lock: Mutex<Option<StoreLock>>,
    was_abnormal: bool,
    /// `brokerRole` at open; changed by controller mode ([`MessageStore::set_role`]).
    role: crate::role::RoleCell,
    /// Controller mode's confirm offset ([`MessageStore::set_read_limit`]).
    read_limit: OnceLock<ReadLimit>,
}

/// Where reads stop (see [`MessageStore::set_read_limit`]).
pub type ReadLimit = Arc<dyn Fn() -> i64 + Send + Sync>;

impl std::fmt::Debug for MessageStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageStore")
            .field("root", &self.root)
            .finish()
    }
}

impl MessageStore {
    /// Opens (creating if needed) the store at `config.store_path_root_dir` on the real file
    /// system, recovers it and starts its background threads.
    pub fn open(config: StoreConfig) -> Result<Arc<MessageStore>> {
        Self::open_with(config, FsStorage::shared())
    }

    /// [`MessageStore::open`] with what computes messages' filter bit maps at dispatch
    /// (kept with `enableConsumeQueueExt`), recovery's re-dispatch included.
    pub fn open_with_bit_maps(
        config: StoreConfig,
        bit_maps: Arc<dyn crate::dispatch::BitMapCalculator>,
    ) -> Result<Arc<MessageStore>> {
        Self::open_parts(config, FsStorage::shared(), Some(bit_maps))
    }

    /// [`MessageStore::open`] on any [`Storage`] (tests use a simulated disk).
    pub fn open_with(config: StoreConfig, storage: Arc<dyn Storage>) -> Result<Arc<MessageStore>> {
        Self::open_parts(config, storage, None)
    }

    fn open_parts(
        config: StoreConfig,
        storage: Arc<dyn Storage>,
        bit_maps: Option<Arc<dyn crate::dispatch::BitMapCalculator>>,
    ) -> Result<Arc<MessageStore>> {
        config.validate()?;
        let root = config.store_path_root_dir.clone();
        let lock = StoreLock::acquire(storage.as_ref(), &root)?;
        let abort = root.join("abort");
        let was_abnormal = storage
            .file_len(&abort)
            .map_err(|e| StoreError::io(&abort, e))?
            .is_some();
        if was_abnormal {
            tracing::warn!(root = %root.display(), "abort file found: the last run did not shut down cleanly; recovering");
        }
        let delay_levels = delay::parse_delay_levels(&config.message_delay_level)?;
        let commit_log = Arc::new(CommitLog::new(
            storage.clone(),
            config.commit_log_dir(),
            config.mapped_file_size_commit_log,
        ));
        let queues = ConsumeQueueTable::new(
            storage.clone(),
            config.consume_queue_dir(),
            config.mapped_file_size_consume_queue,
            delay_levels.clone(),
        );
        let queues = Arc::new(if config.enable_consume_queue_ext {
            queues.with_ext(
                config.consume_queue_ext_dir(),
                config.mapped_file_size_consume_queue_ext,
            )
        } else {
            queues
        });
        if let Some(calc) = bit_maps {
            queues.set_bit_map_calculator(calc);
        }
        let index = Arc::new(IndexService::new(
            storage.clone(),
            config.index_dir(),
            IndexConfig {
                enabled: config.message_index_enable,
                slot_num: config.max_hash_slot_num,
                max_index: config.max_index_num,
            },
        ));
        let schedule = ScheduleService::load(storage.as_ref(), &root, delay_levels.clone())?;
        let last_ts = Recovery {
            storage: storage.as_ref(),
            root: &root,
            commit_log: &commit_log,
            queues: &queues,
            index: &index,
            schedule: &schedule,
            delay_levels: &delay_levels,
            abnormal: was_abnormal,
        }
        .run()?;
        let flush = Arc::new(FlushService::new(
            &config,
            storage.clone(),
            commit_log.clone(),
            queues.clone(),
        ));
        flush.recovered(last_ts);
        let clean = Arc::new(CleanService::new(
            config.clone(),
            storage.clone(),
            commit_log.clone(),
            queues.clone(),
            index.clone(),
        ));
        let store = Arc::new(MessageStore {
            memory_for_cache: crate::io::total_physical_memory() / 100
                * config.access_message_in_memory_max_ratio as i64,
            commit_log,
            queues,
            index,
            schedule,
            flush,
            clean,
            delay_levels,
            listener: OnceLock::new(),
            shut_down: AtomicBool::new(false),
            workers: Workers::default(),
            to_prepare: Default::default(),
            lock: Mutex::new(Some(lock)),
            root,
            storage: storage.clone(),
            role: crate::role::RoleCell::new(config.broker_role),
            read_limit: OnceLock::new(),
            config,
            was_abnormal,
        });
        storage
            .write_atomic(&abort, b"")
            .map_err(|e| StoreError::io(&abort, e))?;
        store.start_threads()?;
        Ok(store)
    }

    /// The background threads: flush, index, schedule (delayed delivery), clean (retention).
    /// All but the SYNC_FLUSH flush loop (writers wait for it) and the schedule loop (due
    /// messages are late) yield the CPU to puts and reads.
    fn start_threads(self: &Arc<Self>) -> Result<()> {
        let flush = self.flush.clone();
        let mut timers = FlushTimers::default();
        self.workers
            .spawn("rocketpy-store-flush", !flush.is_sync(), move || {
                Some(flush.step(&mut timers))
            })?;
        let (index, commit_log, flush) = (
            self.index.clone(),
            self.commit_log.clone(),
            self.flush.clone(),
        );
        let mut next_index_flush = Instant::now();
        self.workers.spawn("rocketpy-store-index", true, move || {
            Some(index.step(
                &commit_log,
                |ts| flush.index_flushed(ts),
                &mut next_index_flush,
            ))
        })?;
        // Delayed delivery writes messages: a slave gets them from its master instead. The
        // worker runs on every store and delivers only while the role is a master's (the role
        // changes in controller mode).
        {
            let weak: Weak<MessageStore> = Arc::downgrade(self);
            let mut next_delay_persist = Instant::now();
            self.workers
                .spawn("rocketpy-store-schedule", false, move || {
                    let store = weak.upgrade()?;
                    if !store.role().is_master() {
                        return Some(Duration::from_millis(500));
                    }
                    Some(store.schedule_step(&mut next_delay_persist))
                })?;
        }
        let weak: Weak<MessageStore> = Arc::downgrade(self);
        self.workers
            .spawn("rocketpy-store-prepare", true, move || {
                let store = weak.upgrade()?;
                let next = store.to_prepare.lock().pop_front();
                Some(match next {
                    Some((topic, queues)) => {
                        if let Err(e) = store.prepare_queues(&topic, queues) {
                            tracing::debug!(topic, error = %e, "consume queues not prepared ahead");
                        }
                        Duration::ZERO
                    }
                    None => Duration::from_millis(20),
                })
            })?;
        let clean = self.clean.clone();
        let mut next_clean = Instant::now() + Duration::from_secs(1);
        self.workers.spawn("rocketpy-store-clean", true, move || {
            Some(clean.step(&mut next_clean))
        })
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

    /// The consume queue of a topic queue, if it exists.
    pub fn find_consume_queue(&self, topic: &str, queue_id: i32) -> Option<Arc<ConsumeQueue>> {
        self.queues.find(topic, queue_id)
    }

    /// The replication role now (`brokerRole`, or what controller mode last set).
    pub fn role(&self) -> BrokerRole {
        self.role.get()
    }

    /// Changes the role (controller mode): a slave refuses puts from now on.
    pub fn set_role(&self, role: BrokerRole) {
        self.role.set(role);
    }

    /// Makes queue reads stop before any record that ends past `limit()` (controller mode's
    /// confirm offset: a consumer never reads bytes that a replica the controller may elect
    /// lacks, which a failover could take back). Set once; `false` if already set.
    pub fn set_read_limit(&self, limit: ReadLimit) -> bool {
        self.read_limit.set(limit).is_ok()
    }

    /// Where queue reads stop now (`i64::MAX` without a limit).
    pub fn read_limit(&self) -> i64 {
        self.read_limit.get().map_or(i64::MAX, |f| f())
    }

    // -- put ------------------------------------------------------------------------------

    fn check_message(&self, msg: &MessageToStore) -> Result<()> {
        if self.shut_down.load(Ordering::Acquire) {
            return Err(StoreError::ShutDown);
        }
        if !self.role().is_master() {
            return Err(StoreError::SlaveRole);
        }
        self.clean.check_space()?;
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
                .map(|m| delay::to_schedule_topic(m, self.delay_levels.len()).into_owned())
                .collect();
            &transformed
        } else {
            msgs
        };
        let results = self
            .commit_log
            .put_batch(msgs, &self.queues)
            .map_err(|e| self.clean.on_write_error(e))?;
        // After the append: the flush that completes the ticket covers these records.
        let flush = self.flush.ticket_for(msgs);
        if let Some(listener) = self.listener.get() {
            arriving::notify(listener.as_ref(), msgs, &results);
        }
        Ok(Appended { results, flush })
    }

    /// Creates the consume-queue files of `topic`'s queues `0..queues` that do not exist yet,
    /// so that its first messages do not wait for directory and file creation under the put
    /// lock (on ext4 those wait for the journal behind the flush threads: milliseconds). For a
    /// topic just created; blocking file-system work, off the request path.
    pub fn prepare_queues(&self, topic: &str, queues: i32) -> Result<()> {
        validate_topic(topic)?;
        for queue_id in 0..queues.max(0) {
            if self
                .find_consume_queue(topic, queue_id)
                .is_some_and(|cq| !cq.files().is_empty())
            {
                continue;
            }
            let next = self.commit_log.next_queue_offset(topic, queue_id);
            self.queues
                .prepare(topic, queue_id, next)
                .map_err(|e| self.clean.on_write_error(e))?;
        }
        Ok(())
    }

    /// Deletes `topic`'s consume queues and their files (DELETE_TOPIC_IN_BROKER); its records
    /// stay in the CommitLog until it expires, as in RocketMQ. Returns how many queues went.
    pub fn delete_topic(&self, topic: &str) -> Result<usize> {
        validate_topic(topic)?;
        let removed = self
            .commit_log
            .forget_topic(topic, || self.queues.remove_topic(topic));
        for cq in &removed {
            cq.files().destroy()?;
            if let Some(ext) = cq.ext() {
                ext.files().destroy()?;
            }
        }
        let _ = std::fs::remove_dir(self.queues.dir().join(topic));
        if let Some(dir) = self.queues.ext_dir() {
            let _ = std::fs::remove_dir(dir.join(topic));
        }
        Ok(removed.len())
    }

    /// [`MessageStore::prepare_queues`] on the store's prepare thread, one topic at a time (a
    /// burst of topic creations must not become a burst of concurrent file creations). Best
    /// effort: a put to a queue not prepared yet creates its file itself.
    pub fn prepare_queues_later(&self, topic: &str, queues: i32) {
        const MAX_PENDING: usize = 100_000;
        let mut pending = self.to_prepare.lock();
        if pending.len() < MAX_PENDING {
            pending.push_back((topic.to_owned(), queues));
        }
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

    /// One retention round at wall-clock time `now` (ms) with the disk `disk_used_ratio` full;
    /// `manual` deletes expired files whatever the hour (see [`crate::cleanup`]).
    pub fn clean_files(&self, now: i64, disk_used_ratio: f64, manual: bool) -> Result<CleanReport> {
        self.clean.clean_files(now, disk_used_ratio, manual)
    }

    /// Flushes the CommitLog, the consume queues and the index, then the checkpoint.
    pub fn flush(&self) -> Result<()> {
        self.flush.flush_all(&self.index)
    }

    fn stop_threads(&self) {
        self.workers.stop(|| self.flush.wake());
        self.commit_log.files().join_background();
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
        self.flush.fail_pending();
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
        self.flush.fail_pending();
        self.lock.lock().take();
    }

    /// Whether [`MessageStore::shutdown`] (or [`MessageStore::halt`]) ran.
    pub fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::Acquire)
    }

    /// Delivers the delayed messages that are due and saves the schedule offsets every
    /// `flushDelayOffsetInterval`; returns how long to sleep.
    fn schedule_step(&self, next_persist: &mut Instant) -> Duration {
        let now = now_millis();
        let next = self.schedule.deliver_due(
            now,
            |queue_id| self.queues.find(SCHEDULE_TOPIC, queue_id),
            &self.commit_log,
            |msg| {
                self.put_messages_nowait(std::slice::from_ref(&msg))
                    .map(|_| ())
            },
        );
        if Instant::now() >= *next_persist {
            *next_persist = Instant::now()
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
