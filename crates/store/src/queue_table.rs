//! `ConsumeQueueTable`: every consume queue of the store, by topic and queue id, and the
//! dispatch of CommitLog records into them.
//!
//! Queues are added by dispatch and removed only with their topic ([`ConsumeQueueTable::remove_topic`],
//! under the CommitLog's put lock like dispatch), which is what lets writers keep their own
//! references: puts keep each queue in the CommitLog's put state ([`crate::put_state`]), and
//! replication and recovery, which dispatch under the put lock too, in this table's own copy
//! (whose mutex is never contended), so appends stay off the shared RwLock whose reader count
//! every lookup on every core writes.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, RwLock};
use rocketpy_protocol::topic::{validate_topic, SCHEDULE_TOPIC};
use rustc_hash::FxHashMap;

use crate::consume_queue::{ConsumeQueue, CqUnit, ExtInfo};
use crate::delay;
use crate::dispatch::{BitMapCalculator, DispatchRequest, QueueUnits};
use crate::error::{Result, StoreError};
use crate::io::Storage;
use crate::padded::Padded;

type Table = FxHashMap<String, FxHashMap<i32, Arc<ConsumeQueue>>>;

/// The consume queues under `consumequeue/`.
pub struct ConsumeQueueTable {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    file_size: usize,
    delay_levels: Vec<i64>,
    queues: Padded<RwLock<Table>>,
    /// The put path's own copy of `queues` (see the module documentation).
    put_queues: Padded<Mutex<Table>>,
    /// Ext files' directory and file size (`enableConsumeQueueExt`).
    ext: Option<(PathBuf, usize)>,
    /// The broker's filter bit maps, written into ext units.
    bit_maps: OnceLock<Arc<dyn BitMapCalculator>>,
}

impl std::fmt::Debug for ConsumeQueueTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsumeQueueTable")
            .field("dir", &self.dir)
            .finish()
    }
}

impl ConsumeQueueTable {
    /// An empty table of queues under `dir` with files of `file_size` bytes; `delay_levels`
    /// give the delivery times of the schedule topic's units.
    pub fn new(
        storage: Arc<dyn Storage>,
        dir: PathBuf,
        file_size: usize,
        delay_levels: Vec<i64>,
    ) -> Self {
        ConsumeQueueTable {
            storage,
            dir,
            file_size,
            delay_levels,
            queues: Padded(RwLock::new(FxHashMap::default())),
            put_queues: Padded(Mutex::new(FxHashMap::default())),
            ext: None,
            bit_maps: OnceLock::new(),
        }
    }

    /// Queues with ext files under `dir`, `file_size` bytes each (`enableConsumeQueueExt`).
    pub fn with_ext(mut self, dir: PathBuf, file_size: usize) -> Self {
        self.ext = Some((dir, file_size));
        self
    }

    /// Sets what computes messages' filter bit maps (once; later calls are ignored). Only a
    /// store with ext files keeps them.
    pub fn set_bit_map_calculator(&self, calc: Arc<dyn BitMapCalculator>) {
        let _ = self.bit_maps.set(calc);
    }

    /// The ext files' directory, when queues have them.
    pub fn ext_dir(&self) -> Option<&Path> {
        self.ext.as_ref().map(|(d, _)| d.as_path())
    }

    /// The directory holding the queues.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Maps the queue files found on disk. Directories whose name is not a valid topic (or
    /// queue id) are ignored: a topic name becomes a path, and nothing else may.
    pub fn load(&self) -> Result<()> {
        let dir = &self.dir;
        let topics = self.storage.list(dir).map_err(|e| StoreError::io(dir, e))?;
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
                let cq = self.new_queue(&name, queue_id);
                cq.load()?;
                table
                    .entry(name.clone())
                    .or_default()
                    .insert(queue_id, Arc::new(cq));
            }
        }
        Ok(())
    }

    fn new_queue(&self, topic: &str, queue_id: i32) -> ConsumeQueue {
        let cq = ConsumeQueue::new(
            self.storage.clone(),
            &self.dir,
            topic,
            queue_id,
            self.file_size,
        );
        match &self.ext {
            Some((dir, size)) => cq.with_ext(dir, *size),
            None => cq,
        }
    }

    /// Every queue.
    pub fn all(&self) -> Vec<Arc<ConsumeQueue>> {
        self.queues
            .read()
            .values()
            .flat_map(|q| q.values().cloned())
            .collect()
    }

    /// The queue of `(topic, queue_id)`, if it exists.
    pub fn find(&self, topic: &str, queue_id: i32) -> Option<Arc<ConsumeQueue>> {
        self.queues
            .read()
            .get(topic)
            .and_then(|q| q.get(&queue_id))
            .cloned()
    }

    fn find_or_create(&self, topic: &str, queue_id: i32) -> Arc<ConsumeQueue> {
        if let Some(cq) = self.find(topic, queue_id) {
            return cq;
        }
        self.queues
            .write()
            .entry(topic.to_owned())
            .or_default()
            .entry(queue_id)
            .or_insert_with(|| Arc::new(self.new_queue(topic, queue_id)))
            .clone()
    }

    /// Takes a topic's queues out of both tables; the caller holds the CommitLog's put lock
    /// (so no dispatch is between the two) and deletes their files.
    pub fn remove_topic(&self, topic: &str) -> Vec<Arc<ConsumeQueue>> {
        let mut put = self.put_queues.lock();
        put.remove(topic);
        self.queues
            .write()
            .remove(topic)
            .map(|q| q.into_values().collect())
            .unwrap_or_default()
    }

    /// Every (topic, queue id), sorted.
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

    /// Flushes every queue; the first error is returned after all were tried.
    pub fn flush(&self) -> Result<()> {
        let mut first = None;
        for cq in self.all() {
            if let Err(e) = cq.flush() {
                tracing::error!(error = %e, "consume queue flush failed");
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Adds the unit of a stored record to its queue (creating the queue on its first
    /// record). Records that are not consumable (transaction halves, rollbacks) are skipped.
    pub fn dispatch(&self, req: &DispatchRequest<'_>) -> Result<()> {
        self.dispatch_with(req, false)
    }

    /// Recovery's [`ConsumeQueueTable::dispatch`]: units already present are checked against
    /// the record and rewritten when torn ([`ConsumeQueue::put_recovered`]).
    pub fn dispatch_recovered(&self, req: &DispatchRequest<'_>) -> Result<()> {
        self.dispatch_with(req, true)
    }

    fn dispatch_with(&self, req: &DispatchRequest<'_>, recovered: bool) -> Result<()> {
        if !req.is_consumable() {
            return Ok(());
        }
        let unit = self.unit_of(req);
        let ext = self.ext_info(req);
        self.with_put_queue(req.topic, req.queue_id, |cq| {
            if recovered {
                cq.put_recovered(req.consume_queue_offset, unit, &ext)
            } else {
                cq.put_ext(req.consume_queue_offset, unit, &ext)
            }
        })
    }

    /// What a record's ext unit holds besides its tags code (nothing to compute without ext
    /// files).
    fn ext_info(&self, req: &DispatchRequest<'_>) -> ExtInfo {
        if self.ext.is_none() {
            return ExtInfo::default();
        }
        let bit_map = self
            .bit_maps
            .get()
            .and_then(|c| c.bit_map(req.topic, req.properties))
            .map(bytes::Bytes::from)
            .unwrap_or_default();
        ExtInfo {
            store_time: req.store_timestamp,
            bit_map,
        }
    }

    /// The put path's dispatch: adds the unit of a consumable record to `cq`, its queue
    /// (found once per put by the CommitLog, see [`crate::put_state`]).
    pub(crate) fn dispatch_into(&self, cq: &ConsumeQueue, req: &DispatchRequest<'_>) -> Result<()> {
        cq.put_ext(
            req.consume_queue_offset,
            self.unit_of(req),
            &self.ext_info(req),
        )
    }

    /// The consume-queue unit of a record: the schedule topic's tags code is its delivery time.
    fn unit_of(&self, req: &DispatchRequest<'_>) -> CqUnit {
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
        CqUnit {
            commit_log_offset: req.commit_log_offset,
            size: req.msg_size,
            tags_code,
        }
    }

    /// The queue of `(topic, queue_id)` for the put path, created on first use (called under
    /// the CommitLog's put lock, which keeps it until the topic is removed).
    pub(crate) fn open(&self, topic: &str, queue_id: i32) -> Arc<ConsumeQueue> {
        self.find_or_create(topic, queue_id)
    }

    /// Reserves the disk space of units a put will add (before it appends anything), so the
    /// dispatch of its records cannot fail for want of space.
    pub fn reserve(&self, (topic, queue_id, first, count): &QueueUnits<'_>) -> Result<()> {
        self.with_put_queue(topic, *queue_id, |cq| cq.reserve(*first, *count))
    }

    /// Creates the queue's first file (its first page reserved and resident) ahead of its
    /// first unit, which will be number `next` (see [`crate::MessageStore::prepare_queues`]).
    pub fn prepare(&self, topic: &str, queue_id: i32, next: i64) -> Result<()> {
        // A put racing with this finds the file made, or makes it first: either way the
        // reservation is then a no-op for units already written, and prefaulting changes no
        // byte.
        self.find_or_create(topic, queue_id).prepare(next)
    }

    /// Runs `f` on the queue of `(topic, queue_id)`, created on first use, through the put
    /// path's table (called under the CommitLog's put lock).
    fn with_put_queue<T>(
        &self,
        topic: &str,
        queue_id: i32,
        f: impl FnOnce(&ConsumeQueue) -> T,
    ) -> T {
        let mut cache = self.put_queues.lock();
        let cached = cache.get(topic).is_some_and(|q| q.contains_key(&queue_id));
        if !cached {
            let cq = self.find_or_create(topic, queue_id);
            cache
                .entry(topic.to_owned())
                .or_default()
                .insert(queue_id, cq);
        }
        f(&cache[topic][&queue_id])
    }
}
