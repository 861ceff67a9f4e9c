//! A simulated disk for crash tests: every mapped file has a memory image (what the store
//! sees) and a durable image (what survives a power loss). `sync` copies memory to durable;
//! [`SimStorage::power_loss`] throws away or tears what was never synced.
//!
//! Directory operations (create, delete, rename) are durable at once: the store's files only
//! change size by creation, so losing unsynced *content* is the failure that matters.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::io::{LockGuard, Region, Storage};

struct SimFile {
    mem: Box<[std::cell::UnsafeCell<u8>]>,
    durable: Mutex<Vec<u8>>,
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
        let delay = self.1.lock().unwrap_or_else(|e| e.into_inner()).sync_delay;
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        let end = (offset + len).min(self.len());
        let mut durable = self.0.durable();
        // SAFETY: synced bytes are below the write position and no longer change.
        let src = unsafe { std::slice::from_raw_parts(self.as_ptr().add(offset), end - offset) };
        durable[offset..end].copy_from_slice(src);
        Ok(())
    }

    fn discard(&self, offset: usize, len: usize) -> io::Result<()> {
        let end = (offset + len).min(self.len());
        // SAFETY: the caller owns the range (at or above the write position).
        unsafe { std::ptr::write_bytes(self.as_ptr().add(offset), 0, end - offset) };
        self.0.durable()[offset..end].fill(0);
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
    sync_delay: std::time::Duration,
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
        let state = self.state();
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
            state
                .files
                .insert(path.to_path_buf(), Arc::new(SimFile::new(data)));
        }
    }

    /// Deletes a file (as `rm` would, between store lifetimes).
    pub fn remove_path(&self, path: &Path) {
        self.state().files.remove(path);
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
            Some(f) if f.mem.len() >= size => f.clone(),
            Some(f) => {
                let mut data = f.durable().clone();
                data.resize(size, 0);
                let f = Arc::new(SimFile::new(data));
                state.files.insert(path.to_path_buf(), f.clone());
                f
            }
            None if create => {
                let f = Arc::new(SimFile::new(vec![0; size]));
                state.files.insert(path.to_path_buf(), f.clone());
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
        self.state().files.remove(path);
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
        self.state()
            .files
            .insert(path.to_path_buf(), Arc::new(SimFile::new(data.to_vec())));
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
        let used: u64 = state
            .files
            .values()
            .map(|f| f.mem.len() as u64)
            .sum::<u64>()
            + state.disk_used_extra;
        Ok((state.disk_total, state.disk_total.saturating_sub(used)))
    }
}
