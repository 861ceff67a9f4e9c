//! The consume-queue ext file (RocketMQ's `ConsumeQueueExt`, `enableConsumeQueueExt`): per
//! message, its real tags code, store time and filter bit map, with the consume-queue unit's
//! tags-code field holding the unit's address instead.
//!
//! Files live in `consumequeue_ext/{topic}/{queueId}/`, named by their first byte offset (20
//! digits), `mappedFileSizeConsumeQueueExt` bytes each (sparse: disk follows the units). A
//! unit, big-endian: `size i16 | tagsCode i64 | storeTime i64 | bitMapSize i16 | bitMap`,
//! `size = 20 + bitMapSize`. A unit that does not fit before a file's last 4 bytes is not
//! split: `FF FF` marks the file's end and the unit starts the next file. An address is the
//! unit's byte offset plus `i64::MIN` (so it is far below any tags code, which is an `i32`
//! hash or a time); [`is_ext_addr`] tells them apart.
//!
//! What must stay true: a consume-queue unit never names an ext address past the ext file's
//! end (recovery cuts the ext file after the last unit the queue names, never before it);
//! reading an address that does not resolve is `None`, never a panic.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use crate::error::Result;
use crate::io::Storage;
use crate::mapped_file::FileKind;
use crate::mapped_file_queue::MappedFileQueue;

/// The directory of ext files under the store root (RocketMQ's `consumequeue_ext`).
pub const EXT_DIR: &str = "consumequeue_ext";
/// Bytes of a unit without a bit map.
pub const MIN_UNIT_SIZE: usize = 20;
/// Largest unit (its size is an i16).
pub const MAX_UNIT_SIZE: usize = i16::MAX as usize;
/// Bytes kept free at each file's end (for the `FF FF` end mark).
const END_BLANK: usize = 4;
/// Addresses are at or below this (RocketMQ's `MAX_ADDR`, `Integer.MIN_VALUE - 1`).
const MAX_ADDR: i64 = i32::MIN as i64 - 1;

/// Whether a consume-queue tags code is an ext address (RocketMQ's `isExtAddr`).
pub fn is_ext_addr(tags_code: i64) -> bool {
    tags_code <= MAX_ADDR
}

/// The address of byte offset `offset` of the ext files.
pub fn decorate(offset: u64) -> i64 {
    (offset as i64).wrapping_add(i64::MIN)
}

/// The byte offset an address names (None for a tags code).
pub fn undecorate(addr: i64) -> Option<u64> {
    is_ext_addr(addr).then(|| addr.wrapping_sub(i64::MIN) as u64)
}

/// One message's ext unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CqExtUnit {
    /// The message's real tags code.
    pub tags_code: i64,
    /// The message's store time (ms).
    pub store_time: i64,
    /// The filter bit map (empty: none computed).
    pub bit_map: Bytes,
}

impl CqExtUnit {
    fn size(&self) -> usize {
        MIN_UNIT_SIZE + self.bit_map.len()
    }

    fn encode_into(&self, buf: &mut [u8]) {
        buf[0..2].copy_from_slice(&(self.size() as i16).to_be_bytes());
        buf[2..10].copy_from_slice(&self.tags_code.to_be_bytes());
        buf[10..18].copy_from_slice(&self.store_time.to_be_bytes());
        buf[18..20].copy_from_slice(&(self.bit_map.len() as i16).to_be_bytes());
        buf[20..].copy_from_slice(&self.bit_map);
    }
}

/// The size at the head of `buf`: Some(size) of a unit, None for the end of the written
/// units (a zero, the `FF FF` end mark, or fewer than 2 bytes).
fn unit_size(buf: &[u8]) -> Option<usize> {
    let size = i16::from_be_bytes([*buf.first()?, *buf.get(1)?]);
    (size > 0).then_some(size as usize)
}

/// One queue's ext files.
#[derive(Debug)]
pub struct ConsumeQueueExt {
    files: MappedFileQueue,
}

impl ConsumeQueueExt {
    /// The ext files of `(topic, queue_id)` under `root` (the `consumequeue_ext` directory).
    pub fn new(
        storage: Arc<dyn Storage>,
        root: &Path,
        topic: &str,
        queue_id: i32,
        file_size: usize,
    ) -> Self {
        ConsumeQueueExt {
            files: MappedFileQueue::new(
                storage,
                root.join(topic).join(queue_id.to_string()),
                file_size,
                FileKind::QUEUE,
            ),
        }
    }

    /// The underlying files.
    pub fn files(&self) -> &MappedFileQueue {
        &self.files
    }

    /// Maps existing files (their written ends are found by [`ConsumeQueueExt::recover`]).
    pub fn load(&self) -> Result<()> {
        self.files.load()
    }

    /// Appends a unit; its address, or None when it cannot be stored (too large, or the disk
    /// refused): the caller keeps the real tags code in the consume queue then.
    pub fn put(&self, unit: &CqExtUnit) -> Option<i64> {
        let size = unit.size();
        if size > MAX_UNIT_SIZE {
            return None;
        }
        let file_size = self.files.file_size();
        let mut writer = self.files.writer();
        for _ in 0..2 {
            let start = writer
                .tail()
                .map_or(0, |t| t.from_offset() + t.wrote() as u64);
            let tail = match writer.roll(start) {
                Ok(t) => t,
                Err(e) => {
                    tracing::warn!(dir = %self.files.dir().display(), error = %e, "consume-queue ext file not written");
                    return None;
                }
            };
            let at = tail.from_offset() + tail.wrote() as u64;
            let room = file_size.saturating_sub(tail.wrote() + END_BLANK);
            if size > room {
                // The end mark, then the rest of the file counts as written.
                let rest = file_size - tail.wrote();
                let marked = writer.append_tail(rest, |buf| {
                    buf.fill(0);
                    buf[..2].copy_from_slice(&(-1i16).to_be_bytes());
                });
                if marked.is_err() {
                    return None;
                }
                continue;
            }
            return match writer.append_tail(size, |buf| unit.encode_into(buf)) {
                Ok(()) => Some(decorate(at)),
                Err(e) => {
                    tracing::warn!(dir = %self.files.dir().display(), error = %e, "consume-queue ext unit not written");
                    None
                }
            };
        }
        None
    }

    /// The unit at `addr` (None: not an address, or nothing written there).
    pub fn get(&self, addr: i64) -> Option<CqExtUnit> {
        let offset = undecorate(addr)?;
        let file = self.files.find(offset)?;
        let pos = (offset - file.from_offset()) as usize;
        let head = file.read(pos, MIN_UNIT_SIZE)?;
        let size = unit_size(head)?;
        let bit_map_len = i16::from_be_bytes([head[18], head[19]]).max(0) as usize;
        if size < MIN_UNIT_SIZE || MIN_UNIT_SIZE + bit_map_len > size {
            return None;
        }
        let i64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&head[at..at + 8]);
            i64::from_be_bytes(b)
        };
        let bit_map = if bit_map_len == 0 {
            Bytes::new()
        } else {
            file.slice(pos + MIN_UNIT_SIZE, bit_map_len)?
        };
        Some(CqExtUnit {
            tags_code: i64_at(2),
            store_time: i64_at(10),
            bit_map,
        })
    }

    /// Finds the written end: units are walked from the first file; a size that is not
    /// positive ends a file's units, and the last file's end is the end (RocketMQ's
    /// `recover`). Everything after it is cut.
    pub fn recover(&self) -> Result<()> {
        let files = self.files.files();
        let Some(first) = files.first() else {
            return Ok(());
        };
        let mut end = first.from_offset();
        for file in &files {
            // SAFETY: recovery runs before any writer starts.
            let data = unsafe { file.whole() };
            let mut pos = 0;
            while let Some(size) = data.get(pos..).and_then(unit_size) {
                if pos + size > data.len() {
                    break;
                }
                pos += size;
            }
            end = file.from_offset() + pos as u64;
        }
        self.files.writer().truncate_to(end)
    }

    /// Cuts everything after the unit at `max_addr`, the last one the consume queue names
    /// (RocketMQ's `truncateByMaxAddress`); an `max_addr` that is not an address (the queue
    /// names none) changes nothing.
    pub fn truncate_after(&self, max_addr: i64) -> Result<()> {
        let Some(offset) = undecorate(max_addr) else {
            return Ok(());
        };
        let Some(unit) = self.get(max_addr) else {
            tracing::warn!(dir = %self.files.dir().display(), offset, "the consume queue names an ext unit the ext file lacks");
            return Ok(());
        };
        let end = offset + (MIN_UNIT_SIZE + unit.bit_map.len()) as u64;
        if end < self.files.max_offset() {
            self.files.writer().truncate_to(end)?;
        }
        Ok(())
    }

    /// Retention: deletes the files wholly below the unit at `min_addr`, the first the
    /// consume queue still names (RocketMQ's `truncateByMinAddress`).
    pub fn delete_before(&self, min_addr: i64) -> Result<usize> {
        let Some(offset) = undecorate(min_addr) else {
            return Ok(0);
        };
        let size = self.files.file_size() as u64;
        self.files.delete_files_before(offset - offset % size)
    }

    /// Flushes written units.
    pub fn flush(&self) -> Result<()> {
        self.files.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::FsStorage;

    fn ext(dir: &Path, file_size: usize) -> ConsumeQueueExt {
        ConsumeQueueExt::new(Arc::new(FsStorage), dir, "T", 0, file_size)
    }

    fn unit(i: i64, bits: usize) -> CqExtUnit {
        CqExtUnit {
            tags_code: i,
            store_time: 1_700_000_000_000 + i,
            bit_map: Bytes::from(vec![i as u8; bits]),
        }
    }

    #[test]
    fn addresses() {
        assert_eq!(decorate(0), i64::MIN);
        assert_eq!(undecorate(decorate(34)), Some(34));
        assert!(is_ext_addr(decorate(1 << 40)));
        for code in [
            0,
            -1,
            i64::from(i32::MIN),
            i64::from(i32::MAX),
            1_700_000_000_000,
        ] {
            assert!(
                !is_ext_addr(code),
                "a tags code is never an address: {code}"
            );
        }
    }

    #[test]
    fn units_round_trip_roll_over_and_recover() {
        let dir = tempfile::tempdir().unwrap();
        // 100-byte files: 34-byte units, two per file (68 + 34 > 96), then the end mark.
        let e = ext(dir.path(), 100);
        let addrs: Vec<i64> = (0..5).map(|i| e.put(&unit(i, 14)).unwrap()).collect();
        assert_eq!(addrs[1], decorate(34));
        assert_eq!(
            addrs[2],
            decorate(100),
            "a unit is never split across files"
        );
        for (i, a) in addrs.iter().enumerate() {
            assert_eq!(e.get(*a), Some(unit(i as i64, 14)));
        }
        assert_eq!(
            e.get(decorate(10)),
            None,
            "not a unit's start: no unit (size 0)"
        );
        assert_eq!(e.get(decorate(10_000)), None);
        assert_eq!(e.get(42), None, "a tags code is not an address");
        // On disk as RocketMQ writes it.
        let raw = std::fs::read(dir.path().join("T/0/00000000000000000000")).unwrap();
        assert_eq!(&raw[0..2], &34i16.to_be_bytes());
        assert_eq!(&raw[18..20], &14i16.to_be_bytes());
        assert_eq!(&raw[68..70], &[0xff, 0xff], "the end mark");
        drop(e);

        let e = ext(dir.path(), 100);
        e.load().unwrap();
        e.recover().unwrap();
        assert_eq!(
            e.files().max_offset(),
            234,
            "two files of units and one on the third"
        );
        // The queue names only the first three: the rest is cut, and writing goes on there.
        e.truncate_after(addrs[2]).unwrap();
        assert_eq!(e.files().max_offset(), 134);
        assert_eq!(e.get(addrs[3]), None);
        assert_eq!(e.put(&unit(9, 0)).unwrap(), decorate(134));
        assert_eq!(e.get(decorate(134)).unwrap().bit_map.len(), 0);
        assert_eq!(e.delete_before(addrs[2]).unwrap(), 1);
        assert_eq!(e.get(addrs[0]), None);
        assert_eq!(e.get(addrs[2]), Some(unit(2, 14)));
    }
}
