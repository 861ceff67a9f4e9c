//! The index files of a store (`index/`) and the service that fills them from the CommitLog.
//!
//! Indexing runs behind the put path, in CommitLog order, on its own thread: `progress` is the
//! CommitLog offset of the next record to index. Each record contributes `topic#UNIQ_KEY` and
//! `topic#k` for every space-separated KEYS token (prepared and rolled-back transactional
//! messages are not indexed). A record at or before a file's `endPhyOffset` is already indexed,
//! which makes re-indexing after a restart idempotent.

use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::RwLock;

use crate::commit_log::CommitLog;
use crate::error::{Result, StoreError};
use crate::index_file::{index_file_name, IndexFile};
use crate::io::Storage;
use rocketpy_protocol::flag::message as sys_flag;
use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::message::record::{self, Decoded, RecordView};

/// Index settings (`messageIndexEnable`, `maxHashSlotNum`, `maxIndexNum`).
#[derive(Debug, Clone, Copy)]
pub struct IndexConfig {
    pub enabled: bool,
    pub slot_num: usize,
    pub max_index: usize,
}

/// The index files and the indexing progress.
pub struct IndexService {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    config: IndexConfig,
    files: RwLock<Vec<Arc<IndexFile>>>,
    progress: AtomicI64,
    last_timestamp: AtomicI64,
    /// A failing step (a full disk) is retried every 10 ms but logged once a minute.
    fail_log: crate::ratelimit::LogEvery,
}

impl std::fmt::Debug for IndexService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexService")
            .field("dir", &self.dir)
            .finish()
    }
}

use rocketpy_protocol::clock::now_millis;

impl IndexService {
    /// A service over `dir` (not yet loaded).
    pub fn new(storage: Arc<dyn Storage>, dir: PathBuf, config: IndexConfig) -> Self {
        IndexService {
            storage,
            dir,
            config,
            files: RwLock::new(Vec::new()),
            progress: AtomicI64::new(0),
            last_timestamp: AtomicI64::new(0),
            fail_log: crate::ratelimit::LogEvery::minute(),
        }
    }

    /// Maps the existing files. After an abnormal exit, files holding entries newer than the
    /// checkpoint (`flushed_before`) may have lost unflushed entries: they are deleted and
    /// rebuilt from the CommitLog.
    pub fn load(&self, abnormal: bool, flushed_before: i64, commit_log_min: i64) -> Result<()> {
        let mut names = self
            .storage
            .list(&self.dir)
            .map_err(|e| StoreError::io(&self.dir, e))?;
        names.retain(|n| n.len() == 17 && n.bytes().all(|b| b.is_ascii_digit()));
        names.sort();
        let mut files = Vec::new();
        for name in names {
            let path = self.dir.join(&name);
            match IndexFile::open(
                self.storage.as_ref(),
                &path,
                self.config.slot_num,
                self.config.max_index,
                false,
            ) {
                Ok(f) => files.push(Arc::new(f)),
                Err(e) => {
                    tracing::warn!(file = %path.display(), error = %e, "unusable index file deleted; it will be rebuilt");
                    self.storage
                        .remove(&path)
                        .map_err(|e| StoreError::io(&path, e))?;
                }
            }
        }
        let mut rebuild_from: Option<i64> = None;
        if abnormal {
            while let Some(last) = files.last() {
                let h = last.header();
                if h.end_timestamp <= flushed_before {
                    break;
                }
                tracing::info!(file = %last.path().display(), "index file newer than the checkpoint deleted; rebuilding it");
                rebuild_from = Some(h.begin_phy_offset);
                self.storage
                    .remove(last.path())
                    .map_err(|e| StoreError::io(last.path(), e))?;
                files.pop();
            }
        }
        let progress = match (files.last(), rebuild_from) {
            (_, Some(from)) => from,
            (Some(last), None) => last.header().end_phy_offset,
            (None, None) => commit_log_min,
        };
        self.progress
            .store(progress.max(commit_log_min), Ordering::Release);
        *self.files.write() = files;
        Ok(())
    }

    /// CommitLog offset of the next record to index.
    pub fn progress(&self) -> i64 {
        self.progress.load(Ordering::Acquire)
    }

    /// Store timestamp of the newest indexed record.
    pub fn last_timestamp(&self) -> i64 {
        self.last_timestamp.load(Ordering::Acquire)
    }

    fn writable_file(&self) -> Result<Arc<IndexFile>> {
        if let Some(last) = self.files.read().last() {
            if !last.is_full() {
                return Ok(last.clone());
            }
        }
        let (begin_phy, begin_ts) = self
            .files
            .read()
            .last()
            .map(|f| {
                let h = f.header();
                (h.end_phy_offset, h.end_timestamp)
            })
            .unwrap_or((0, 0));
        self.storage
            .create_dir_all(&self.dir)
            .map_err(|e| StoreError::io(&self.dir, e))?;
        let mut now = now_millis();
        let mut path = self.dir.join(index_file_name(now));
        while self
            .storage
            .file_len(&path)
            .map_err(|e| StoreError::io(&path, e))?
            .is_some()
        {
            now += 1;
            path = self.dir.join(index_file_name(now));
        }
        let file = Arc::new(IndexFile::create(
            self.storage.as_ref(),
            &path,
            self.config.slot_num,
            self.config.max_index,
            begin_phy,
            begin_ts,
        )?);
        self.files.write().push(file.clone());
        Ok(file)
    }

    /// Indexes one record into `current` (the last index file, kept between records so the
    /// file list's lock is not taken per record), rolling to a new file when it fills.
    fn index_record(
        &self,
        view: &RecordView<'_>,
        current: &mut Option<Arc<IndexFile>>,
    ) -> Result<()> {
        let tx = sys_flag::transaction_type(view.sys_flag);
        if tx == sys_flag::TRANSACTION_PREPARED_TYPE || tx == sys_flag::TRANSACTION_ROLLBACK_TYPE {
            return Ok(());
        }
        let uniq = properties::find(view.properties, keys::UNIQ_KEY);
        let tokens = properties::find(view.properties, keys::KEYS);
        if uniq.is_none() && tokens.is_none() {
            return Ok(());
        }
        let all = || {
            uniq.into_iter().chain(
                tokens
                    .into_iter()
                    .flat_map(|k| k.split(' ').filter(|k| !k.is_empty())),
            )
        };
        if current.as_ref().is_none_or(|f| f.is_full()) {
            *current = Some(self.writable_file()?);
        }
        let mut file = current.as_ref().expect("set above");
        let h = file.header();
        if h.index_count > 1 && view.physical_offset <= h.end_phy_offset {
            return Ok(()); // already indexed before a restart
        }
        let mut done = file.put_record(
            view.topic,
            all(),
            view.physical_offset,
            view.store_timestamp,
        )?;
        let total = all().count();
        while done < total {
            file = current.insert(self.writable_file()?);
            let added = file.put_record(
                view.topic,
                all().skip(done),
                view.physical_offset,
                view.store_timestamp,
            )?;
            if added == 0 {
                return Err(StoreError::corrupt(
                    file.path().display().to_string(),
                    "fresh index file is full",
                ));
            }
            done += added;
        }
        Ok(())
    }

    /// Indexes the records written since the last call; returns whether it made progress.
    pub fn index_pending(&self, commit_log: &CommitLog) -> Result<bool> {
        if !self.config.enabled {
            return Ok(false);
        }
        let mut progress = self.progress().max(commit_log.min_offset());
        let start = progress;
        let mut current = None;
        while progress < commit_log.max_offset() {
            let Some(data) = commit_log.read_from(progress) else {
                progress = commit_log.skip_unreadable(progress);
                continue;
            };
            let mut pos = 0usize;
            let mut newest = 0i64;
            while pos < data.len() {
                match record::decode(&data[pos..], false) {
                    Ok(Decoded::Message(view)) => {
                        self.index_record(&view, &mut current)?;
                        newest = newest.max(view.store_timestamp);
                        pos += view.total_size as usize;
                    }
                    Ok(Decoded::EndOfFile) => {
                        pos = usize::MAX;
                        progress = commit_log.skip_unreadable(progress);
                        break;
                    }
                    Ok(Decoded::Empty) | Err(_) => {
                        progress = commit_log.skip_unreadable(progress + pos as i64);
                        pos = usize::MAX;
                        break;
                    }
                }
            }
            if pos != usize::MAX {
                progress += pos as i64;
            }
            // Once per chunk, not per record: the put path runs on the other core.
            self.last_timestamp.fetch_max(newest, Ordering::AcqRel);
            self.progress.store(progress, Ordering::Release);
        }
        self.progress.store(progress, Ordering::Release);
        Ok(progress != start)
    }

    /// One round of the index thread: indexes what is new, and every second flushes the
    /// index and reports how far it is on disk (`flushed(timestamp)`, for the checkpoint);
    /// returns how long to sleep.
    pub(crate) fn step(
        &self,
        commit_log: &CommitLog,
        flushed: impl FnOnce(i64),
        next_flush: &mut Instant,
    ) -> Duration {
        let busy = match self.index_pending(commit_log) {
            Ok(progress) => progress,
            Err(e) => {
                self.fail_log
                    .log(|| tracing::error!(error = %e, "indexing failed; retrying"));
                false
            }
        };
        if Instant::now() >= *next_flush {
            *next_flush = Instant::now() + Duration::from_secs(1);
            let ts = self.last_timestamp();
            match self.flush() {
                Ok(()) => flushed(ts),
                Err(e) => {
                    self.fail_log
                        .log(|| tracing::error!(error = %e, "index flush failed"));
                }
            }
        }
        if busy {
            Duration::ZERO
        } else {
            Duration::from_millis(10)
        }
    }

    /// CommitLog offsets for `topic#key` stored in `[begin, end]`, newest first, at most
    /// `max_num` (hash collisions included: callers check the keys).
    pub fn query(&self, topic: &str, key: &str, max_num: usize, begin: i64, end: i64) -> Vec<i64> {
        let key = format!("{topic}#{key}");
        let mut out = Vec::new();
        let files = self.files.read().clone();
        for f in files.iter().rev() {
            if out.len() >= max_num {
                break;
            }
            if f.is_time_matched(begin, end) {
                f.select(&key, max_num, begin, end, &mut out);
            }
        }
        out
    }

    /// Flushes every file.
    pub fn flush(&self) -> Result<()> {
        for f in self.files.read().iter() {
            f.flush()?;
        }
        Ok(())
    }

    /// Deletes files whose entries all point below `commit_log_min` (their records are gone),
    /// keeping the newest file. Returns how many were deleted.
    pub fn delete_files_before(&self, commit_log_min: i64) -> Result<usize> {
        let mut files = self.files.write();
        let mut n = 0;
        while files.len() > 1 && files[0].header().end_phy_offset < commit_log_min {
            let f = files.remove(0);
            self.storage
                .remove(f.path())
                .map_err(|e| StoreError::io(f.path(), e))?;
            n += 1;
        }
        Ok(n)
    }

    /// Number of index files.
    pub fn file_count(&self) -> usize {
        self.files.read().len()
    }
}
