//! IndexFile: a hash index from message keys to CommitLog offsets, in RocketMQ's layout.
//! All integers big-endian.
//!
//! ```text
//! header (40):  beginTimestamp i64 | endTimestamp i64 | beginPhyOffset i64 |
//!               endPhyOffset i64 | hashSlotCount i32 | indexCount i32
//! slots:        hashSlotNum x i32: number of the newest entry of the slot (0 = none)
//! entries (20): keyHash i32 | phyOffset i64 | timeDiff i32 (s since beginTimestamp) |
//!               prevIndex i32 (older entry of the same slot, 0 = none)
//! ```
//! Entry numbers start at 1 (`indexCount` starts at 1), so 0 means "none" everywhere. A key is
//! `topic#key`; its hash is `abs(String.hashCode())` (0 for `i32::MIN`), its slot `hash % slots`.
//!
//! The file is sparse. Before a write, its disk blocks are reserved (see
//! [`crate::io::Region::reserve`]): the header and slot table whole (slots are written at
//! random), the entries in a window ahead of the count that doubles up to 1 MiB, so a file
//! holding few entries uses little disk and a full disk is an error, never a SIGBUS.

use std::path::{Path, PathBuf};

use parking_lot::RwLock;

use crate::error::{Result, StoreError};
use crate::io::{Region, Storage};
use crate::reserve::Reserved;
use rocketpy_protocol::message::java_hash::{java_string_hash, java_string_hash_concat};

/// Header size.
pub const HEADER_SIZE: usize = 40;
const SLOT_SIZE: usize = 4;
const ENTRY_SIZE: usize = 20;

/// Size of an index file with these dimensions.
pub fn file_size(slot_num: usize, max_index: usize) -> usize {
    HEADER_SIZE + slot_num * SLOT_SIZE + max_index * ENTRY_SIZE
}

/// RocketMQ's `indexKeyHashMethod`.
pub fn key_hash(key: &str) -> i32 {
    java_string_hash(key).checked_abs().unwrap_or(0)
}

/// [`key_hash`] of `topic#key`.
pub fn topic_key_hash(topic: &str, key: &str) -> i32 {
    java_string_hash_concat(&[topic, "#", key])
        .checked_abs()
        .unwrap_or(0)
}

/// The header fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexHeader {
    pub begin_timestamp: i64,
    pub end_timestamp: i64,
    pub begin_phy_offset: i64,
    pub end_phy_offset: i64,
    pub hash_slot_count: i32,
    pub index_count: i32,
}

/// One index file.
pub struct IndexFile {
    path: PathBuf,
    region: Box<dyn Region>,
    slot_num: usize,
    max_index: usize,
    /// How far the file has disk blocks: header and slots whole, then entries in steps.
    reserved: Reserved,
    /// The header as last written; readers (queries) share the lock, the index thread takes
    /// it exclusively to add entries.
    lock: RwLock<IndexHeader>,
}

impl std::fmt::Debug for IndexFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexFile")
            .field("path", &self.path)
            .field("header", &self.header())
            .finish()
    }
}

impl IndexFile {
    /// Creates `path`, starting where the previous file ended.
    pub fn create(
        storage: &dyn Storage,
        path: &Path,
        slot_num: usize,
        max_index: usize,
        begin_phy_offset: i64,
        begin_timestamp: i64,
    ) -> Result<Self> {
        let file = Self::open(storage, path, slot_num, max_index, true)?;
        if let Err(e) = file.reserve_entries(1) {
            drop(file);
            let _ = storage.remove(path);
            return Err(e);
        }
        {
            let mut h = file.lock.write();
            *h = IndexHeader {
                begin_timestamp,
                end_timestamp: begin_timestamp,
                begin_phy_offset,
                end_phy_offset: begin_phy_offset,
                hash_slot_count: 0,
                index_count: 1,
            };
            file.write_header(&h);
        }
        Ok(file)
    }

    /// Maps an existing file (or creates it with `create`).
    pub fn open(
        storage: &dyn Storage,
        path: &Path,
        slot_num: usize,
        max_index: usize,
        create: bool,
    ) -> Result<Self> {
        let size = file_size(slot_num, max_index);
        if let Some(len) = storage
            .file_len(path)
            .map_err(|e| StoreError::io(path, e))?
        {
            if len != size as u64 && !(create && len == 0) {
                return Err(StoreError::corrupt(
                    path.display().to_string(),
                    format!("index file is {len} bytes; maxHashSlotNum/maxIndexNum give {size}"),
                ));
            }
        }
        let region = storage
            .map(path, size, create)
            .map_err(|e| StoreError::io(path, e))?;
        // Slots and entries are touched one page at a time, in hash order.
        region
            .no_read_around()
            .map_err(|e| StoreError::io(path, e))?;
        let file = IndexFile {
            path: path.to_path_buf(),
            region,
            slot_num,
            max_index,
            reserved: Reserved::new(
                HEADER_SIZE + slot_num * SLOT_SIZE,
                crate::mapped_file::FileKind::QUEUE.reserve_step,
            ),
            lock: RwLock::new(IndexHeader::default()),
        };
        let header = file.read_header();
        *file.lock.write() = header;
        Ok(file)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn bytes(&self, pos: usize, len: usize) -> &[u8] {
        assert!(
            pos + len <= self.region.len(),
            "index access out of the file"
        );
        // SAFETY: in range (asserted); accesses are ordered by `lock`: the single writer
        // holds it exclusively.
        unsafe { std::slice::from_raw_parts(self.region.as_ptr().add(pos), len) }
    }

    fn put_bytes(&self, pos: usize, data: &[u8]) {
        assert!(
            pos + data.len() <= self.region.len(),
            "index access out of the file"
        );
        // SAFETY: in range; the caller holds `lock` exclusively.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.region.as_ptr().add(pos), data.len())
        };
    }

    fn i32_at(&self, pos: usize) -> i32 {
        let b = self.bytes(pos, 4);
        i32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    fn i64_at(&self, pos: usize) -> i64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.bytes(pos, 8));
        i64::from_be_bytes(a)
    }

    fn read_header(&self) -> IndexHeader {
        IndexHeader {
            begin_timestamp: self.i64_at(0),
            end_timestamp: self.i64_at(8),
            begin_phy_offset: self.i64_at(16),
            end_phy_offset: self.i64_at(24),
            hash_slot_count: self.i32_at(32),
            // A damaged count must not send readers past the entries.
            index_count: self.i32_at(36).clamp(1, self.max_index as i32),
        }
    }

    fn write_header(&self, h: &IndexHeader) {
        let mut b = [0u8; HEADER_SIZE];
        b[0..8].copy_from_slice(&h.begin_timestamp.to_be_bytes());
        b[8..16].copy_from_slice(&h.end_timestamp.to_be_bytes());
        b[16..24].copy_from_slice(&h.begin_phy_offset.to_be_bytes());
        b[24..32].copy_from_slice(&h.end_phy_offset.to_be_bytes());
        b[32..36].copy_from_slice(&h.hash_slot_count.to_be_bytes());
        b[36..40].copy_from_slice(&h.index_count.to_be_bytes());
        self.put_bytes(0, &b);
    }

    /// The header.
    pub fn header(&self) -> IndexHeader {
        *self.lock.read()
    }

    /// Whether no more entries fit.
    pub fn is_full(&self) -> bool {
        self.header().index_count as usize >= self.max_index
    }

    fn entry_pos(&self, index: usize) -> usize {
        HEADER_SIZE + self.slot_num * SLOT_SIZE + index * ENTRY_SIZE
    }

    /// Gives disk blocks to everything up to entry `upto` (exclusive): header and slots
    /// whole on the first call, entries in a doubling window. The caller is the writer.
    fn reserve_entries(&self, upto: usize) -> Result<()> {
        let end = self.entry_pos(upto.min(self.max_index));
        self.reserved
            .reserve_to(self.region.as_ref(), &self.path, end)
    }

    /// Adds `key -> phy_offset`; `false` when the file is full.
    pub fn put_key(&self, key: &str, phy_offset: i64, store_timestamp: i64) -> Result<bool> {
        Ok(self.put_record("", [key], phy_offset, store_timestamp)? == 1)
    }

    /// Adds `topic#key` for each of `keys` (or `key` itself when `topic` is empty), all for
    /// one record, under one lock; returns how many fit before the file was full. Fails,
    /// adding none, when the entries' disk space cannot be reserved.
    pub fn put_record<'k, K>(
        &self,
        topic: &str,
        keys: K,
        phy_offset: i64,
        store_timestamp: i64,
    ) -> Result<usize>
    where
        K: IntoIterator<Item = &'k str>,
        K::IntoIter: Clone,
    {
        let keys = keys.into_iter();
        let mut h = self.lock.write();
        self.reserve_entries(h.index_count as usize + keys.clone().count())?;
        let mut added = 0;
        for key in keys {
            let count = h.index_count as usize;
            if count >= self.max_index {
                break;
            }
            let hash = if topic.is_empty() {
                key_hash(key)
            } else {
                topic_key_hash(topic, key)
            };
            let slot_pos = HEADER_SIZE + (hash as usize % self.slot_num) * SLOT_SIZE;
            let mut prev = self.i32_at(slot_pos);
            if prev <= 0 || prev as usize >= count {
                prev = 0;
            }
            let time_diff = if h.begin_timestamp <= 0 {
                0
            } else {
                (store_timestamp.saturating_sub(h.begin_timestamp) / 1000).clamp(0, i32::MAX as i64)
            };
            let mut entry = [0u8; ENTRY_SIZE];
            entry[0..4].copy_from_slice(&hash.to_be_bytes());
            entry[4..12].copy_from_slice(&phy_offset.to_be_bytes());
            entry[12..16].copy_from_slice(&(time_diff as i32).to_be_bytes());
            entry[16..20].copy_from_slice(&prev.to_be_bytes());
            self.put_bytes(self.entry_pos(count), &entry);
            self.put_bytes(slot_pos, &(count as i32).to_be_bytes());
            if count <= 1 {
                h.begin_phy_offset = phy_offset;
                h.begin_timestamp = store_timestamp;
            }
            if prev == 0 {
                // Header fields come from disk: a damaged one must not overflow.
                h.hash_slot_count = h.hash_slot_count.saturating_add(1);
            }
            h.index_count += 1;
            h.end_phy_offset = phy_offset;
            h.end_timestamp = store_timestamp;
            added += 1;
        }
        if added > 0 {
            self.write_header(&h);
        }
        Ok(added)
    }

    /// Offsets of entries for `key` stored in `[begin, end]` (ms), newest first, at most
    /// `max_num`. Hash collisions are possible: callers check the messages' keys.
    pub fn select(&self, key: &str, max_num: usize, begin: i64, end: i64, out: &mut Vec<i64>) {
        let h = *self.lock.read();
        let count = h.index_count;
        let hash = key_hash(key);
        let slot_pos = HEADER_SIZE + (hash as usize % self.slot_num) * SLOT_SIZE;
        let mut next = self.i32_at(slot_pos);
        // Entries are numbered 1..count: `count` itself is the next free one.
        if next <= 0 || next >= count || count <= 1 {
            return;
        }
        // Each step follows `prevIndex` to an older entry; damaged links could form a cycle,
        // so the walk is bounded by the number of entries.
        for _ in 0..count {
            if out.len() >= max_num {
                return;
            }
            let pos = self.entry_pos(next as usize);
            let hash_read = self.i32_at(pos);
            let phy = self.i64_at(pos + 4);
            let time_diff = self.i32_at(pos + 12);
            let prev = self.i32_at(pos + 16);
            if time_diff < 0 {
                return;
            }
            let time = h.begin_timestamp.saturating_add(time_diff as i64 * 1000);
            if hash_read == hash && (begin..=end).contains(&time) {
                out.push(phy);
            }
            if prev <= 0 || prev >= count || prev == next || time < begin {
                return;
            }
            next = prev;
        }
    }

    /// Whether the file may hold entries stored in `[begin, end]`.
    pub fn is_time_matched(&self, begin: i64, end: i64) -> bool {
        let h = self.header();
        (begin < h.begin_timestamp && end > h.end_timestamp)
            || (h.begin_timestamp..=h.end_timestamp).contains(&begin)
            || (h.begin_timestamp..=h.end_timestamp).contains(&end)
    }

    /// Makes the file durable.
    pub fn flush(&self) -> Result<()> {
        let _h = self.lock.read();
        self.region
            .sync(0, self.region.len())
            .map_err(|e| StoreError::io(&self.path, e))
    }
}

/// `yyyyMMddHHmmssSSS` of `millis` in local time: RocketMQ's index file names.
pub fn index_file_name(millis: i64) -> String {
    let secs = millis.div_euclid(1000) as libc::time_t;
    // SAFETY: localtime_r fills the zeroed struct from a valid time.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    unsafe { libc::localtime_r(&secs, &mut tm) };
    format!(
        "{:04}{:02}{:02}{:02}{:02}{:02}{:03}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        millis.rem_euclid(1000)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimStorage;

    #[test]
    fn put_select_chain_and_full() {
        let sim = SimStorage::new();
        let path = Path::new("/s/index/x");
        let f = IndexFile::create(&sim, path, 8, 6, 0, 0).unwrap();
        assert!(f.put_key("T#a", 100, 1_000_000).unwrap());
        assert!(f.put_key("T#b", 200, 1_001_000).unwrap());
        assert!(f.put_key("T#a", 300, 1_002_000).unwrap());
        let mut out = Vec::new();
        f.select("T#a", 10, 0, i64::MAX, &mut out);
        assert_eq!(out, vec![300, 100], "newest first");
        out.clear();
        f.select("T#a", 10, 1_001_500, i64::MAX, &mut out);
        assert_eq!(out, vec![300], "time range");
        assert!(f.put_key("T#c", 400, 1_003_000).unwrap());
        assert!(f.put_key("T#d", 500, 1_004_000).unwrap());
        assert!(
            !f.put_key("T#e", 600, 1_005_000).unwrap(),
            "entries 1..5 of 6 used: full"
        );
        let h = f.header();
        assert_eq!(
            (h.index_count, h.begin_phy_offset, h.end_phy_offset),
            (6, 100, 500)
        );
        assert_eq!(h.begin_timestamp, 1_000_000);

        // Byte layout: entry 2 ("T#b") sits after the header and the 8 slots.
        let raw = sim.durable(path).unwrap_or_default();
        assert!(raw.is_empty() || raw.len() == file_size(8, 6));
        f.flush().unwrap();
        let raw = sim.durable(path).unwrap();
        let e2 = HEADER_SIZE + 8 * 4 + 2 * 20;
        assert_eq!(&raw[e2..e2 + 4], &key_hash("T#b").to_be_bytes());
        assert_eq!(&raw[e2 + 4..e2 + 12], &200i64.to_be_bytes());
        assert_eq!(&raw[e2 + 12..e2 + 16], &1i32.to_be_bytes());
        assert_eq!(&raw[36..40], &6i32.to_be_bytes());
    }

    #[test]
    fn damaged_links_stay_inside_the_file() {
        // Found by fuzz/index_file_load: a slot naming entry `count` (one past the last
        // entry, the end of a full file) sent a query past the end of the mapping.
        let sim = SimStorage::new();
        let path = Path::new("/s/index/y");
        let (slots, entries) = (16, 32);
        let mut image = vec![0u8; file_size(slots, entries)];
        image[36..40].copy_from_slice(&(entries as i32).to_be_bytes()); // full
        let slot = HEADER_SIZE + (key_hash("T#a") as usize % slots) * SLOT_SIZE;
        image[slot..slot + 4].copy_from_slice(&(entries as i32).to_be_bytes());
        use crate::io::Storage;
        sim.write_atomic(path, &image).unwrap();
        let f = IndexFile::open(&sim, path, slots, entries, false).unwrap();
        let mut out = Vec::new();
        f.select("T#a", 10, 0, i64::MAX, &mut out);
        assert!(out.is_empty());
        assert!(!f.put_key("T#a", 1, 1).unwrap(), "full");
    }

    #[test]
    fn damaged_header_numbers_do_not_overflow() {
        // Found by fuzz/index_file_load: counters and timestamps at their limits.
        let sim = SimStorage::new();
        let path = Path::new("/s/index/z");
        let mut image = vec![0u8; file_size(16, 32)];
        image[0..8].copy_from_slice(&i64::MAX.to_be_bytes()); // beginTimestamp
        image[32..36].copy_from_slice(&i32::MAX.to_be_bytes()); // hashSlotCount
        image[36..40].copy_from_slice(&2i32.to_be_bytes());
        use crate::io::Storage;
        sim.write_atomic(path, &image).unwrap();
        let f = IndexFile::open(&sim, path, 16, 32, false).unwrap();
        assert!(f.put_key("T#a", 7, i64::MIN).unwrap());
        let mut out = Vec::new();
        f.select("T#a", 10, i64::MIN, i64::MAX, &mut out);
        assert_eq!(f.header().hash_slot_count, i32::MAX);
    }

    #[test]
    fn names_and_hashes() {
        assert_eq!(index_file_name(0).len(), 17);
        assert_eq!(key_hash("polygenelubricants"), 0);
        assert!(key_hash("TopicTest#KEY") >= 0);
    }
}
