//! The store's background threads: each runs one service's step in a loop, sleeping for what
//! the step asks, until the store stops them. Shutdown wakes every sleeper at once.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::error::{Result, StoreError};

/// Stops the background threads and wakes them from their sleeps.
#[derive(Default)]
struct StopSignal {
    stopped: Mutex<bool>,
    cond: Condvar,
}

impl StopSignal {
    /// Sleeps up to `d`; `false` if the store is stopping.
    fn sleep(&self, d: Duration) -> bool {
        let mut stopped = self.stopped.lock();
        if !*stopped {
            self.cond.wait_for(&mut stopped, d);
        }
        !*stopped
    }

    fn is_stopped(&self) -> bool {
        *self.stopped.lock()
    }
}

/// The running background threads of one store.
#[derive(Default)]
pub(crate) struct Workers {
    stop: Arc<StopSignal>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Workers {
    /// Starts thread `name` running `step` until the workers stop or `step` returns `None`;
    /// between steps it sleeps for the duration `step` returned (none for zero).
    /// `background` threads yield the CPU to puts and reads (lower priority).
    pub(crate) fn spawn(
        &self,
        name: &str,
        background: bool,
        mut step: impl FnMut() -> Option<Duration> + Send + 'static,
    ) -> Result<()> {
        let stop = self.stop.clone();
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                if background {
                    crate::io::lower_thread_priority();
                }
                while !stop.is_stopped() {
                    match step() {
                        Some(wait) if wait.is_zero() => {}
                        Some(wait) => {
                            if !stop.sleep(wait) {
                                return;
                            }
                        }
                        None => return,
                    }
                }
            })
            .map_err(|e| StoreError::io(name, e))?;
        self.threads.lock().push(handle);
        Ok(())
    }

    /// Signals every thread to stop, then runs `wake` (for threads blocked elsewhere than in
    /// their sleep) and joins them, except the calling thread when it is one of them.
    pub(crate) fn stop(&self, wake: impl FnOnce()) {
        *self.stop.stopped.lock() = true;
        self.stop.cond.notify_all();
        wake();
        let threads: Vec<_> = self.threads.lock().drain(..).collect();
        for handle in threads {
            if handle.thread().id() != std::thread::current().id() {
                let _ = handle.join();
            }
        }
    }
}
