//! Retention (RocketMQ's clean services): CommitLog files older than `fileReservedTime` are
//! deleted at the `deleteWhen` hour, or at once when the disk is fuller than
//! `diskMaxUsedSpaceRatio`; above `diskSpaceCleanForciblyRatio` even unexpired files go
//! (oldest first, ten per round, never the file being written). Consume-queue and index files
//! whose records are gone follow, and queue minimum offsets move up: a read below them is
//! answered "offset too small" (PULL_OFFSET_MOVED), never with missing data.
//! Above `diskSpaceWarningLevelRatio` the store refuses puts until space is freed.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rocketpy_protocol::message::record::{self, Decoded};

use crate::commit_log::CommitLog;
use crate::config::StoreConfig;
use crate::error::{Result, StoreError};
use crate::index_service::IndexService;
use crate::io::Storage;
use crate::queue_table::ConsumeQueueTable;

/// Most CommitLog files deleted per round (RocketMQ's `DELETE_FILES_BATCH_MAX`).
pub const DELETE_FILES_BATCH_MAX: usize = 10;

/// What one clean-up round removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CleanReport {
    /// CommitLog files deleted.
    pub commit_log_files: usize,
    /// Consume-queue files deleted.
    pub consume_queue_files: usize,
    /// Index files deleted.
    pub index_files: usize,
}

fn local_hour(millis: i64) -> u32 {
    let secs = millis.div_euclid(1000) as libc::time_t;
    // SAFETY: localtime_r fills the zeroed struct from a valid time.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    unsafe { libc::localtime_r(&secs, &mut tm) };
    tm.tm_hour as u32
}

/// Retention: the clean-up rounds and the disk-full state they keep.
pub(crate) struct CleanService {
    config: StoreConfig,
    storage: Arc<dyn Storage>,
    root: PathBuf,
    commit_log: Arc<CommitLog>,
    queues: Arc<ConsumeQueueTable>,
    index: Arc<IndexService>,
    /// Set while the disk is fuller than `diskSpaceWarningLevelRatio`, or since a write
    /// found no space (until the next round): puts are refused.
    disk_full: AtomicBool,
    /// Refusals are logged once a minute, not once a put.
    full_log: crate::ratelimit::LogEvery,
}

impl CleanService {
    pub(crate) fn new(
        config: StoreConfig,
        storage: Arc<dyn Storage>,
        commit_log: Arc<CommitLog>,
        queues: Arc<ConsumeQueueTable>,
        index: Arc<IndexService>,
    ) -> Self {
        CleanService {
            root: config.store_path_root_dir.clone(),
            config,
            storage,
            commit_log,
            queues,
            index,
            disk_full: AtomicBool::new(false),
            full_log: crate::ratelimit::LogEvery::minute(),
        }
    }

    /// The refusal of a put while the disk is full, if it is.
    pub(crate) fn check_space(&self) -> Result<()> {
        if !self.disk_full.load(Ordering::Acquire) {
            return Ok(());
        }
        Err(self.disk_full_error())
    }

    fn disk_full_error(&self) -> StoreError {
        let (total, avail) = self.storage.disk_space(&self.root).unwrap_or((1, 0));
        let err = StoreError::DiskFull {
            used_percent: (total.saturating_sub(avail) * 100)
                .checked_div(total)
                .unwrap_or(100),
            limit_percent: self.config.disk_space_warning_level_ratio,
        };
        self.full_log
            .log(|| tracing::error!(error = %err, "puts refused"));
        err
    }

    /// A write failed: when for want of space, the store is full from now until a clean-up
    /// round finds space again (each round re-checks), and the put's error says so.
    pub(crate) fn on_write_error(&self, e: StoreError) -> StoreError {
        if !e.is_no_space() {
            return e;
        }
        if !self.disk_full.swap(true, Ordering::AcqRel) {
            tracing::error!(error = %e, "no space left on the store's disk: puts refused until space is freed");
        }
        self.disk_full_error()
    }

    /// One round of the clean thread every `cleanResourceInterval`; returns how long to sleep.
    pub(crate) fn step(&self, next_clean: &mut Instant) -> Duration {
        if Instant::now() >= *next_clean {
            *next_clean = Instant::now()
                + Duration::from_millis(self.config.clean_resource_interval.max(100));
            match self.disk_used_ratio() {
                Ok(ratio) => {
                    if let Err(e) = self.clean_files(crate::now_millis(), ratio, false) {
                        tracing::error!(error = %e, "retention clean-up failed");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "cannot read disk usage"),
            }
        }
        Duration::from_millis(100)
    }

    /// Fraction of the disk holding the store that is in use.
    pub(crate) fn disk_used_ratio(&self) -> Result<f64> {
        let (total, avail) = self
            .storage
            .disk_space(&self.root)
            .map_err(|e| StoreError::io(&self.root, e))?;
        if total == 0 {
            return Ok(0.0);
        }
        Ok(total.saturating_sub(avail) as f64 / total as f64)
    }

    /// One retention round at wall-clock time `now` (ms) with the disk `disk_used_ratio` full.
    /// `manual` deletes expired files whatever the hour.
    pub(crate) fn clean_files(
        &self,
        now: i64,
        disk_used_ratio: f64,
        manual: bool,
    ) -> Result<CleanReport> {
        let c = &self.config;
        let percent = disk_used_ratio * 100.0;
        let full = percent > c.disk_space_warning_level_ratio as f64;
        if full != self.disk_full.swap(full, Ordering::AcqRel) {
            if full {
                tracing::error!(
                    percent,
                    limit = c.disk_space_warning_level_ratio,
                    "disk almost full: puts refused until space is freed"
                );
            } else {
                tracing::info!(percent, "disk space available again: puts accepted");
            }
        }
        let time_up = c.delete_hours().contains(&local_hour(now));
        let space_full = percent > c.disk_max_used_space_ratio as f64;
        let at_once =
            c.clean_file_forcibly_enable && percent > c.disk_space_clean_forcibly_ratio as f64;
        let mut report = CleanReport::default();
        if time_up || space_full || manual {
            report.commit_log_files = self.delete_expired_commit_log(now, at_once)?;
        }
        if report.commit_log_files > 0 || manual {
            let min = self.commit_log.min_offset();
            for cq in self.queues.all() {
                report.consume_queue_files += cq.delete_expired(min)?;
            }
            report.index_files = self.index.delete_files_before(min)?;
            tracing::info!(
                ?report,
                commit_log_min = min,
                "retention removed expired files"
            );
        }
        Ok(report)
    }

    /// Deletes CommitLog files (never the last) whose newest message is older than
    /// `fileReservedTime`, or any when `at_once`, oldest first, at most ten.
    fn delete_expired_commit_log(&self, now: i64, at_once: bool) -> Result<usize> {
        let keep_ms = self.config.file_reserved_time as i64 * 3_600_000;
        let files = self.commit_log.files().files();
        let mut delete_before = None;
        for i in 0..files.len().saturating_sub(1).min(DELETE_FILES_BATCH_MAX) {
            // A file's newest message is older than the next file's first one.
            let next = &files[i + 1];
            let newest = next
                .read(0, next.wrote().min(4096))
                .and_then(|b| match record::decode(b, false) {
                    Ok(Decoded::Message(v)) => Some(v.store_timestamp),
                    _ => None,
                })
                .unwrap_or(now);
            if at_once || newest + keep_ms <= now {
                delete_before = Some(next.from_offset());
            } else {
                break;
            }
        }
        match delete_before {
            Some(offset) => self.commit_log.files().delete_files_before(offset),
            None => Ok(0),
        }
    }
}
