//! All file I/O of the store goes through [`Storage`], so tests can run the store on a
//! simulated disk ([`crate::sim::SimStorage`]) that loses unsynced bytes or tears writes at a
//! "power loss". [`FsStorage`] is the real thing: files mapped with `mmap`, synced with
//! `msync`, small files replaced atomically.

use std::any::Any;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::MmapRaw;

/// A file mapped into memory. Bytes are written through [`Region::as_ptr`]; they are durable
/// only once a [`Region::sync`] covering them returned.
pub trait Region: Send + Sync {
    /// Start of the mapping (valid for [`Region::len`] bytes while the region lives).
    fn as_ptr(&self) -> *mut u8;
    /// Size of the mapping.
    fn len(&self) -> usize;
    /// Whether the mapping is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Makes `[offset, offset+len)` durable.
    fn sync(&self, offset: usize, len: usize) -> io::Result<()>;
    /// Zeroes `[offset, offset+len)`, releasing disk space where it can.
    fn discard(&self, offset: usize, len: usize) -> io::Result<()>;
    /// Makes `[offset, offset+len)` resident and writable ahead of use, so that writers take
    /// no page faults there. Changes no byte.
    fn prefault(&self, offset: usize, len: usize) -> io::Result<()> {
        let _ = (offset, len);
        Ok(())
    }
    /// Unmaps the whole pages of `[offset, offset+len)` from this process (their bytes stay
    /// in the file and its page cache; a later access maps them again). Changes no byte.
    fn unmap_pages(&self, offset: usize, len: usize) -> io::Result<()> {
        let _ = (offset, len);
        Ok(())
    }
    /// Starts writing `[offset, offset+len)` to disk without waiting (no durability promise).
    fn start_writeback(&self, offset: usize, len: usize) -> io::Result<()> {
        let _ = (offset, len);
        Ok(())
    }
    /// Gives `[offset, offset+len)` disk blocks without writing them, so that writes through
    /// the mapping there cannot fail for want of space: a store to a page of a sparse file
    /// that the full file system cannot back is a SIGBUS, not an error. Fails with
    /// `StorageFull` (ENOSPC) when the space is not there. Changes no byte.
    fn reserve(&self, offset: usize, len: usize) -> io::Result<()> {
        let _ = (offset, len);
        Ok(())
    }
    /// Stops page faults in the mapping from reading the pages around the faulting one
    /// (for files accessed a page at a time). Changes no byte.
    fn no_read_around(&self) -> io::Result<()> {
        Ok(())
    }
}

/// The lock that keeps a second process off a store directory while held.
pub type LockGuard = Box<dyn Any + Send + Sync>;

/// The file operations the store needs.
pub trait Storage: Send + Sync + std::fmt::Debug + 'static {
    /// Maps `path` with exactly `size` bytes, creating it when `create`; a shorter file is
    /// extended with zeroes (callers refuse longer ones first, see [`Storage::file_len`]).
    fn map(&self, path: &Path, size: usize, create: bool) -> io::Result<Box<dyn Region>>;
    /// Length of a file, `None` if it does not exist.
    fn file_len(&self, path: &Path) -> io::Result<Option<u64>>;
    /// Names of the entries of `dir` (empty if it does not exist).
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Whether `path` is a directory.
    fn is_dir(&self, path: &Path) -> bool;
    /// Deletes a file (no error if it is already gone).
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Creates a directory and its parents.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// A small file's content, `None` if it does not exist.
    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>>;
    /// Replaces a small file atomically and durably.
    fn write_atomic(&self, path: &Path, data: &[u8]) -> io::Result<()>;
    /// Takes the exclusive lock of a store root; `WouldBlock` if another holder has it.
    fn lock(&self, root: &Path) -> io::Result<LockGuard>;
    /// `(total, available)` bytes of the file system holding `path`.
    fn disk_space(&self, path: &Path) -> io::Result<(u64, u64)>;
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct FsStorage;

impl FsStorage {
    /// The shared instance.
    pub fn shared() -> Arc<dyn Storage> {
        Arc::new(FsStorage)
    }
}

/// A mapped file. The descriptor is not kept: a broker has a consume-queue file per queue
/// (40,000 for 10,000 topics), far more than a process may hold open; the rare calls that
/// need one (reserving, punching, starting write-back) open the path for the call.
struct FsRegion {
    map: MmapRaw,
    path: PathBuf,
}

impl FsRegion {
    fn file(&self) -> io::Result<File> {
        OpenOptions::new().read(true).write(true).open(&self.path)
    }

    /// `madvise(advice)` over `[start, end)` of the mapping (nothing when empty); `start`
    /// must be page-aligned (the mapping's start is) and the advice one that changes no byte.
    fn advise(&self, start: usize, end: usize, advice: libc::c_int) -> io::Result<()> {
        let end = end.min(self.len());
        if start >= end {
            return Ok(());
        }
        // SAFETY: a page-aligned range inside the mapping, which lives as long as `self`;
        // callers pass only advice that leaves the bytes as they are.
        let rc = unsafe {
            libc::madvise(
                self.as_ptr().add(start) as *mut libc::c_void,
                end - start,
                advice,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Region for FsRegion {
    fn as_ptr(&self) -> *mut u8 {
        self.map.as_mut_ptr()
    }

    fn len(&self) -> usize {
        self.map.len()
    }

    fn sync(&self, offset: usize, len: usize) -> io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        self.map.flush_range(offset, len)
    }

    fn prefault(&self, offset: usize, len: usize) -> io::Result<()> {
        const PAGE: usize = 4096;
        let start = offset / PAGE * PAGE;
        let end = (offset + len).min(self.len());
        // Populating pages does not change their content, so it cannot race with the writer.
        self.advise(start, end, libc::MADV_POPULATE_WRITE)
    }

    fn no_read_around(&self) -> io::Result<()> {
        // Advice over exactly the mapping; it changes no byte.
        self.advise(0, self.len(), libc::MADV_RANDOM)
    }

    fn unmap_pages(&self, offset: usize, len: usize) -> io::Result<()> {
        const PAGE: usize = 4096;
        let start = offset.div_ceil(PAGE) * PAGE;
        let end = (offset + len).min(self.len()) / PAGE * PAGE;
        // Whole pages only. On a shared file mapping MADV_DONTNEED only drops this process's
        // page-table entries (a dirty one marks its page dirty): the bytes stay in the page
        // cache and the next access maps them again.
        self.advise(start, end, libc::MADV_DONTNEED)
    }

    fn start_writeback(&self, offset: usize, len: usize) -> io::Result<()> {
        let file = self.file()?;
        // SAFETY: sync_file_range on an owned descriptor with an in-range span.
        let rc = unsafe {
            libc::sync_file_range(
                file.as_raw_fd(),
                offset as libc::off64_t,
                len as libc::off64_t,
                libc::SYNC_FILE_RANGE_WRITE,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn reserve(&self, offset: usize, len: usize) -> io::Result<()> {
        let end = (offset + len).min(self.len());
        if offset >= end {
            return Ok(());
        }
        let file = self.file()?;
        // Mode 0 allocates (unwritten extents on ext4/xfs, pages on tmpfs) and keeps the
        // bytes; ranges already allocated cost nothing.
        // SAFETY: fallocate on an owned descriptor with an in-range span.
        let rc = unsafe {
            libc::fallocate(
                file.as_raw_fd(),
                0,
                offset as libc::off_t,
                (end - offset) as libc::off_t,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            // A file system without fallocate cannot promise space ahead: writes there
            // behave as in any mmap-based store (RocketMQ's included).
            Some(libc::EOPNOTSUPP) => {
                warn_no_fallocate();
                Ok(())
            }
            Some(libc::EINTR) => self.reserve(offset, len),
            _ => Err(err),
        }
    }

    fn discard(&self, offset: usize, len: usize) -> io::Result<()> {
        let end = (offset + len).min(self.len());
        if offset >= end {
            return Ok(());
        }
        const PAGE: usize = 4096;
        let first_page = offset.div_ceil(PAGE) * PAGE;
        let last_page = end / PAGE * PAGE;
        // SAFETY: the range is inside the mapping; callers own the bytes (no reader is given
        // bytes at or above the write position).
        let zero = |from: usize, to: usize| unsafe {
            std::ptr::write_bytes(self.as_ptr().add(from), 0, to - from)
        };
        if first_page < last_page {
            // Callers re-reserve what they write again (MappedFile forgets reservations at
            // and above a discarded offset).
            zero(offset, first_page);
            zero(last_page, end);
            // Punch a hole: the pages read back as zeroes and stop using disk space.
            // SAFETY: fallocate on an owned descriptor with an in-range span.
            let rc = self.file().map_or(-1, |file| unsafe {
                libc::fallocate(
                    file.as_raw_fd(),
                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    first_page as libc::off_t,
                    (last_page - first_page) as libc::off_t,
                )
            });
            if rc != 0 {
                zero(first_page, last_page);
            }
        } else {
            zero(offset, end);
        }
        Ok(())
    }
}

fn warn_no_fallocate() {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        tracing::warn!(
            "the store's file system does not support fallocate: disk space cannot be \
             reserved ahead of writes, and a full disk may stop the process"
        )
    });
}

/// Whether an I/O error means the disk (or a quota) is full.
pub fn is_no_space(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
        || e.kind() == io::ErrorKind::StorageFull
}

impl Storage for FsStorage {
    fn map(&self, path: &Path, size: usize, create: bool) -> io::Result<Box<dyn Region>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .open(path)?;
        if file.metadata()?.len() < size as u64 {
            // Sparse: the blocks are given by `Region::reserve`, where and when the owner
            // needs them (the whole active CommitLog file, a window of a queue file).
            file.set_len(size as u64)?;
        }
        let map = MmapRaw::map_raw(&file)?;
        Ok(Box::new(FsRegion {
            map,
            path: path.to_path_buf(),
        }))
    }

    fn file_len(&self, path: &Path) -> io::Result<Option<u64>> {
        match std::fs::metadata(path) {
            Ok(m) => Ok(Some(m.len())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut names = Vec::new();
        for entry in entries {
            if let Some(name) = entry?.file_name().to_str() {
                names.push(name.to_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        match std::fs::read(path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn write_atomic(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let written = File::create(&tmp).and_then(|mut f| {
            f.write_all(data)?;
            f.sync_all()
        });
        if let Err(e) = written {
            // On a full disk the old file stays whole; the partial copy must not take space.
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        std::fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent() {
            // Make the rename itself durable.
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }

    fn lock(&self, root: &Path) -> io::Result<LockGuard> {
        let path = root.join("lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)?;
        // SAFETY: flock on a valid, owned descriptor.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Box::new(file))
    }

    fn disk_space(&self, path: &Path) -> io::Result<(u64, u64)> {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        // SAFETY: statvfs writes into the zeroed struct; the path is NUL-terminated.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        let frsize = st.f_frsize as u64;
        Ok((st.f_blocks as u64 * frsize, st.f_bavail as u64 * frsize))
    }
}

/// Bytes of RAM (8 GiB when the OS does not say).
pub(crate) fn total_physical_memory() -> i64 {
    // SAFETY: sysconf has no preconditions.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages > 0 && page > 0 {
        #[allow(clippy::unnecessary_cast)] // c_long is i32 on some targets
        let total = pages as i64 * page as i64;
        total
    } else {
        8 << 30
    }
}

/// Lowers the calling thread's CPU priority (nice 10), for background work that must not
/// delay request handling on a busy machine. Best effort: a failure changes nothing else.
pub fn lower_thread_priority() {
    // SAFETY: plain syscalls on the calling thread's own id; on Linux a thread id given to
    // setpriority(PRIO_PROCESS) selects that thread only.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 10);
    }
}
