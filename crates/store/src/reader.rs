//! A read-only view of a store directory (`commitlog/` + `consumequeue/`) for offline
//! analysis: no lock file, no recovery, nothing written, so an archived or copied store (or
//! one a broker is still writing) can be read as it is.
//!
//! Every file is mapped read-only. What a reader trusts: CommitLog file names (their start
//! offsets) and the ConsumeQueue units that point inside them; a unit or record that does not
//! check out is reported as an error naming the place, never a panic.

use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::consume_queue::{CqUnit, CQ_UNIT_SIZE};
use crate::error::{Result, StoreError};
use rocketpy_protocol::message::record::{self, Decoded, RecordView};

struct Mapped {
    start: u64,
    map: Option<Mmap>,
}

fn map_files(dir: &Path) -> Result<Vec<Mapped>> {
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(StoreError::io(dir, e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io(dir, e))?;
        let name = entry.file_name();
        let Some(start) = name
            .to_str()
            .filter(|n| n.len() == 20)
            .and_then(|n| n.parse::<u64>().ok())
        else {
            continue; // not a store file (a stray copy, a temp file)
        };
        let path = entry.path();
        let file = File::open(&path).map_err(|e| StoreError::io(&path, e))?;
        let len = file.metadata().map_err(|e| StoreError::io(&path, e))?.len();
        // SAFETY: read-only mapping; a concurrent writer only appends past what units
        // reference, and every byte read is bounds- and format-checked.
        let map = if len == 0 {
            None
        } else {
            Some(unsafe { Mmap::map(&file) }.map_err(|e| StoreError::io(&path, e))?)
        };
        out.push(Mapped { start, map });
    }
    out.sort_by_key(|m| m.start);
    Ok(out)
}

impl Mapped {
    fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }
}

/// One queue's ConsumeQueue files.
struct QueueFiles {
    files: Vec<Mapped>,
}

impl QueueFiles {
    fn unit(&self, index: i64) -> Option<CqUnit> {
        let byte = u64::try_from(index)
            .ok()?
            .checked_mul(CQ_UNIT_SIZE as u64)?;
        let i = self
            .files
            .partition_point(|f| f.start <= byte)
            .checked_sub(1)?;
        let f = &self.files[i];
        let at = usize::try_from(byte - f.start).ok()?;
        let raw = f.bytes().get(at..at + CQ_UNIT_SIZE)?;
        let unit = CqUnit::decode(raw);
        unit.is_valid().then_some(unit)
    }

    /// One past the last written unit (0 when none).
    fn max_offset(&self) -> i64 {
        for f in self.files.iter().rev() {
            let units = f.bytes().len() / CQ_UNIT_SIZE;
            // Units are written in order and the tail is zeroes: binary search the boundary.
            let written = |i: usize| {
                CqUnit::decode(&f.bytes()[i * CQ_UNIT_SIZE..(i + 1) * CQ_UNIT_SIZE]).is_valid()
            };
            let n = partition(units, written);
            if n > 0 {
                return (f.start / CQ_UNIT_SIZE as u64) as i64 + n as i64;
            }
        }
        0
    }
}

/// The number of leading `i` in `0..len` for which `pred` holds (pred true, then false).
fn partition(len: usize, mut pred: impl FnMut(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// A read-only store directory.
pub struct StoreReader {
    root: PathBuf,
    commit_log: Vec<Mapped>,
}

impl StoreReader {
    /// Maps the CommitLog files of the store at `root`.
    pub fn open(root: impl AsRef<Path>) -> Result<StoreReader> {
        let root = root.as_ref().to_path_buf();
        if !root.join("commitlog").is_dir() {
            return Err(StoreError::corrupt(
                root.display().to_string(),
                "not a store directory: it has no commitlog/",
            ));
        }
        let commit_log = map_files(&root.join("commitlog"))?;
        Ok(StoreReader { root, commit_log })
    }

    /// Topics with a consume queue, sorted.
    pub fn topics(&self) -> Result<Vec<String>> {
        let dir = self.root.join("consumequeue");
        let mut out = Vec::new();
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                if e.path().is_dir() {
                    if let Some(name) = e.file_name().to_str() {
                        out.push(name.to_owned());
                    }
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// Queue ids of `topic`, sorted.
    pub fn queue_ids(&self, topic: &str) -> Result<Vec<i32>> {
        rocketpy_protocol::topic::validate_topic(topic)?;
        let mut out = Vec::new();
        if let Ok(entries) = std::fs::read_dir(self.root.join("consumequeue").join(topic)) {
            for e in entries.flatten() {
                if let Some(q) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) {
                    out.push(q);
                }
            }
        }
        out.sort_unstable();
        Ok(out)
    }

    fn queue(&self, topic: &str, queue_id: i32) -> Result<QueueFiles> {
        rocketpy_protocol::topic::validate_topic(topic)?;
        let dir = self
            .root
            .join("consumequeue")
            .join(topic)
            .join(queue_id.to_string());
        Ok(QueueFiles {
            files: map_files(&dir)?,
        })
    }

    fn commit_log_min(&self) -> u64 {
        self.commit_log.first().map_or(0, |f| f.start)
    }

    fn record_at(&self, unit: &CqUnit) -> Option<&[u8]> {
        let off = u64::try_from(unit.commit_log_offset).ok()?;
        let i = self
            .commit_log
            .partition_point(|f| f.start <= off)
            .checked_sub(1)?;
        let f = &self.commit_log[i];
        let at = usize::try_from(off - f.start).ok()?;
        f.bytes()
            .get(at..at.checked_add(usize::try_from(unit.size).ok()?)?)
    }

    /// The first and one-past-last readable offsets of a queue (`min == max`: empty). Units
    /// whose record was deleted by retention are below `min`.
    pub fn offsets(&self, topic: &str, queue_id: i32) -> Result<(i64, i64)> {
        Ok(self.bounds(&self.queue(topic, queue_id)?))
    }

    fn bounds(&self, q: &QueueFiles) -> (i64, i64) {
        let max = q.max_offset();
        let first = q
            .files
            .first()
            .map_or(0, |f| (f.start / CQ_UNIT_SIZE as u64) as i64);
        let cl_min = self.commit_log_min();
        // Units pointing below the oldest CommitLog file are gone; they are in order.
        let skipped = partition((max - first).max(0) as usize, |i| {
            q.unit(first + i as i64)
                .is_none_or(|u| (u.commit_log_offset as u64) < cl_min)
        });
        ((first + skipped as i64).min(max), max)
    }

    /// The first offset whose message was stored at or after `timestamp_ms` (`max` if none).
    pub fn offset_by_time(&self, topic: &str, queue_id: i32, timestamp_ms: i64) -> Result<i64> {
        let q = self.queue(topic, queue_id)?;
        let (min, max) = self.bounds(&q);
        let mut err = None;
        let before = partition((max - min) as usize, |i| {
            match self.store_time(&q, min + i as i64) {
                Ok(ts) => ts < timestamp_ms,
                Err(e) => {
                    err.get_or_insert(e);
                    false
                }
            }
        });
        match err {
            Some(e) => Err(e),
            None => Ok(min + before as i64),
        }
    }

    fn store_time(&self, q: &QueueFiles, index: i64) -> Result<i64> {
        let unit = q.unit(index).ok_or_else(|| missing_unit(index))?;
        let raw = self
            .record_at(&unit)
            .ok_or_else(|| missing_record(index, &unit))?;
        match record::decode(raw, false)? {
            Decoded::Message(v) => Ok(v.store_timestamp),
            _ => Err(missing_record(index, &unit)),
        }
    }

    /// The record sizes (as stored in the CommitLog) of offsets `offsets`, read from the
    /// consume queue alone; stops early at the first offset without a valid unit.
    pub fn unit_sizes(
        &self,
        topic: &str,
        queue_id: i32,
        offsets: std::ops::Range<i64>,
    ) -> Result<Vec<i32>> {
        let q = self.queue(topic, queue_id)?;
        Ok(offsets.map_while(|i| q.unit(i).map(|u| u.size)).collect())
    }

    /// Hands the message at each offset of `offsets` to `visit`, in order, until `visit`
    /// answers `false`; returns the next offset to read.
    pub fn read(
        &self,
        topic: &str,
        queue_id: i32,
        offsets: std::ops::Range<i64>,
        mut visit: impl FnMut(&RecordView<'_>) -> Result<bool>,
    ) -> Result<i64> {
        let q = self.queue(topic, queue_id)?;
        let mut index = offsets.start;
        while index < offsets.end {
            let unit = q.unit(index).ok_or_else(|| missing_unit(index))?;
            let raw = self
                .record_at(&unit)
                .ok_or_else(|| missing_record(index, &unit))?;
            let more = match record::decode(raw, false)? {
                Decoded::Message(v) if v.topic == topic && v.queue_offset == index => visit(&v)?,
                _ => return Err(missing_record(index, &unit)),
            };
            index += 1;
            if !more {
                break;
            }
        }
        Ok(index)
    }
}

fn missing_unit(index: i64) -> StoreError {
    StoreError::corrupt(
        format!("consume queue offset {index}"),
        "no valid unit (deleted, never written, or damaged)",
    )
}

fn missing_record(index: i64, unit: &CqUnit) -> StoreError {
    StoreError::corrupt(
        format!("consume queue offset {index}"),
        format!(
            "its unit points at CommitLog offset {} size {}, where no matching record is",
            unit.commit_log_offset, unit.size
        ),
    )
}
