//! ConsumeQueue: the index of one topic queue into the CommitLog.
//!
//! Files live in `consumequeue/{topic}/{queueId}/`, named by their first byte offset
//! (20 digits); each holds `mapedFileSizeConsumeQueue / 20` units. A unit is 20 bytes,
//! big-endian: `commitLogOffset i64 | size i32 | tagsCode i64`. Unit `n` of the queue is the
//! message with queue offset `n`. A "blank" unit `(0, i32::MAX, 0)` fills gaps, as RocketMQ's
//! pre-blank does; readers skip it.
//!
//! With the ext file (`enableConsumeQueueExt`, [`crate::consume_queue_ext`]) a unit's tags
//! code field holds the address of its ext unit; readers here see the real tags code
//! ([`ConsumeQueue::get`], [`UnitBuffer::get`]) and, when they ask, the ext unit.

use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use crate::consume_queue_ext::{is_ext_addr, ConsumeQueueExt, CqExtUnit};
use crate::error::{Result, StoreError};
use crate::io::Storage;
use crate::mapped_file::{FileKind, MappedFile};
use crate::mapped_file_queue::MappedFileQueue;

mod unit;

use unit::resolve;
pub use unit::{CqUnit, ExtInfo, UnitBuffer, CQ_UNIT_SIZE};

/// Byte position of queue offset `index`; `None` for offsets no queue can have (negative, or
/// overflowing: they come from damaged records or hostile requests).
fn byte_of(index: i64) -> Option<u64> {
    u64::try_from(index).ok()?.checked_mul(CQ_UNIT_SIZE as u64)
}

/// One topic queue's index.
#[derive(Debug)]
pub struct ConsumeQueue {
    topic: String,
    queue_id: i32,
    files: MappedFileQueue,
    /// Byte offset of the first unit still valid (after retention moved it).
    min_logic_offset: AtomicI64,
    /// The ext files (`enableConsumeQueueExt`).
    ext: Option<Arc<ConsumeQueueExt>>,
}

impl ConsumeQueue {
    /// A queue stored under `root/{topic}/{queue_id}` (not yet loaded).
    pub fn new(
        storage: Arc<dyn Storage>,
        root: &Path,
        topic: &str,
        queue_id: i32,
        file_size: usize,
    ) -> Self {
        let file_size = file_size - file_size % CQ_UNIT_SIZE;
        ConsumeQueue {
            topic: topic.to_owned(),
            queue_id,
            files: MappedFileQueue::new(
                storage,
                root.join(topic).join(queue_id.to_string()),
                file_size,
                FileKind::QUEUE,
            ),
            min_logic_offset: AtomicI64::new(0),
            ext: None,
        }
    }

    /// With ext files under `ext_root` of `file_size` bytes (`enableConsumeQueueExt`).
    pub fn with_ext(mut self, ext_root: &Path, file_size: usize) -> Self {
        self.ext = Some(Arc::new(ConsumeQueueExt::new(
            self.files.storage().clone(),
            ext_root,
            &self.topic,
            self.queue_id,
            file_size,
        )));
        self
    }

    /// The ext files, when the queue has them.
    pub fn ext(&self) -> Option<&ConsumeQueueExt> {
        self.ext.as_deref()
    }

    /// The topic.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// The queue id.
    pub fn queue_id(&self) -> i32 {
        self.queue_id
    }

    /// The underlying files.
    pub fn files(&self) -> &MappedFileQueue {
        &self.files
    }

    /// Maps existing files.
    pub fn load(&self) -> Result<()> {
        self.files.load()?;
        if let Some(ext) = &self.ext {
            ext.load()?;
        }
        self.min_logic_offset
            .store(self.files.min_offset() as i64, Ordering::Release);
        Ok(())
    }

    /// Finds the last valid unit (scanning the last three files) and cuts everything after it.
    pub fn recover(&self) -> Result<()> {
        let files = self.files.files();
        if files.is_empty() {
            return Ok(());
        }
        let start = files.len().saturating_sub(3);
        let mut end = files[start].from_offset();
        // The last ext address the kept units name (1: none, as in RocketMQ).
        let mut max_ext_addr = 1;
        'files: for file in &files[start..] {
            // SAFETY: recovery runs before any writer starts.
            let data = unsafe { file.whole() };
            let mut pos = 0;
            while pos + CQ_UNIT_SIZE <= data.len() {
                let unit = CqUnit::decode(&data[pos..]);
                if !unit.is_valid() {
                    end = file.from_offset() + pos as u64;
                    break 'files;
                }
                if is_ext_addr(unit.tags_code) {
                    max_ext_addr = unit.tags_code;
                }
                pos += CQ_UNIT_SIZE;
            }
            end = file.from_offset() + pos as u64;
        }
        self.files.writer().truncate_to(end)?;
        if let Some(ext) = &self.ext {
            ext.recover()?;
            ext.truncate_after(max_ext_addr)?;
        }
        self.min_logic_offset
            .fetch_max(self.files.min_offset() as i64, Ordering::AcqRel);
        Ok(())
    }

    /// Removes units pointing at or past `commit_log_end` (CommitLog bytes that recovery cut).
    pub fn truncate_dirty(&self, commit_log_end: i64) -> Result<()> {
        let mut end = self.files.max_offset();
        while end >= self.files.min_offset() + CQ_UNIT_SIZE as u64 {
            let Some(unit) = self.unit_at_byte(end - CQ_UNIT_SIZE as u64) else {
                break;
            };
            if unit.is_blank() || unit.end() <= commit_log_end {
                break;
            }
            end -= CQ_UNIT_SIZE as u64;
        }
        if end != self.files.max_offset() {
            tracing::info!(topic = %self.topic, queue = self.queue_id, units = end / CQ_UNIT_SIZE as u64, "consume queue truncated to the recovered CommitLog");
            self.files.writer().truncate_to(end)?;
            if let Some(ext) = &self.ext {
                // Ext units of the units cut go too: the last kept unit's is the end.
                if let Some(addr) = self.last_ext_addr() {
                    ext.truncate_after(addr)?;
                }
            }
        }
        Ok(())
    }

    /// The ext address of the last unit that has one, looking back over at most one file of
    /// units.
    fn last_ext_addr(&self) -> Option<i64> {
        let per_file = (self.files.file_size() / CQ_UNIT_SIZE) as u64;
        let mut byte = self.files.max_offset();
        let floor = self
            .files
            .min_offset()
            .max(byte.saturating_sub(per_file * CQ_UNIT_SIZE as u64));
        while byte >= floor + CQ_UNIT_SIZE as u64 {
            byte -= CQ_UNIT_SIZE as u64;
            let unit = self.unit_at_byte(byte)?;
            if is_ext_addr(unit.tags_code) {
                return Some(unit.tags_code);
            }
        }
        None
    }

    fn unit_at_byte(&self, byte: u64) -> Option<CqUnit> {
        let file = self.files.find(byte)?;
        let pos = (byte - file.from_offset()) as usize;
        file.read(pos, CQ_UNIT_SIZE).map(CqUnit::decode)
    }

    /// The unit at queue offset `index`, with its real tags code.
    pub fn get(&self, index: i64) -> Option<CqUnit> {
        self.get_ext(index).map(|(unit, _)| unit)
    }

    /// The unit at queue offset `index` with its ext unit (see [`UnitBuffer::get_ext`]).
    pub fn get_ext(&self, index: i64) -> Option<(CqUnit, Option<CqExtUnit>)> {
        if index < self.min_offset() {
            return None;
        }
        let raw = self.unit_at_byte(byte_of(index)?)?;
        Some(resolve(raw, self.ext.as_deref()))
    }

    /// The last non-blank unit (for the end of the dispatched CommitLog range).
    pub fn last_unit(&self) -> Option<CqUnit> {
        let max = self.max_offset();
        (max > self.min_offset())
            .then(|| self.get(max - 1))
            .flatten()
    }

    /// Units from queue offset `index` to the end of what its file holds.
    pub fn units_from(&self, index: i64) -> Option<UnitBuffer> {
        if index < self.min_offset() || index < 0 {
            return None;
        }
        let byte = byte_of(index)?;
        let file: Arc<MappedFile> = self.files.find(byte)?;
        let pos = (byte - file.from_offset()) as usize;
        let wrote = file.wrote();
        if pos >= wrote {
            return None;
        }
        Some(UnitBuffer {
            start_offset: index,
            bytes: file.slice(pos, wrote - pos)?,
            ext: self.ext.clone(),
        })
    }

    /// Queue offset of the first unit of the file after the one holding `index`.
    pub fn roll_next_file(&self, index: i64) -> i64 {
        let per_file = (self.files.file_size() / CQ_UNIT_SIZE) as i64;
        index + per_file - index % per_file
    }

    /// The smallest queue offset still readable.
    pub fn min_offset(&self) -> i64 {
        self.min_logic_offset.load(Ordering::Acquire) / CQ_UNIT_SIZE as i64
    }

    /// Moves the minimum forward (retention), never backward.
    pub fn set_min_offset(&self, index: i64) {
        self.min_logic_offset
            .fetch_max(index.saturating_mul(CQ_UNIT_SIZE as i64), Ordering::AcqRel);
    }

    /// One past the last queue offset written.
    pub fn max_offset(&self) -> i64 {
        (self.files.max_offset() / CQ_UNIT_SIZE as u64) as i64
    }

    /// Reserves disk space for `count` units from queue offset `index` (see
    /// [`crate::mapped_file_queue::QueueWriter::reserve`]): after this, putting them cannot
    /// fail for want of space. Callers serialise calls with [`ConsumeQueue::put`].
    pub fn reserve(&self, index: i64, count: usize) -> Result<()> {
        let (Some(start), Some(len)) = (byte_of(index), count.checked_mul(CQ_UNIT_SIZE)) else {
            return Ok(()); // `put` reports the impossible offset
        };
        let end = start + len as u64;
        let mut writer = self.files.writer();
        if let Some(last) = writer.tail() {
            // The common case: the units go into the tail's reserved window.
            let at = last.from_offset() + last.wrote() as u64;
            if start >= at && end <= last.from_offset() + last.reserved() as u64 {
                return Ok(());
            }
        } else {
            // The queue's first file starts here (as in `put`); units below do not exist.
            self.min_logic_offset.store(start as i64, Ordering::Release);
        }
        writer.reserve(start, end)
    }

    /// Makes the queue ready for unit `index` ahead of it, off the put path: its file created,
    /// the unit's page reserved and made resident and writable. The first write to a page of
    /// a shared file mapping is a page fault that, on ext4, waits for a journal handle — behind
    /// whatever commit the flush threads started, milliseconds — so it is taken here.
    pub fn prepare(&self, index: i64) -> Result<()> {
        self.reserve(index, 1)?;
        let tail = self.files.writer().tail().cloned();
        if let Some(file) = tail {
            file.prefault_to(file.reserved())?;
        }
        Ok(())
    }

    /// Writes `unit` at queue offset `index`. Idempotent: a unit already present is kept; a
    /// gap before `index` (lost units) is filled with blanks so numbering stays exact.
    /// Callers serialise calls (the CommitLog's lock or recovery).
    pub fn put(&self, index: i64, unit: CqUnit) -> Result<()> {
        self.put_ext(index, unit, &ExtInfo::default())
    }

    /// [`ConsumeQueue::put`] with what the unit's ext unit holds besides its tags code. With
    /// ext files, the ext unit is written only when the unit is (a unit already present keeps
    /// its own); if it cannot be, the unit keeps its real tags code.
    pub fn put_ext(&self, index: i64, unit: CqUnit, ext: &ExtInfo) -> Result<()> {
        let with_ext = |mut unit: CqUnit| {
            if let Some(files) = &self.ext {
                let addr = files.put(&CqExtUnit {
                    tags_code: unit.tags_code,
                    store_time: ext.store_time,
                    bit_map: ext.bit_map.clone(),
                });
                if let Some(addr) = addr {
                    unit.tags_code = addr;
                }
            }
            unit
        };
        let target = byte_of(index).ok_or_else(|| {
            StoreError::corrupt(
                self.files.dir().display().to_string(),
                format!("impossible queue offset {index}"),
            )
        })?;
        let mut writer = self.files.writer();
        // The common case: the next unit of the last file.
        if let Some(last) = writer.tail() {
            let end = last.from_offset() + last.wrote() as u64;
            if end == target && !last.is_full() {
                let bytes = with_ext(unit).encode();
                return writer.append_tail(CQ_UNIT_SIZE, |buf| buf.copy_from_slice(&bytes));
            }
        }
        let mut end = self.files.max_offset();
        if self.files.is_empty() {
            end = target - target % self.files.file_size() as u64;
            self.min_logic_offset
                .store(target as i64, Ordering::Release);
        }
        if target < end {
            return Ok(());
        }
        if target > end + self.files.file_size() as u64 {
            // QUEUEOFFSET is not covered by the body CRC: a damaged header can claim any
            // offset. Real gaps (units lost with a consume-queue file) are rebuilt in order by
            // recovery's full rescan, so a gap wider than a file means a damaged record.
            return Err(StoreError::corrupt(
                self.files.dir().display().to_string(),
                format!(
                    "queue offset {index} is far past the queue's end {}",
                    end / CQ_UNIT_SIZE as u64
                ),
            ));
        }
        if target > end {
            tracing::warn!(topic = %self.topic, queue = self.queue_id, expected = end / CQ_UNIT_SIZE as u64, index, "consume queue gap filled with blank units");
        }
        while end <= target {
            let file = writer.roll(end)?;
            let at = file.from_offset() + file.wrote() as u64;
            if at != end {
                return Err(StoreError::corrupt(
                    self.files.dir().display().to_string(),
                    format!("write position {at} differs from the queue end {end}"),
                ));
            }
            let bytes = if end == target {
                with_ext(unit).encode()
            } else {
                CqUnit::BLANK.encode()
            };
            writer.append_tail(CQ_UNIT_SIZE, |buf| buf.copy_from_slice(&bytes))?;
            end += CQ_UNIT_SIZE as u64;
        }
        Ok(())
    }

    /// Recovery's [`ConsumeQueue::put`]: a unit already at `index` that differs from `unit`
    /// is rewritten. A 20-byte unit can straddle two pages, which reach the disk independently,
    /// so a power loss can leave one half new and the other old: such a unit points at the
    /// right record with a wrong size. Only during recovery (no reader holds the bytes).
    pub fn put_recovered(&self, index: i64, unit: CqUnit, ext: &ExtInfo) -> Result<()> {
        let Some(existing) = self.get(index) else {
            return self.put_ext(index, unit, ext);
        };
        if existing != unit {
            tracing::warn!(topic = %self.topic, queue = self.queue_id, index, ?existing, ?unit, "torn consume-queue unit rewritten from the CommitLog");
            self.repair_unit(index, unit)?;
        }
        Ok(())
    }

    /// Recovery: overwrites the unit at `index` (see [`MappedFile::repair`]).
    fn repair_unit(&self, index: i64, unit: CqUnit) -> Result<()> {
        let file = byte_of(index).and_then(|b| Some((b, self.files.find(b)?)));
        let Some((byte, file)) = file else {
            return Err(StoreError::corrupt(
                self.files.dir().display().to_string(),
                format!("no file holds unit {index}"),
            ));
        };
        file.repair((byte - file.from_offset()) as usize, &unit.encode())
    }

    /// Recovery: blanks the units that point into `bad` (CommitLog spans recovery found
    /// damaged and skipped), so the damage is never served, now or after a later restart whose
    /// recovery window no longer covers it. Units are in CommitLog order, so the walk goes
    /// back from the newest only as far as the earliest span. Returns how many were blanked.
    pub fn blank_units_in(&self, bad: &[(i64, i64)]) -> Result<usize> {
        let Some(first_bad) = bad.iter().map(|(s, _)| *s).min() else {
            return Ok(0);
        };
        let mut blanked = 0;
        let mut index = self.max_offset() - 1;
        while index >= self.min_offset() {
            let Some(unit) = self.get(index) else { break };
            if !unit.is_blank() {
                let at = unit.commit_log_offset;
                if at < first_bad {
                    break;
                }
                if bad.iter().any(|(s, e)| (*s..*e).contains(&at)) {
                    let byte = byte_of(index).expect("get found it");
                    let file = self.files.find(byte).expect("get found it");
                    file.repair(
                        (byte - file.from_offset()) as usize,
                        &CqUnit::BLANK.encode(),
                    )?;
                    blanked += 1;
                }
            }
            index -= 1;
        }
        Ok(blanked)
    }

    /// Flushes dirty units.
    pub fn flush(&self) -> Result<()> {
        self.files.flush()?;
        match &self.ext {
            Some(ext) => ext.flush(),
            None => Ok(()),
        }
    }

    /// Retention: deletes the files whose units all point below `commit_log_min` (their
    /// records are gone), keeping the newest file, then moves the minimum offset to the first
    /// unit whose record still exists. Returns how many files were deleted.
    pub fn delete_expired(&self, commit_log_min: i64) -> Result<usize> {
        let files = self.files.files();
        let mut keep_from = None;
        for file in files.iter().take(files.len().saturating_sub(1)) {
            let wrote = file.wrote();
            let last = (wrote >= CQ_UNIT_SIZE)
                .then(|| {
                    file.read(wrote - CQ_UNIT_SIZE, CQ_UNIT_SIZE)
                        .map(CqUnit::decode)
                })
                .flatten();
            match last {
                Some(u) if !u.is_blank() && u.end() > commit_log_min => {
                    keep_from = Some(file.from_offset());
                    break;
                }
                _ => {}
            }
        }
        let keep_from = keep_from
            .or_else(|| files.last().map(|f| f.from_offset()))
            .unwrap_or(0);
        let deleted = self.files.delete_files_before(keep_from)?;
        self.correct_min_offset(commit_log_min);
        Ok(deleted)
    }

    /// Moves the minimum offset to the first unit whose record is at or after `commit_log_min`.
    pub fn correct_min_offset(&self, commit_log_min: i64) {
        let first_file_start = (self.files.min_offset() / CQ_UNIT_SIZE as u64) as i64;
        self.set_min_offset(first_file_start);
        if commit_log_min <= 0 {
            return;
        }
        let mut index = self.min_offset();
        let max = self.max_offset();
        let mut min_ext_addr = None;
        while index < max {
            let raw = byte_of(index).and_then(|b| self.unit_at_byte(b));
            match raw {
                Some(u) if !u.is_blank() && u.commit_log_offset >= commit_log_min => {
                    min_ext_addr = Some(u.tags_code).filter(|c| is_ext_addr(*c));
                    break;
                }
                Some(_) => index += 1,
                None => break,
            }
        }
        self.set_min_offset(index);
        if let (Some(ext), Some(addr)) = (&self.ext, min_ext_addr) {
            if let Err(e) = ext.delete_before(addr) {
                tracing::warn!(topic = %self.topic, queue = self.queue_id, error = %e, "expired consume-queue ext files not deleted");
            }
        }
    }
}

#[cfg(test)]
mod tests;
