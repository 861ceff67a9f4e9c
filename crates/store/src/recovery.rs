//! Start-up recovery: brings the consume queues, the index and the schedule offsets back in
//! line with the CommitLog, which is the only source of truth.
//!
//! - Normal start (no `abort` file): validate the CommitLog from its third-last file, CRCs on,
//!   stopping at the first bad record and truncating after it.
//! - Abnormal start (`abort` found): from the newest file whose first record is older than the
//!   checkpoint (minus slack); every record from there is re-dispatched to the consume queues
//!   and the index, and their tails past the CommitLog's end are truncated.
//! - A consume queue missing units from before the recovery window (a lost or truncated queue
//!   file) is a gap: every queue is then rebuilt from the first CommitLog file, rather than
//!   numbering new units around the hole.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rocketpy_protocol::message::record::{self, Decoded, RecordView};
use rocketpy_protocol::topic::validate_topic;

use crate::checkpoint::Checkpoint;
use crate::commit_log::CommitLog;
use crate::delay;
use crate::dispatch::DispatchRequest;
use crate::error::{Result, StoreError};
use crate::index_service::IndexService;
use crate::io::Storage;
use crate::mapped_file::MappedFile;
use crate::queue_table::ConsumeQueueTable;
use crate::schedule::ScheduleService;

/// What recovery works on.
pub(crate) struct Recovery<'a> {
    pub storage: &'a dyn Storage,
    pub root: &'a Path,
    pub commit_log: &'a CommitLog,
    pub queues: &'a ConsumeQueueTable,
    pub index: &'a IndexService,
    pub schedule: &'a ScheduleService,
    pub delay_levels: &'a [i64],
    /// Whether the last run ended without a clean shutdown.
    pub abnormal: bool,
}

impl Recovery<'_> {
    /// Loads every file and recovers; returns the store time of the last record.
    pub(crate) fn run(&self) -> Result<i64> {
        self.commit_log.load()?;
        self.queues.load()?;
        for cq in self.queues.all() {
            cq.recover()?;
        }
        let checkpoint = Checkpoint::read(self.storage, &self.root.join("checkpoint"))?;
        let files = self.commit_log.files().files();
        let start = if self.abnormal {
            abnormal_start_index(&files, &checkpoint)
        } else {
            files.len().saturating_sub(3)
        };
        // Pass 1 re-dispatches from `start`; a gap (see the module documentation) makes pass 2
        // rebuild every queue from the first file.
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
        let bad = self.commit_log.bad_ranges();
        let commit_min = self.commit_log.min_offset();
        let mut table: HashMap<String, HashMap<i32, i64>> = HashMap::new();
        for cq in self.queues.all() {
            cq.truncate_dirty(end)?;
            let blanked = cq.blank_units_in(&bad)?;
            if blanked > 0 {
                tracing::warn!(
                    topic = cq.topic(),
                    queue = cq.queue_id(),
                    blanked,
                    "units of damaged CommitLog records blanked"
                );
            }
            cq.correct_min_offset(commit_min);
            table
                .entry(cq.topic().to_owned())
                .or_default()
                .insert(cq.queue_id(), cq.max_offset());
        }
        self.commit_log.set_queue_offsets(table);
        self.index
            .load(self.abnormal, checkpoint.index_msg_timestamp, commit_min)?;
        self.schedule.recover(self.commit_log);
        // Saved now, so a crash before the next save still leaves a scan point for recover().
        self.schedule
            .persist(self.storage, || self.commit_log.max_offset(), true)?;
        tracing::info!(root = %self.root.display(), commit_log_end = end, abnormal = self.abnormal, "store recovered");
        Ok(self.commit_log.last_store_timestamp())
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
        let req = dispatch_request(view, self.delay_levels);
        if detect_gaps && req.is_consumable() {
            let max = self
                .queues
                .find(view.topic, view.queue_id)
                .map(|cq| cq.max_offset())
                .unwrap_or(0);
            if max < view.queue_offset {
                gap.store(true, Ordering::Release);
                return Ok(());
            }
        }
        match self.queues.dispatch_recovered(&req) {
            Err(StoreError::Corrupt { what, reason }) => {
                tracing::error!(offset = view.physical_offset, %what, %reason, "record with a damaged header not dispatched");
                Ok(())
            }
            other => other,
        }
    }
}

/// What the consume queue needs from a record read back from the CommitLog (recovery, and
/// a slave writing its master's records).
pub(crate) fn dispatch_request<'a>(
    view: &RecordView<'a>,
    delay_levels: &[i64],
) -> DispatchRequest<'a> {
    DispatchRequest {
        topic: view.topic,
        queue_id: view.queue_id,
        commit_log_offset: view.physical_offset,
        msg_size: view.total_size,
        tags_code: delay::compute_tags_code(
            view.topic,
            view.properties,
            view.store_timestamp,
            delay_levels,
        ),
        store_timestamp: view.store_timestamp,
        consume_queue_offset: view.queue_offset,
        properties: view.properties,
        sys_flag: view.sys_flag,
    }
}

/// Abnormal recovery starts from the newest file whose first message is older than the
/// checkpoint (minus slack); with no usable checkpoint, from the first file.
fn abnormal_start_index(files: &[Arc<MappedFile>], cp: &Checkpoint) -> usize {
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
