//! A simulated disk for crash tests: every mapped file has a memory image (what the store
//! sees) and a durable image (what survives a power loss). `sync` copies memory to durable;
//! [`SimStorage::power_loss`] throws away or tears what was never synced.
//!
//! Directory operations (create, delete, rename) are durable at once: the store's files only
//! change size by creation, so losing unsynced *content* is the failure that matters.
//!
//! Space is counted as a file system would: a mapped file uses only the pages reserved
//! through [`Region::reserve`] (files are sparse), small files their length. A reservation
//! beyond the disk's capacity fails with ENOSPC, and a synced page that was never reserved is
//! recorded ([`SimStorage::unreserved_writes`]): on a real full disk that write is a SIGBUS.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::io::{LockGuard, Region, Storage};

const PAGE: usize = 4096;

struct SimFile {
    mem: Box<[std::cell::UnsafeCell<u8>]>,
    durable: Mutex<Vec<u8>>,
    /// Per 4 KiB page: whether it has disk blocks. `None` for small files written whole.
    reserved: Mutex<Option<Vec<bool>>>,
}

// SAFETY: the memory image is written through raw pointers exactly as an mmap is; the store's
// own locking makes those writes exclusive, as with a real mapping.
unsafe impl Send for SimFile {}
unsafe impl Sync for SimFile {}

impl SimFile {
    fn new(durable: Vec<u8>) -> Self {
        let mem: Box<[std::cell::UnsafeCell<u8>]> = durable
            .iter()
            .map(|b| std::cell::UnsafeCell::new(*b))
            .collect();
        SimFile {
            mem,
            durable: Mutex::new(durable),
            reserved: Mutex::new(None),
        }
    }

    fn mapped(durable: Vec<u8>, reserved: Vec<bool>) -> Self {
        let f = SimFile::new(durable);
        *f.reserved() = Some(reserved);
        f
    }

    fn reserved(&self) -> MutexGuard<'_, Option<Vec<bool>>> {
        self.reserved.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Bytes of disk the file uses.
    fn usage(&self) -> u64 {
        match &*self.reserved() {
            Some(pages) => pages.iter().filter(|r| **r).count() as u64 * PAGE as u64,
            None => self.mem.len() as u64,
        }
    }

    fn ptr(&self) -> *mut u8 {
        self.mem.as_ptr() as *mut u8
    }

    fn mem(&self) -> &[u8] {
        // SAFETY: read while no writer is active (between store lifetimes).
        unsafe { std::slice::from_raw_parts(self.ptr(), self.mem.len()) }
    }

    fn durable(&self) -> MutexGuard<'_, Vec<u8>> {
        self.durable.lock().unwrap_or_else(|e| e.into_inner())
    }
}

struct SimRegion(Arc<SimFile>, Arc<Mutex<State>>);

impl Region for SimRegion {
    fn as_ptr(&self) -> *mut u8 {
        self.0.ptr()
    }

    fn len(&self) -> usize {
        self.0.mem.len()
    }

    fn sync(&self, offset: usize, len: usize) -> io::Result<()> {
        let (delay, alive) = {
            let mut state = self.1.lock().unwrap_or_else(|e| e.into_inner());
            (state.sync_delay, state.tick())
        };
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        if !alive {
            return Ok(()); // the disk died before this sync: nothing reaches it
        }
        let end = (offset + len).min(self.len());
        let mut durable = self.0.durable();
        // SAFETY: synced bytes are below the write position and no longer change.
        let src = unsafe { std::slice::from_raw_parts(self.as_ptr().add(offset), end - offset) };
        let mut unreserved = 0;
        if let Some(pages) = &*self.0.reserved() {
            let first = offset / PAGE;
            for (page, reserved) in pages[first..end.div_ceil(PAGE)].iter().enumerate() {
                let page = first + page;
                let (a, b) = ((page * PAGE).max(offset), ((page + 1) * PAGE).min(end));
                if !reserved && src[a - offset..b - offset] != durable[a..b] {
                    unreserved += 1;
                }
            }
        }
        durable[offset..end].copy_from_slice(src);
        drop(durable);
        if unreserved > 0 {
            self.1
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .unreserved_writes += unreserved;
        }
        Ok(())
    }

    fn reserve(&self, offset: usize, len: usize) -> io::Result<()> {
        let end = (offset + len).min(self.len());
        if offset >= end {
            return Ok(());
        }
        let mut state = self.1.lock().unwrap_or_else(|e| e.into_inner());
        // Before this file's page lock: counting usage takes every file's.
        let available = state.available();
        let mut reserved = self.0.reserved();
        let Some(pages) = reserved.as_mut() else {
            return Ok(());
        };
        let range = offset / PAGE..end.div_ceil(PAGE);
        let new = pages[range.clone()].iter().filter(|r| !**r).count() as u64 * PAGE as u64;
        if new > available {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        pages[range].iter_mut().for_each(|r| *r = true);
        state.reserved_bytes += new;
        Ok(())
    }

    fn discard(&self, offset: usize, len: usize) -> io::Result<()> {
        let end = (offset + len).min(self.len());
        // SAFETY: the caller owns the range (at or above the write position).
        unsafe { std::ptr::write_bytes(self.as_ptr().add(offset), 0, end - offset) };
        if !self.1.lock().unwrap_or_else(|e| e.into_inner()).tick() {
            return Ok(());
        }
        self.0.durable()[offset..end].fill(0);
        // Whole pages are punched out, as FsStorage does.
        let mut freed = 0;
        if let Some(pages) = self.0.reserved().as_mut() {
            for page in &mut pages[offset.div_ceil(PAGE)..(end / PAGE).max(offset.div_ceil(PAGE))] {
                if std::mem::take(page) {
                    freed += PAGE as u64;
                }
            }
        }
        let mut state = self.1.lock().unwrap_or_else(|e| e.into_inner());
        state.reserved_bytes -= freed;
        Ok(())
    }
}

/// How unsynced bytes fare at a power loss.
#[derive(Debug, Clone, Copy)]
pub enum PowerLoss {
    /// Every unsynced byte is lost.
    DropUnsynced,
    /// The first `n` unsynced bytes of each file reach the disk, the rest do not: a torn
    /// write at the end of the log.
    KeepFirst(usize),
    /// Each unsynced 4 KiB page independently does or does not reach the disk.
    RandomPages(u64),
}

#[derive(Default)]
struct State {
    files: BTreeMap<PathBuf, Arc<SimFile>>,
    dirs: BTreeSet<PathBuf>,
    locks: BTreeSet<PathBuf>,
    disk_total: u64,
    disk_used_extra: u64,
    /// Pages of mapped files with blocks.
    reserved_bytes: u64,
    /// Synced pages that were never reserved.
    unreserved_writes: u64,
    sync_delay: std::time::Duration,
    /// Durable operations left before the disk dies ([`SimStorage::crash_after`]).
    ops_left: Option<u64>,
    /// Files created after the disk died: gone at the power loss.
    phantoms: BTreeSet<PathBuf>,
}

impl State {
    /// Counts one durable operation; false once the disk has died (the operation then has
    /// no durable effect).
    fn tick(&mut self) -> bool {
        match &mut self.ops_left {
            None => true,
            Some(0) => false,
            Some(n) => {
                *n -= 1;
                true
            }
        }
    }

    fn used(&self) -> u64 {
        let small: u64 = self
            .files
            .values()
            .filter(|f| f.reserved().is_none())
            .map(|f| f.mem.len() as u64)
            .sum();
        small + self.reserved_bytes + self.disk_used_extra
    }

    fn available(&self) -> u64 {
        self.disk_total.saturating_sub(self.used())
    }

    fn insert(&mut self, path: &Path, file: Arc<SimFile>) {
        if let Some(old) = self.files.insert(path.to_path_buf(), file) {
            self.forget(&old);
        }
    }

    fn forget(&mut self, file: &SimFile) {
        if file.reserved().is_some() {
            self.reserved_bytes -= file.usage();
        }
    }
}

/// The simulated disk.
#[derive(Default, Clone)]
pub struct SimStorage {
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for SimStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimStorage")
            .field("files", &self.state().files.len())
            .finish()
    }
}

struct SimLock {
    state: Arc<Mutex<State>>,
    root: PathBuf,
}

impl Drop for SimLock {
    fn drop(&mut self) {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .locks
            .remove(&self.root);
    }
}

fn xorshift(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

impl SimStorage {
    /// An empty disk of 1 TiB.
    pub fn new() -> Self {
        let sim = SimStorage::default();
        sim.state().disk_total = 1 << 40;
        sim
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Shared handle for [`crate::StoreConfig`]-based opening.
    pub fn shared(&self) -> Arc<dyn Storage> {
        Arc::new(self.clone())
    }

    /// Simulates a power loss: each file's memory image becomes what survived. Call only
    /// while no store is open on this disk.
    pub fn power_loss(&self, mode: PowerLoss) {
        let mut state = self.state();
        for path in std::mem::take(&mut state.phantoms) {
            if let Some(f) = state.files.remove(&path) {
                state.forget(&f);
            }
        }
        state.ops_left = None;
        let state = state;
        let mut seed = match mode {
            PowerLoss::RandomPages(s) => s.max(1),
            _ => 1,
        };
        for file in state.files.values() {
            let mut durable = file.durable();
            let mem = file.mem();
            match mode {
                PowerLoss::DropUnsynced => {}
                PowerLoss::KeepFirst(n) => {
                    if let Some(first) = mem.iter().zip(durable.iter()).position(|(a, b)| a != b) {
                        let end = (first + n).min(mem.len());
                        durable[first..end].copy_from_slice(&mem[first..end]);
                    }
                }
                PowerLoss::RandomPages(_) => {
                    for (i, page) in mem.chunks(4096).enumerate() {
                        let start = i * 4096;
                        if page != &durable[start..start + page.len()]
                            && xorshift(&mut seed) % 2 == 0
                        {
                            durable[start..start + page.len()].copy_from_slice(page);
                        }
                    }
                }
            }
            // SAFETY: no store is open, so nothing else touches the memory image.
            unsafe { std::ptr::copy_nonoverlapping(durable.as_ptr(), file.ptr(), durable.len()) };
        }
    }

    /// Flips bits of a durable byte (and its memory image): media corruption.
    pub fn corrupt(&self, path: &Path, offset: usize, xor: u8) {
        let state = self.state();
        if let Some(file) = state.files.get(path) {
            let mut durable = file.durable();
            durable[offset] ^= xor;
            // SAFETY: no store is open.
            unsafe { *file.ptr().add(offset) = durable[offset] };
        }
    }

    /// Cuts a file to `len` bytes (it is zero-extended again when mapped).
    pub fn truncate(&self, path: &Path, len: usize) {
        let mut state = self.state();
        if let Some(file) = state.files.get(path) {
            let mut data = file.durable().clone();
            data.truncate(len);
            let mut pages = file.reserved().clone().unwrap_or_default();
            pages.truncate(len.div_ceil(PAGE));
            let kept = pages.iter().filter(|r| **r).count() as u64 * PAGE as u64;
            state.insert(path, Arc::new(SimFile::mapped(data, pages)));
            state.reserved_bytes += kept;
        }
    }

    /// Deletes a file (as `rm` would, between store lifetimes).
    pub fn remove_path(&self, path: &Path) {
        let _ = self.remove(path);
    }

    /// Makes the disk die after `ops` more durable operations (syncs, discards, small-file
    /// writes, file creations and deletions), at whatever point the store is then: later ones
    /// change nothing durable, as if the power went out there. The store keeps running on its
    /// memory image until [`SimStorage::power_loss`], which also revives the disk.
    pub fn crash_after(&self, ops: u64) {
        self.state().ops_left = Some(ops);
    }

    /// Whether the disk has died ([`SimStorage::crash_after`]).
    pub fn crashed(&self) -> bool {
        self.state().ops_left == Some(0)
    }

    /// How many synced pages were written without a reservation (each a SIGBUS on a real
    /// full disk); the store keeps this at zero.
    pub fn unreserved_writes(&self) -> u64 {
        self.state().unreserved_writes
    }

    /// Bytes of disk in use, as `du` would count them.
    pub fn used_bytes(&self) -> u64 {
        self.state().used()
    }

    /// A file's durable content.
    pub fn durable(&self, path: &Path) -> Option<Vec<u8>> {
        self.state().files.get(path).map(|f| f.durable().clone())
    }

    /// Paths of all files, sorted.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.state().files.keys().cloned().collect()
    }

    /// Makes every sync take `delay` (a slow disk).
    pub fn set_sync_delay(&self, delay: std::time::Duration) {
        self.state().sync_delay = delay;
    }

    /// Pretends `bytes` of the disk are used by something else (for retention tests).
    pub fn set_foreign_usage(&self, total: u64, used_by_others: u64) {
        let mut s = self.state();
        s.disk_total = total;
        s.disk_used_extra = used_by_others;
    }
}

impl Storage for SimStorage {
    fn map(&self, path: &Path, size: usize, create: bool) -> io::Result<Box<dyn Region>> {
        let mut state = self.state();
        let file = match state.files.get(path) {
            Some(f) if f.mem.len() >= size && f.reserved().is_some() => f.clone(),
            Some(f) => {
                // Extended (sparse), or a small file mapped for the first time.
                let mut data = f.durable().clone();
                data.resize(size, 0);
                let mut pages = f
                    .reserved()
                    .clone()
                    .unwrap_or_else(|| vec![true; f.mem.len().div_ceil(PAGE)]);
                pages.resize(size.div_ceil(PAGE), false);
                let kept = pages.iter().filter(|r| **r).count() as u64 * PAGE as u64;
                let f = Arc::new(SimFile::mapped(data, pages));
                state.insert(path, f.clone());
                state.reserved_bytes += kept;
                f
            }
            None if create => {
                let f = Arc::new(SimFile::mapped(
                    vec![0; size],
                    vec![false; size.div_ceil(PAGE)],
                ));
                state.files.insert(path.to_path_buf(), f.clone());
                if !state.tick() {
                    state.phantoms.insert(path.to_path_buf());
                }
                f
            }
            None => {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("{} not found", path.display()),
                ))
            }
        };
        Ok(Box::new(SimRegion(file, self.state.clone())))
    }

    fn file_len(&self, path: &Path) -> io::Result<Option<u64>> {
        Ok(self.state().files.get(path).map(|f| f.mem.len() as u64))
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let state = self.state();
        let mut names: BTreeSet<String> = BTreeSet::new();
        for p in state.files.keys().chain(state.dirs.iter()) {
            if let Ok(rest) = p.strip_prefix(dir) {
                if let Some(first) = rest.components().next() {
                    if let Some(s) = first.as_os_str().to_str() {
                        if !s.is_empty() {
                            names.insert(s.to_owned());
                        }
                    }
                }
            }
        }
        Ok(names.into_iter().collect())
    }

    fn is_dir(&self, path: &Path) -> bool {
        let state = self.state();
        state.dirs.contains(path) || state.files.keys().any(|p| p.starts_with(path) && p != path)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut state = self.state();
        if !state.tick() && !state.phantoms.contains(path) {
            return Ok(()); // the disk died: the file stays
        }
        if let Some(f) = state.files.remove(path) {
            state.forget(&f);
        }
        Ok(())
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.state().dirs.insert(dir.to_path_buf());
        Ok(())
    }

    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        Ok(self.state().files.get(path).map(|f| f.durable().clone()))
    }

    fn write_atomic(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let mut state = self.state();
        // The new copy is written beside the old one before the rename replaces it.
        if data.len() as u64 > state.available() {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        if !state.tick() {
            return Ok(()); // the disk died: the old content stays
        }
        state.insert(path, Arc::new(SimFile::new(data.to_vec())));
        Ok(())
    }

    fn lock(&self, root: &Path) -> io::Result<LockGuard> {
        let mut state = self.state();
        if !state.locks.insert(root.to_path_buf()) {
            return Err(io::Error::new(io::ErrorKind::WouldBlock, "locked"));
        }
        Ok(Box::new(SimLock {
            state: self.state.clone(),
            root: root.to_path_buf(),
        }))
    }

    fn disk_space(&self, _path: &Path) -> io::Result<(u64, u64)> {
        let state = self.state();
        Ok((state.disk_total, state.available()))
    }
}
