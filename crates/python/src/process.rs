//! The two process events native code must survive: `fork()` and interpreter exit.
//!
//! fork() copies only the calling thread, so a tokio runtime, the callback thread and every
//! object bound to them are dead in the child. Process-wide singletons are therefore kept per
//! process id ([`PerProcess`]): a child that creates new clients gets fresh threads, and an
//! object created before the fork refuses to work in the child ([`Owner::check`]) instead of
//! waiting forever for threads that do not exist.
//!
//! At interpreter exit CPython ends a thread that tries to take the GIL during finalization
//! with `pthread_exit`, whose forced unwind through Rust frames runs guards that release the
//! GIL again and aborts the process ("PyGILState_Release: thread state must be current").
//! An `atexit` hook ([`at_exit`]) therefore raises [`exiting`] before finalization starts; from
//! then on no native thread attaches to Python again: the callback thread stops, and a thread
//! coming back from native work parks instead of re-attaching ([`detach`]).

use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::Mutex;

use pyo3::prelude::*;

use crate::errors::ForkedProcessError;

static EXITING: AtomicBool = AtomicBool::new(false);

/// Whether the interpreter is shutting down (set by the `atexit` hook).
pub fn exiting() -> bool {
    EXITING.load(Ordering::SeqCst)
}

/// This process's id, 0 until read. getpid() is a system call (glibc stopped caching it) and
/// every call from Python checks it, so it is read once per process: a fork handler clears it
/// in the child.
static PID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

extern "C" fn forget_pid_in_child() {
    PID.store(0, Ordering::SeqCst);
}

/// The process id.
pub fn pid() -> u32 {
    let cached = PID.load(Ordering::Relaxed);
    if cached != 0 {
        return cached;
    }
    static HANDLER: std::sync::Once = std::sync::Once::new();
    // SAFETY: registers a handler that only stores to an atomic (async-signal-safe).
    HANDLER.call_once(|| unsafe {
        libc::pthread_atfork(None, None, Some(forget_pid_in_child));
    });
    let pid = std::process::id();
    PID.store(pid, Ordering::Relaxed);
    pid
}

/// Whether this is the process's main thread (its thread id is the process id), the only
/// thread where Python runs signal handlers.
pub fn is_main_thread() -> bool {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    tid == i64::from(pid())
}

/// Blocks this thread for good if the interpreter is exiting and it is not the main thread:
/// re-attaching would abort the process, and exit() ends parked threads anyway.
pub fn park_if_exiting() {
    if exiting() && !is_main_thread() {
        loop {
            std::thread::park();
        }
    }
}

/// `py.detach(f)` that never re-attaches a thread once the interpreter is exiting.
pub fn detach<T, F>(py: Python<'_>, f: F) -> T
where
    F: Send + FnOnce() -> T,
    T: Send,
{
    py.detach(|| {
        let out = f();
        park_if_exiting();
        out
    })
}

/// Marks the interpreter as exiting (`callbacks::at_exit`): no thread attaches after this.
pub fn mark_exiting() {
    EXITING.store(true, Ordering::SeqCst);
}

/// A value created once per process: after fork() the child makes its own on first use. The
/// parent's value is leaked in the child (dropping it would join threads that do not exist).
pub struct PerProcess<T: 'static> {
    current: AtomicPtr<(u32, T)>,
    create: Mutex<()>,
}

impl<T: Send + Sync + 'static> PerProcess<T> {
    pub const fn new() -> Self {
        PerProcess {
            current: AtomicPtr::new(std::ptr::null_mut()),
            create: Mutex::new(()),
        }
    }

    /// This process's value, made by `make` on first use.
    pub fn get(&'static self, make: impl FnOnce() -> T) -> &'static T {
        if let Some(v) = self.load() {
            return v;
        }
        let _guard = self.create.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = self.load() {
            return v;
        }
        let fresh: &'static mut (u32, T) = Box::leak(Box::new((pid(), make())));
        self.current.store(fresh, Ordering::Release);
        &fresh.1
    }

    fn load(&self) -> Option<&'static T> {
        let p = self.current.load(Ordering::Acquire);
        // SAFETY: a stored pointer comes from Box::leak and is never freed.
        let (owner, value) = unsafe { p.as_ref()? };
        (*owner == pid()).then_some(value)
    }
}

/// The process an object was created in.
#[derive(Clone, Copy)]
pub struct Owner(u32);

impl Owner {
    pub fn current() -> Self {
        Owner(pid())
    }

    /// Whether this is the process that created it.
    pub fn is_current(self) -> bool {
        self.0 == pid()
    }

    /// An error naming `what` if this is not the process that created it.
    pub fn check(self, what: &str) -> PyResult<()> {
        if self.is_current() {
            return Ok(());
        }
        Err(ForkedProcessError::new_err(format!(
            "this {what} was created in process {} before os.fork(); it cannot be used in \
             child process {}: create a new one in the child (or use the 'spawn' \
             multiprocessing start method)",
            self.0,
            pid()
        )))
    }
}

/// Returns the process's free heap pages to the operating system (glibc's `malloc_trim`), off
/// the GIL: clients call it on a timer so their memory does not stay stepped up after a burst
/// (see `rocketpy_remoting::memory`).
#[pyfunction]
pub fn release_free_memory(py: Python<'_>) {
    detach(py, rocketpy_remoting::memory::release_free_memory);
}
