//! ConsumeQueue: the index of one topic queue into the CommitLog.
//!
//! Files live in `consumequeue/{topic}/{queueId}/`, named by their first byte offset
//! (20 digits); each holds `mapedFileSizeConsumeQueue / 20` units. A unit is 20 bytes,
//! big-endian: `commitLogOffset i64 | size i32 | tagsCode i64`. Unit `n` of the queue is the
//! message with queue offset `n`. A "blank" unit `(0, i32::MAX, 0)` fills gaps, as RocketMQ's
//! pre-blank does; readers skip it.

use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use crate::error::{Result, StoreError};
use crate::io::Storage;
use crate::mapped_file::{FileKind, MappedFile};
use crate::mapped_file_queue::MappedFileQueue;

/// Bytes per unit.
pub const CQ_UNIT_SIZE: usize = 20;

/// Byte position of queue offset `index`; `None` for offsets no queue can have (negative, or
/// overflowing: they come from damaged records or hostile requests).
fn byte_of(index: i64) -> Option<u64> {
    u64::try_from(index).ok()?.checked_mul(CQ_UNIT_SIZE as u64)
}

/// One consume-queue unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CqUnit {
    /// Where the record starts in the CommitLog.
    pub commit_log_offset: i64,
    /// The record's total size.
    pub size: i32,
    /// Tags hash (or delivery time for delayed messages).
    pub tags_code: i64,
}

impl CqUnit {
    /// Where the record ends in the CommitLog (saturating: a unit read from a damaged file may
    /// hold any numbers).
    pub fn end(&self) -> i64 {
        self.commit_log_offset.saturating_add(i64::from(self.size))
    }

    /// The gap filler.
    pub const BLANK: CqUnit = CqUnit {
        commit_log_offset: 0,
        size: i32::MAX,
        tags_code: 0,
    };

    /// The 20 bytes of this unit.
    pub fn encode(&self) -> [u8; CQ_UNIT_SIZE] {
        let mut out = [0u8; CQ_UNIT_SIZE];
        out[0..8].copy_from_slice(&self.commit_log_offset.to_be_bytes());
        out[8..12].copy_from_slice(&self.size.to_be_bytes());
        out[12..20].copy_from_slice(&self.tags_code.to_be_bytes());
        out
    }

    /// Parses 20 bytes (`buf` must hold at least 20).
    pub fn decode(buf: &[u8]) -> CqUnit {
        let mut o = [0u8; 8];
        o.copy_from_slice(&buf[0..8]);
        let mut t = [0u8; 8];
        t.copy_from_slice(&buf[12..20]);
        CqUnit {
            commit_log_offset: i64::from_be_bytes(o),
            size: i32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]),
            tags_code: i64::from_be_bytes(t),
        }
    }

    /// Whether this is a gap filler.
    pub fn is_blank(&self) -> bool {
        *self == CqUnit::BLANK
    }

    /// Whether recovery accepts this unit as written (RocketMQ's test: offset >= 0, size > 0).
    pub fn is_valid(&self) -> bool {
        self.commit_log_offset >= 0 && self.size > 0
    }
}

/// Units read from one file, starting at a queue offset; shares the file's memory.
#[derive(Debug, Clone)]
pub struct UnitBuffer {
    /// Queue offset of the first unit.
    pub start_offset: i64,
    bytes: Bytes,
}

impl UnitBuffer {
    /// Number of units.
    pub fn len(&self) -> usize {
        self.bytes.len() / CQ_UNIT_SIZE
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Unit `i` of the buffer.
    pub fn get(&self, i: usize) -> CqUnit {
        CqUnit::decode(&self.bytes[i * CQ_UNIT_SIZE..])
    }
}

/// One topic queue's index.
#[derive(Debug)]
pub struct ConsumeQueue {
    topic: String,
    queue_id: i32,
    files: MappedFileQueue,
    /// Byte offset of the first unit still valid (after retention moved it).
    min_logic_offset: AtomicI64,
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
        }
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
                pos += CQ_UNIT_SIZE;
            }
            end = file.from_offset() + pos as u64;
        }
        self.files.writer().truncate_to(end)?;
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
        }
        Ok(())
    }

    fn unit_at_byte(&self, byte: u64) -> Option<CqUnit> {
        let file = self.files.find(byte)?;
        let pos = (byte - file.from_offset()) as usize;
        file.read(pos, CQ_UNIT_SIZE).map(CqUnit::decode)
    }

    /// The unit at queue offset `index`.
    pub fn get(&self, index: i64) -> Option<CqUnit> {
        if index < self.min_offset() {
            return None;
        }
        self.unit_at_byte(byte_of(index)?)
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
                let bytes = unit.encode();
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
                unit.encode()
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
    pub fn put_recovered(&self, index: i64, unit: CqUnit) -> Result<()> {
        let Some(existing) = self.get(index) else {
            return self.put(index, unit);
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
        self.files.flush()
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
        while index < max {
            match self.get(index) {
                Some(u) if !u.is_blank() && u.commit_log_offset >= commit_log_min => break,
                Some(_) => index += 1,
                None => break,
            }
        }
        self.set_min_offset(index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(i: i64) -> CqUnit {
        CqUnit {
            commit_log_offset: i * 100,
            size: 100,
            tags_code: i,
        }
    }

    #[test]
    fn unit_layout() {
        let u = CqUnit {
            commit_log_offset: 0x0102,
            size: 0x0304,
            tags_code: -1,
        };
        let b = u.encode();
        assert_eq!(&b[0..8], &[0, 0, 0, 0, 0, 0, 1, 2]);
        assert_eq!(&b[8..12], &[0, 0, 3, 4]);
        assert_eq!(&b[12..20], &[0xFF; 8]);
        assert_eq!(CqUnit::decode(&b), u);
    }

    /// Found by `make fuzz` (consume_queue_load): a unit of a damaged file ending past
    /// i64::MAX made recovery's truncation overflow.
    #[test]
    fn units_with_any_numbers_do_not_overflow() {
        let dir = tempfile::tempdir().unwrap();
        let cq = ConsumeQueue::new(
            crate::io::FsStorage::shared(),
            dir.path(),
            "T",
            0,
            10 * CQ_UNIT_SIZE,
        );
        let huge = CqUnit {
            commit_log_offset: i64::MAX - 10,
            size: i32::MAX,
            tags_code: 0,
        };
        assert_eq!(huge.end(), i64::MAX);
        cq.put(0, huge).unwrap();
        cq.truncate_dirty(i64::MAX).unwrap();
        assert_eq!(cq.max_offset(), 1, "a unit ending at the end is kept");
        cq.truncate_dirty(0).unwrap();
        assert_eq!(cq.max_offset(), 0);
    }

    #[test]
    fn put_get_roll_and_recover() {
        let dir = tempfile::tempdir().unwrap();
        let cq = ConsumeQueue::new(
            crate::io::FsStorage::shared(),
            dir.path(),
            "T",
            1,
            10 * CQ_UNIT_SIZE,
        );
        for i in 0..25 {
            cq.put(i, unit(i)).unwrap();
        }
        cq.put(3, unit(99)).unwrap(); // duplicate: ignored
        assert_eq!(cq.max_offset(), 25);
        assert_eq!(cq.get(3), Some(unit(3)));
        assert_eq!(cq.get(24), Some(unit(24)));
        assert_eq!(cq.files().files().len(), 3);
        let buf = cq.units_from(12).unwrap();
        assert_eq!((buf.start_offset, buf.len()), (12, 8));
        assert_eq!(buf.get(0), unit(12));
        assert_eq!(cq.roll_next_file(12), 20);
        drop(cq);

        let cq = ConsumeQueue::new(
            crate::io::FsStorage::shared(),
            dir.path(),
            "T",
            1,
            10 * CQ_UNIT_SIZE,
        );
        cq.load().unwrap();
        cq.recover().unwrap();
        assert_eq!(cq.max_offset(), 25);
        cq.truncate_dirty(2100).unwrap(); // units 21.. point past the end
        assert_eq!(cq.max_offset(), 21);
        cq.put(23, unit(23)).unwrap(); // gap: blanks at 21, 22
        assert!(cq.get(21).unwrap().is_blank());
        assert_eq!(cq.get(23), Some(unit(23)));
    }
}
