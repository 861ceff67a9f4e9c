//! Keeps the pages just ahead of the CommitLog's write position resident and writable, on a
//! background thread, so appends copy into memory instead of taking page faults (which zero
//! the page and, on ext4, start a journal handle) on the put path. RocketMQ's
//! `warmMapedFileEnable` pre-writes whole 1 GiB files for the same reason; a moving window
//! costs only the window's memory.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::{Condvar, Mutex};

use crate::mapped_file::MappedFile;

/// How far ahead of the writer pages are made resident.
pub use crate::mapped_file::PREFAULT_WINDOW as WINDOW;
/// The writer asks for more when fewer than this many prepared bytes are left.
const LOW_WATER: usize = WINDOW / 2;

#[derive(Default)]
struct Shared {
    /// The file to prepare ahead in, and whether to stop.
    next: Mutex<(Option<Weak<MappedFile>>, bool)>,
    wake: Condvar,
    /// A request is pending: appends need not ask again until it is served.
    pending: AtomicBool,
}

/// The prefault thread of one file queue; stopping it is dropping it.
pub(crate) struct Prefaulter {
    shared: Arc<Shared>,
}

impl Prefaulter {
    /// Starts the thread (a failure to start leaves prefaulting off: writes still work).
    pub(crate) fn start() -> Option<Self> {
        let shared = Arc::new(Shared::default());
        let worker = shared.clone();
        std::thread::Builder::new()
            .name("rocketpy-prefault".into())
            .spawn(move || {
                crate::io::lower_thread_priority();
                run(worker)
            })
            .map_err(|e| tracing::warn!(error = %e, "prefault thread not started"))
            .ok()?;
        Some(Prefaulter { shared })
    }

    /// Called after each append: asks for the window ahead of `file`'s write position when
    /// little of it is left. Cheap when nothing is needed.
    pub(crate) fn hint(&self, file: &Arc<MappedFile>) {
        if file.prefaulted() >= (file.wrote() + LOW_WATER).min(file.size())
            || self.shared.pending.load(Ordering::Relaxed)
            || self.shared.pending.swap(true, Ordering::AcqRel)
        {
            return;
        }
        let mut next = self.shared.next.lock();
        next.0 = Some(Arc::downgrade(file));
        self.shared.wake.notify_one();
    }
}

impl Drop for Prefaulter {
    fn drop(&mut self) {
        self.shared.next.lock().1 = true;
        self.shared.wake.notify_one();
    }
}

fn run(shared: Arc<Shared>) {
    loop {
        let file = {
            let mut next = shared.next.lock();
            while next.0.is_none() && !next.1 {
                shared.wake.wait(&mut next);
            }
            if next.1 {
                return;
            }
            next.0.take()
        };
        shared.pending.store(false, Ordering::Release);
        if let Some(file) = file.and_then(|f| f.upgrade()) {
            if let Err(e) = file.prefault_to(file.wrote() + WINDOW) {
                tracing::debug!(error = %e, "prefault failed; appends will fault pages in themselves");
            }
        }
    }
}
