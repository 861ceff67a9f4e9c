//! A directory of same-size mapped files forming one logical byte sequence.
//!
//! Readers take a snapshot of the file list (an `RwLock` held only to clone `Arc`s); the one
//! writer goes through [`QueueWriter`], which holds the queue's write lock for its lifetime.
//! The write lock also holds the writer's *tail*, the last file as the writer last saw it:
//! appends reach it without the list's lock or reference-count traffic, which matter when
//! puts alternate between cores (each locked instruction on a line the other core wrote is
//! a cache miss). Every change to the list happens under the write lock and keeps the tail
//! equal to the list's last file, or clears it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard, RwLock};

use crate::error::{Result, StoreError};
use crate::io::Storage;
use crate::mapped_file::{parse_file_name, FileKind, MappedFile};
use crate::padded::Padded;

/// A file mapped ahead of need, by offset; `None` while it is being prepared or after failure.
type Spare = Arc<Mutex<Option<(u64, Arc<MappedFile>)>>>;

/// Files of one CommitLog or ConsumeQueue.
pub struct MappedFileQueue {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    file_size: usize,
    /// How its files get disk blocks and pages.
    kind: FileKind,
    files: RwLock<Vec<Arc<MappedFile>>>,
    /// The write lock, holding the tail (`None` = not looked up yet).
    write_lock: Padded<Mutex<Option<Arc<MappedFile>>>>,
    /// The file after the tail, created ahead of the roll: by a background thread once the
    /// writer is half-way through the tail (with preallocation: rolling a 1 GiB CommitLog file
    /// then costs the writer nothing, and a store holding little data has one file), or by
    /// the writer itself before an append that must not fail half-way ([`QueueWriter::reserve`]).
    spare: Spare,
    /// Offset of the file the background thread was last asked to prepare.
    spare_requested: AtomicU64,
    /// Whether next files are prepared in the background.
    preallocate: bool,
    /// The background preparation under way, joined when the store stops: no file may appear
    /// after that (a restart's recovery would find it beyond the files it kept).
    background: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// When set, pages ahead of the write position are made resident in the background.
    prefaulter: Option<crate::prefault::Prefaulter>,
}

impl std::fmt::Debug for MappedFileQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedFileQueue")
            .field("dir", &self.dir)
            .finish()
    }
}

impl MappedFileQueue {
    /// A queue over `dir` (not yet loaded) of files of one kind.
    pub fn new(
        storage: Arc<dyn Storage>,
        dir: impl Into<PathBuf>,
        file_size: usize,
        kind: FileKind,
    ) -> Self {
        MappedFileQueue {
            storage,
            dir: dir.into(),
            file_size,
            kind,
            files: RwLock::new(Vec::new()),
            write_lock: Padded(Mutex::new(None)),
            spare: Arc::default(),
            spare_requested: AtomicU64::new(u64::MAX),
            preallocate: false,
            background: Mutex::new(None),
            prefaulter: None,
        }
    }

    /// Prepares each next file, and the pages ahead of the writer, in the background.
    pub fn with_preallocation(mut self) -> Self {
        self.preallocate = true;
        self.prefaulter = crate::prefault::Prefaulter::start();
        self
    }

    /// The storage the files live on.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Size of each file.
    pub fn file_size(&self) -> usize {
        self.file_size
    }

    /// Maps the existing files, in offset order. Names must be 20 digits and consecutive.
    pub fn load(&self) -> Result<()> {
        let mut tail = self.write_lock.lock();
        let mut found = Vec::new();
        for name in self
            .storage
            .list(&self.dir)
            .map_err(|e| StoreError::io(&self.dir, e))?
        {
            match parse_file_name(&name) {
                Some(offset) => found.push((offset, self.dir.join(name))),
                None => {
                    tracing::debug!(file = %name, dir = %self.dir.display(), "ignoring non-store file")
                }
            }
        }
        found.sort();
        let mut files = Vec::with_capacity(found.len());
        for (i, (offset, path)) in found.iter().enumerate() {
            if offset % self.file_size as u64 != 0 {
                return Err(StoreError::corrupt(
                    path.display().to_string(),
                    format!(
                        "offset {offset} is not a multiple of the file size {}",
                        self.file_size
                    ),
                ));
            }
            if i > 0 && found[i - 1].0 + self.file_size as u64 != *offset {
                return Err(StoreError::corrupt(
                    self.dir.display().to_string(),
                    format!(
                        "file {offset:020} does not follow {:020}: a file is missing",
                        found[i - 1].0
                    ),
                ));
            }
            let file = MappedFile::open(self.storage.as_ref(), path, self.file_size, self.kind)?;
            // Until recovery says otherwise, every loaded file counts as fully written.
            file.reset_positions(self.file_size);
            files.push(Arc::new(file));
        }
        *self.files.write() = files;
        *tail = None;
        Ok(())
    }

    /// A snapshot of the files.
    pub fn files(&self) -> Vec<Arc<MappedFile>> {
        self.files.read().clone()
    }

    /// Whether there are no files.
    pub fn is_empty(&self) -> bool {
        self.files.read().is_empty()
    }

    /// The first file.
    pub fn first_file(&self) -> Option<Arc<MappedFile>> {
        self.files.read().first().cloned()
    }

    /// The last file.
    pub fn last_file(&self) -> Option<Arc<MappedFile>> {
        self.files.read().last().cloned()
    }

    /// The file holding global `offset`, if any.
    pub fn find(&self, offset: u64) -> Option<Arc<MappedFile>> {
        let files = self.files.read();
        let first = files.first()?.from_offset();
        if offset < first {
            return None;
        }
        let idx = ((offset - first) / self.file_size as u64) as usize;
        files.get(idx).cloned()
    }

    /// Offset of the first byte still stored.
    pub fn min_offset(&self) -> u64 {
        self.first_file().map(|f| f.from_offset()).unwrap_or(0)
    }

    /// Offset just past the last written byte.
    pub fn max_offset(&self) -> u64 {
        self.last_file()
            .map(|f| f.from_offset() + f.wrote() as u64)
            .unwrap_or(0)
    }

    /// Offset just past the last flushed byte.
    pub fn flushed_offset(&self) -> u64 {
        let files = self.files.read();
        for f in files.iter().rev() {
            if f.flushed() > 0 {
                return f.from_offset() + f.flushed() as u64;
            }
        }
        files.first().map(|f| f.from_offset()).unwrap_or(0)
    }

    /// Flushes every file with unflushed bytes.
    pub fn flush(&self) -> Result<()> {
        for f in self.files() {
            if f.dirty() > 0 {
                f.flush()?;
            }
        }
        Ok(())
    }

    /// Starts write-back of new bytes in every file, without waiting.
    pub fn start_writeback(&self) -> Result<()> {
        for f in self.files() {
            if f.dirty() > 0 {
                f.start_writeback()?;
            }
        }
        Ok(())
    }

    /// Bytes written but not flushed.
    pub fn dirty_bytes(&self) -> usize {
        self.files.read().iter().map(|f| f.dirty()).sum()
    }

    /// Takes the write lock.
    pub fn writer(&self) -> QueueWriter<'_> {
        QueueWriter {
            queue: self,
            tail: self.write_lock.lock(),
        }
    }

    /// Creates and maps the file at `offset` on a background thread, into the spare slot.
    fn prepare_in_background(&self, offset: u64) {
        let (spare, storage, dir, size, step) = (
            self.spare.clone(),
            self.storage.clone(),
            self.dir.clone(),
            self.file_size,
            self.kind,
        );
        let mut background = self.background.lock();
        if let Some(previous) = background.take() {
            let _ = previous.join(); // asked for half a file ago: long finished
        }
        let spawned = std::thread::Builder::new()
            .name("rocketpy-allocate".into())
            .spawn(move || {
                // Held while creating: a writer that rolls meanwhile waits for this file
                // instead of creating (or, on failure, seeing removed) the same one.
                let mut slot = spare.lock();
                if slot.as_ref().is_some_and(|(at, _)| *at == offset) {
                    return;
                }
                match MappedFile::create(storage.as_ref(), &dir, offset, size, step) {
                    Ok(f) => *slot = Some((offset, Arc::new(f))),
                    Err(e) => tracing::warn!(error = %e, "preparing the next file failed; it will be created on demand"),
                }
            });
        match spawned {
            Ok(handle) => *background = Some(handle),
            Err(e) => tracing::warn!(error = %e, "cannot start the file allocation thread"),
        }
    }

    /// Waits for the background preparation of a next file, if one is under way. Called when
    /// the store stops, after the last append.
    pub fn join_background(&self) {
        if let Some(handle) = self.background.lock().take() {
            let _ = handle.join();
        }
    }

    /// Deletes every file and the directory (its queue was deleted with its topic). Readers
    /// holding a file keep its mapping until they drop it.
    pub fn destroy(&self) -> Result<()> {
        let mut writer = self.writer();
        *writer.tail = None;
        *self.spare.lock() = None;
        let mut files = self.files.write();
        for f in files.drain(..) {
            self.storage
                .remove(f.path())
                .map_err(|e| StoreError::io(f.path(), e))?;
        }
        // Best effort: the directory may hold files we do not own.
        let _ = std::fs::remove_dir(&self.dir);
        Ok(())
    }

    /// Removes the files ending at or before `offset`, keeping at least the last file.
    /// Returns how many were deleted.
    pub fn delete_files_before(&self, offset: u64) -> Result<usize> {
        // The last file is never deleted, so the writer's tail stays valid.
        let _w = self.write_lock.lock();
        let mut files = self.files.write();
        let mut n = 0;
        while files.len() > 1 && files[0].from_offset() + self.file_size as u64 <= offset {
            let f = files.remove(0);
            self.storage
                .remove(f.path())
                .map_err(|e| StoreError::io(f.path(), e))?;
            n += 1;
        }
        Ok(n)
    }
}

/// Exclusive writer of a [`MappedFileQueue`].
pub struct QueueWriter<'a> {
    queue: &'a MappedFileQueue,
    tail: MutexGuard<'a, Option<Arc<MappedFile>>>,
}

impl QueueWriter<'_> {
    /// The last file, if any.
    pub fn tail(&mut self) -> Option<&Arc<MappedFile>> {
        if self.tail.is_none() {
            *self.tail = self.queue.last_file();
        }
        self.tail.as_ref()
    }

    /// Makes sure the tail has room, creating the first file (at `first_offset`) or the next
    /// one when the last is full.
    pub fn roll(&mut self, first_offset: u64) -> Result<&Arc<MappedFile>> {
        let next = match self.tail() {
            Some(last) if !last.is_full() => None,
            Some(last) => Some(last.from_offset() + self.queue.file_size as u64),
            None => Some(first_offset - first_offset % self.queue.file_size as u64),
        };
        if let Some(offset) = next {
            let file = self.create(offset)?;
            *self.tail = Some(file);
        }
        Ok(self.tail.as_ref().expect("tail set above"))
    }

    /// Writes `len` bytes produced by `fill` at the tail's write position and publishes
    /// them. The tail must exist and have `len` bytes free ([`QueueWriter::roll`]). Fails
    /// (writing nothing) only when the bytes' disk space cannot be reserved.
    pub fn append_tail(&mut self, len: usize, fill: impl FnOnce(&mut [u8])) -> Result<()> {
        let file = self.tail.as_ref().expect("append_tail without a tail");
        let pos = file.wrote();
        assert!(
            pos + len <= file.size(),
            "append past the end of {}",
            file.path().display()
        );
        file.reserve_to(pos + len)?;
        // SAFETY: we hold the write lock (`self.tail`), so we are the only writer; pos is the
        // write position and the assert above keeps the range inside the file.
        let region = unsafe { file.region_mut(pos, len) };
        fill(region);
        file.publish(pos + len);
        if self.queue.preallocate {
            if let Some(p) = &self.queue.prefaulter {
                p.hint(file);
            }
            if pos + len >= file.size() / 2 {
                let next = file.from_offset() + file.size() as u64;
                if self.queue.spare_requested.swap(next, Ordering::Relaxed) != next {
                    self.queue.prepare_in_background(next);
                }
            }
        }
        Ok(())
    }

    /// Reserves disk space for global bytes `[start, end)`, which the coming appends will
    /// write: the tail's share, and the next file's (created now, held as the spare) when the
    /// range crosses the tail's end. The first file is created at `start` if there is none.
    /// After this, appends into the range cannot fail for want of space.
    pub fn reserve(&mut self, start: u64, end: u64) -> Result<()> {
        let size = self.queue.file_size as u64;
        // Borrowed, not cloned: this runs on every put, and a clone's count is a cache line
        // the readers of the file write too.
        if self.tail().is_none() {
            self.roll(start)?;
        }
        let tail = self.tail.as_ref().expect("tail set above");
        let tail_start = tail.from_offset();
        let tail_end = tail_start + size;
        if start < tail_end && end > tail_start {
            let from = start.max(tail_start) - tail_start;
            let to = end.min(tail_end) - tail_start;
            tail.reserve_to(to.max(from) as usize)?;
        }
        if end > tail_end && start < tail_end + size {
            let next = self.prepare(tail_end)?;
            next.reserve_to((end.min(tail_end + size) - tail_end) as usize)?;
        }
        Ok(())
    }

    /// The spare file at `offset`, created now unless the background thread has it ready.
    fn prepare(&mut self, offset: u64) -> Result<Arc<MappedFile>> {
        let q = self.queue;
        let mut spare = q.spare.lock();
        if let Some((at, file)) = spare.as_ref() {
            if *at == offset {
                return Ok(file.clone());
            }
        }
        let file = Arc::new(MappedFile::create(
            q.storage.as_ref(),
            &q.dir,
            offset,
            q.file_size,
            q.kind,
        )?);
        *spare = Some((offset, file.clone()));
        Ok(file)
    }

    fn create(&mut self, offset: u64) -> Result<Arc<MappedFile>> {
        let q = self.queue;
        let ready = q.spare.lock().take().filter(|(at, _)| *at == offset);
        let file = match ready {
            Some((_, file)) => file,
            None => Arc::new(MappedFile::create(
                q.storage.as_ref(),
                &q.dir,
                offset,
                q.file_size,
                q.kind,
            )?),
        };
        q.files.write().push(file.clone());
        Ok(file)
    }

    /// Recovery: sets the write position to global `offset`; zeroes what lies above it in that
    /// file and deletes later files.
    pub fn truncate_to(&mut self, offset: u64) -> Result<()> {
        *self.tail = None;
        *self.queue.spare.lock() = None;
        self.queue
            .spare_requested
            .store(u64::MAX, Ordering::Relaxed);
        let mut files = self.queue.files.write();
        while let Some(last) = files.last() {
            if last.from_offset() > offset {
                let f = files.pop().expect("non-empty");
                self.queue
                    .storage
                    .remove(f.path())
                    .map_err(|e| StoreError::io(f.path(), e))?;
                tracing::info!(file = %f.path().display(), "deleted file past the recovered end");
                continue;
            }
            break;
        }
        let size = self.queue.file_size as u64;
        for f in files.iter() {
            let start = f.from_offset();
            let pos = offset.saturating_sub(start).min(size) as usize;
            f.reset_positions(pos);
            f.discard_tail(pos)?;
        }
        Ok(())
    }
}
