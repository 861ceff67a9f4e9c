//! One fixed-size file mapped into memory, written append-only.
//!
//! Invariants:
//! - bytes below `wrote` are immutable once published (a Release store of `wrote`), so any
//!   number of readers may hold slices of them while the single writer appends above;
//! - only [`crate::mapped_file_queue::QueueWriter`] writes, and it holds the queue's write lock,
//!   so there is never more than one writer of a file;
//! - `flushed <= wrote <= size`;
//! - every byte the writer stores lies below `reserved` (it has disk blocks): a store through
//!   the mapping into a page the file system cannot back kills the process with SIGBUS, so
//!   space is reserved first, where running out is an error ([`MappedFile::reserve_to`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use crate::error::{Result, StoreError};
use crate::io::{Region, Storage};
use crate::reserve::Reserved;

/// Names of store files: the start offset, zero-padded to 20 digits.
pub fn file_name(offset: u64) -> String {
    format!("{offset:020}")
}

/// Parses a 20-digit file name; anything else is not a store file.
pub fn parse_file_name(name: &str) -> Option<u64> {
    (name.len() == 20 && name.bytes().all(|b| b.is_ascii_digit()))
        .then(|| name.parse().ok())
        .flatten()
}

/// How a kind of store file is used, which decides how it gets disk blocks and pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileKind {
    /// Largest reservation step (see [`MappedFile::reserve_to`]).
    pub reserve_step: usize,
    /// Whether a page fault also reads the pages around it (the kernel's read-around, up to
    /// the device's read-ahead size: 8 MiB on the test VM). Right for CommitLog files, read
    /// in long runs. Wrong for consume-queue and index files, touched a page at a time: the
    /// first fault in a fresh 6 MB consume-queue file populated all of it with zero pages,
    /// 1.5 ms — most of the cost of a queue's first message.
    pub read_around: bool,
}

/// How far ahead of the CommitLog's writer the prefault thread (`crate::prefault`) makes
/// pages resident, and so the step in which CommitLog files reserve disk.
pub const PREFAULT_WINDOW: usize = 16 << 20;

impl FileKind {
    /// CommitLog files. The step is the prefault window: the prefault thread reserves ahead
    /// of the writer, so appends rarely reserve themselves.
    pub const COMMIT_LOG: FileKind = FileKind {
        reserve_step: PREFAULT_WINDOW,
        read_around: true,
    };
    /// Consume-queue (and index) files: thousands of them exist, and each should hold little
    /// more disk and memory than its units.
    pub const QUEUE: FileKind = FileKind {
        reserve_step: 1 << 20,
        read_around: false,
    };
}

/// A memory-mapped store file.
pub struct MappedFile {
    path: PathBuf,
    from_offset: u64,
    size: usize,
    region: Box<dyn Region>,
    /// How far the file has disk blocks (see [`MappedFile::reserve_to`]).
    reserved: Reserved,
    wrote: AtomicUsize,
    flushed: AtomicUsize,
    /// Bytes handed to the kernel for write-back (durable only once `flushed` passes them).
    written_back: AtomicUsize,
    /// End of the range made resident ahead of the writer.
    prefaulted: AtomicUsize,
}

impl std::fmt::Debug for MappedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedFile")
            .field("path", &self.path)
            .field("wrote", &self.wrote())
            .finish()
    }
}

impl MappedFile {
    /// Creates (or reuses, zero-extended) `dir/<20-digit from_offset>` of `size` bytes,
    /// sparse: blocks come from [`MappedFile::reserve_to`], in steps of at most
    /// `kind.reserve_step`.
    pub fn create(
        storage: &dyn Storage,
        dir: &Path,
        from_offset: u64,
        size: usize,
        kind: FileKind,
    ) -> Result<Self> {
        storage
            .create_dir_all(dir)
            .map_err(|e| StoreError::io(dir, e))?;
        let path = dir.join(file_name(from_offset));
        Self::map(storage, path, from_offset, size, true, kind)
    }

    /// Maps an existing file; a file shorter than `size` (cut short by a crash or a copy) is
    /// extended with zeroes, which readers see as unwritten space. A longer one is refused.
    /// Its blocks are reserved as the writer reaches them (recovery reads only).
    pub fn open(storage: &dyn Storage, path: &Path, size: usize, kind: FileKind) -> Result<Self> {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let from_offset = parse_file_name(name).ok_or_else(|| {
            StoreError::corrupt(path.display().to_string(), "not a 20-digit store file name")
        })?;
        Self::map(storage, path.to_path_buf(), from_offset, size, false, kind)
    }

    fn map(
        storage: &dyn Storage,
        path: PathBuf,
        from_offset: u64,
        size: usize,
        create: bool,
        kind: FileKind,
    ) -> Result<Self> {
        let len = storage
            .file_len(&path)
            .map_err(|e| StoreError::io(&path, e))?;
        match len {
            Some(len) if len > size as u64 => {
                return Err(StoreError::corrupt(
                    path.display().to_string(),
                    format!("file is {len} bytes, larger than the configured {size}"),
                ))
            }
            Some(len) if len < size as u64 && !create => {
                tracing::warn!(path = %path.display(), len, size, "store file shorter than configured; zero-extending");
            }
            _ => {}
        }
        let region = storage
            .map(&path, size, create)
            .map_err(|e| StoreError::io(&path, e))?;
        if region.len() != size {
            return Err(StoreError::corrupt(
                path.display().to_string(),
                format!("mapped {} bytes, expected {size}", region.len()),
            ));
        }
        if !kind.read_around {
            region
                .no_read_around()
                .map_err(|e| StoreError::io(&path, e))?;
        }
        Ok(MappedFile {
            path,
            from_offset,
            size,
            region,
            reserved: Reserved::new(0, kind.reserve_step),
            wrote: AtomicUsize::new(0),
            flushed: AtomicUsize::new(0),
            written_back: AtomicUsize::new(0),
            prefaulted: AtomicUsize::new(0),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Global offset of the file's first byte.
    pub fn from_offset(&self) -> u64 {
        self.from_offset
    }

    /// Capacity in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Bytes written and visible to readers.
    pub fn wrote(&self) -> usize {
        self.wrote.load(Ordering::Acquire)
    }

    /// Bytes known to be on disk.
    pub fn flushed(&self) -> usize {
        self.flushed.load(Ordering::Acquire)
    }

    /// Free bytes.
    pub fn remaining(&self) -> usize {
        self.size - self.wrote()
    }

    /// Whether no more bytes fit.
    pub fn is_full(&self) -> bool {
        self.wrote() == self.size
    }

    /// Written bytes `[pos, pos+len)`, if all are below the write position.
    pub fn read(&self, pos: usize, len: usize) -> Option<&[u8]> {
        let end = pos.checked_add(len)?;
        if end > self.wrote() {
            return None;
        }
        // SAFETY: [pos, end) is below the published write position, hence immutable and
        // initialised; the mapping lives as long as `self`.
        Some(unsafe { std::slice::from_raw_parts(self.region.as_ptr().add(pos), len) })
    }

    /// Written bytes from `pos` to the write position.
    pub fn read_from(&self, pos: usize) -> Option<&[u8]> {
        let wrote = self.wrote();
        (pos <= wrote)
            .then(|| self.read(pos, wrote - pos))
            .flatten()
    }

    /// The same bytes as [`MappedFile::read`], as `Bytes` that keep the file mapped: no copy.
    pub fn slice(self: &Arc<Self>, pos: usize, len: usize) -> Option<Bytes> {
        self.read(pos, len)?;
        Some(Bytes::from_owner(MappedSlice {
            file: self.clone(),
            pos,
            len,
        }))
    }

    /// The whole mapping, written or not: for recovery scans before any writer starts.
    ///
    /// # Safety
    /// No writer may write this file while the slice lives.
    pub(crate) unsafe fn whole(&self) -> &[u8] {
        std::slice::from_raw_parts(self.region.as_ptr(), self.size)
    }

    /// Mutable access to unpublished bytes `[pos, pos+len)`.
    ///
    /// # Safety
    /// The caller is the file's only writer (holds the queue's write lock), `pos >= wrote()`,
    /// and `pos + len <= size`.
    // The mapping is shared by readers (below `wrote`) and the one writer (above it); the
    // caller's write lock is what makes this `&mut` exclusive, hence the allow.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn region_mut(&self, pos: usize, len: usize) -> &mut [u8] {
        debug_assert!(pos >= self.wrote() && pos + len <= self.size);
        std::slice::from_raw_parts_mut(self.region.as_ptr().add(pos), len)
    }

    /// End of the range with disk blocks.
    pub fn reserved(&self) -> usize {
        self.reserved.get()
    }

    /// Gives `[.., end)` disk blocks, so the writer may store there: at least a page more
    /// than last time and up to twice as much, at most `kind.reserve_step`, so a file's footprint
    /// stays within a step of its data. Cheap when already done; on a full disk an error
    /// (ENOSPC), never a signal. Called by the writer and the prefault thread.
    pub(crate) fn reserve_to(&self, end: usize) -> Result<()> {
        self.reserved
            .reserve_to(self.region.as_ref(), &self.path, end)
    }

    /// Overwrites published bytes `[pos, pos+data.len())`: recovery's repair of a unit torn
    /// by a power loss. Breaks the "published bytes never change" rule, so only recovery may
    /// call it, before any reader or writer exists.
    pub(crate) fn repair(&self, pos: usize, data: &[u8]) -> Result<()> {
        let end = pos + data.len();
        assert!(end <= self.wrote(), "repair above the write position");
        self.reserve_to(end)?;
        // SAFETY: in range (asserted); recovery is the only user of the file (see above).
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.region.as_ptr().add(pos), data.len())
        };
        // Flushed again with the next flush.
        self.flushed.fetch_min(pos, Ordering::AcqRel);
        Ok(())
    }

    /// Makes bytes below `wrote` visible to readers.
    pub(crate) fn publish(&self, wrote: usize) {
        debug_assert!(wrote <= self.size);
        self.wrote.store(wrote, Ordering::Release);
    }

    /// Sets the write position during recovery (also lowering `flushed` to match).
    pub(crate) fn reset_positions(&self, wrote: usize) {
        self.wrote.store(wrote, Ordering::Release);
        self.flushed.store(wrote, Ordering::Release);
    }

    /// Zeroes everything from `pos` to the end of the file: a torn or truncated tail must not
    /// survive, or a later recovery (or its resynchronisation after a corrupt record) could
    /// read stale records back once new appends end just before them.
    ///
    /// `pos` must be the write position (nothing at or above it is visible to readers).
    pub(crate) fn discard_tail(&self, pos: usize) -> Result<()> {
        if pos < self.size {
            // The discarded pages lose their blocks: the next write reserves them again.
            self.reserved.forget_from(pos);
            self.region
                .discard(pos, self.size - pos)
                .map_err(|e| StoreError::io(&self.path, e))?;
            self.region
                .sync(pos, self.size - pos)
                .map_err(|e| StoreError::io(&self.path, e))?;
        }
        Ok(())
    }

    /// Writes dirty pages to disk; returns the new flushed position. Complete pages are
    /// unmapped first, as for [`MappedFile::start_writeback`].
    pub fn flush(&self) -> Result<usize> {
        const PAGE: usize = 4096;
        let wrote = self.wrote();
        let flushed = self.flushed();
        if wrote > flushed {
            let (page, complete) = (flushed / PAGE * PAGE, wrote / PAGE * PAGE);
            if complete > page {
                self.region
                    .unmap_pages(page, complete - page)
                    .map_err(|e| StoreError::io(&self.path, e))?;
            }
            self.region
                .sync(flushed, wrote - flushed)
                .map_err(|e| StoreError::io(&self.path, e))?;
            self.flushed.store(wrote, Ordering::Release);
        }
        Ok(wrote)
    }

    /// End of the range made resident ahead of the writer.
    pub fn prefaulted(&self) -> usize {
        self.prefaulted.load(Ordering::Acquire)
    }

    /// Makes `[prefaulted, end)` resident and writable (see [`crate::io::Region::prefault`]).
    pub fn prefault_to(&self, end: usize) -> Result<()> {
        let end = end.min(self.size);
        let from = self.prefaulted().max(self.wrote());
        if end > from {
            // Blocks first: populating pages of a sparse file that the disk cannot back fails.
            self.reserve_to(end)?;
            self.region
                .prefault(from, end - from)
                .map_err(|e| StoreError::io(&self.path, e))?;
            self.prefaulted.fetch_max(end, Ordering::AcqRel);
        }
        Ok(())
    }

    /// Starts write-back of the bytes written since the last call, without waiting.
    ///
    /// Only whole pages: the page still being filled is left dirty. Writing it back would
    /// clean and write-protect it, so the next append to it takes a write fault that can wait
    /// on the file system's journal — the main source of put latency spikes under ASYNC_FLUSH.
    ///
    /// The pages are unmapped first (they are complete: nothing writes them again). Cleaning
    /// a page that is mapped writable write-protects its entry, and every CPU running the
    /// store's threads must then drop it from its TLB: one inter-processor interrupt per 4 KiB
    /// page, measured at a sixth of the broker's CPU under a 100 B bulk load on a 2-core VM
    /// (each IPI a VM exit). Unmapping a range costs one TLB flush for all of it.
    pub fn start_writeback(&self) -> Result<()> {
        const PAGE: usize = 4096;
        let end = self.wrote() / PAGE * PAGE;
        let from = self
            .written_back
            .load(Ordering::Acquire)
            .max(self.flushed());
        if end > from {
            let page = from / PAGE * PAGE;
            self.region
                .unmap_pages(page, end - page)
                .map_err(|e| StoreError::io(&self.path, e))?;
            self.region
                .start_writeback(from, end - from)
                .map_err(|e| StoreError::io(&self.path, e))?;
            self.written_back.store(end, Ordering::Release);
        }
        Ok(())
    }

    /// Bytes written but not yet flushed.
    pub fn dirty(&self) -> usize {
        self.wrote() - self.flushed()
    }
}

/// An owner that keeps a file mapped while `Bytes` point into it.
struct MappedSlice {
    file: Arc<MappedFile>,
    pos: usize,
    len: usize,
}

impl AsRef<[u8]> for MappedSlice {
    fn as_ref(&self) -> &[u8] {
        // SAFETY-relevant: `slice` checked the range is published, and published bytes never
        // change, so this cannot fail; fall back to empty rather than panic.
        self.file.read(self.pos, self.len).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(reserve_step: usize) -> FileKind {
        FileKind {
            reserve_step,
            ..FileKind::QUEUE
        }
    }

    #[test]
    fn names() {
        assert_eq!(file_name(1073741824), "00000000001073741824");
        assert_eq!(parse_file_name("00000000001073741824"), Some(1073741824));
        assert_eq!(parse_file_name("0000000000107374182x"), None);
        assert_eq!(parse_file_name("123"), None);
    }

    #[test]
    fn short_file_is_extended_long_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(file_name(0));
        std::fs::write(&path, [1u8; 10]).unwrap();
        let fs = crate::io::FsStorage;
        let f = MappedFile::open(&fs, &path, 4096, FileKind::QUEUE).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 4096);
        drop(f);
        assert!(MappedFile::open(&fs, &path, 1024, FileKind::QUEUE).is_err());
    }

    #[test]
    fn discard_tail_zeroes_and_syncs() {
        let dir = tempfile::tempdir().unwrap();
        let fs = crate::io::FsStorage;
        let f = MappedFile::create(&fs, dir.path(), 0, 3 * 4096 + 100, step(4096)).unwrap();
        // SAFETY: test-only sole writer.
        unsafe { f.region_mut(0, f.size()).fill(7) };
        f.reset_positions(10);
        f.discard_tail(10).unwrap();
        f.reset_positions(f.size());
        let all = f.read(0, f.size()).unwrap();
        assert!(all[..10].iter().all(|b| *b == 7));
        assert!(all[10..].iter().all(|b| *b == 0));
    }

    #[test]
    fn reservation_doubles_up_to_its_step_and_fails_cleanly() {
        use crate::sim::SimStorage;
        let sim = SimStorage::new();
        let dir = Path::new("/s/q");
        let f = MappedFile::create(&sim, dir, 0, 1 << 22, step(1 << 14)).unwrap();
        assert_eq!((f.reserved(), sim.used_bytes()), (0, 0), "created sparse");
        f.reserve_to(20).unwrap();
        assert_eq!(f.reserved(), 4096);
        f.reserve_to(4097).unwrap();
        assert_eq!(f.reserved(), 8192);
        f.reserve_to(8193).unwrap();
        assert_eq!(f.reserved(), 16384);
        f.reserve_to(16385).unwrap();
        assert_eq!(f.reserved(), 32768);
        f.reserve_to(32769).unwrap();
        assert_eq!(
            f.reserved(),
            49152,
            "steps stop doubling at the kind's reserve step"
        );
        assert_eq!(sim.used_bytes(), 49152);

        sim.set_foreign_usage(60_000, 0);
        let err = f.reserve_to(49153).unwrap_err();
        assert!(err.is_no_space(), "{err}");
        assert_eq!(f.reserved(), 49152, "a failed reservation reserves nothing");
    }

    #[test]
    fn pages_unmapped_for_write_back_keep_their_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let fs = crate::io::FsStorage;
        let f = MappedFile::create(&fs, dir.path(), 0, 4 * 4096, step(4096)).unwrap();
        f.reserve_to(f.size()).unwrap();
        let pattern = |i: usize| (i % 251) as u8;
        // SAFETY: test-only sole writer.
        let fill = |from: usize, to: usize| unsafe {
            for (i, b) in f.region_mut(from, to - from).iter_mut().enumerate() {
                *b = pattern(from + i);
            }
        };
        fill(0, 2 * 4096 + 100);
        f.reset_positions(2 * 4096 + 100);
        f.start_writeback().unwrap(); // unmaps pages 0 and 1, not the one being filled
        fill(2 * 4096 + 100, 4 * 4096);
        f.reset_positions(4 * 4096);
        let want: Vec<u8> = (0..4 * 4096).map(pattern).collect();
        assert_eq!(
            f.read(0, f.size()).unwrap(),
            &want[..],
            "read through the mapping"
        );
        f.flush().unwrap();
        assert_eq!(std::fs::read(f.path()).unwrap(), want, "on disk");
    }
}
