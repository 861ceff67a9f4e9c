//! One thread that runs Python callbacks (async completions, server notifications, native
//! log records).
//!
//! Callbacks never run on the tokio I/O threads: a slow or blocking callback (or one that
//! makes a blocking rocketpy call) must not stall the network, and the I/O threads never wait
//! for the GIL. Once the interpreter is exiting the thread stops attaching (see `process`);
//! jobs still queued are dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::time::{Duration, Instant};

use pyo3::prelude::*;

use crate::process::{self, PerProcess};

type Job = Box<dyn FnOnce(Python<'_>) + Send>;

/// Jobs run per GIL acquisition at most.
const MAX_JOBS_PER_ATTACH: usize = 4096;

static SENDER: PerProcess<Sender<Job>> = PerProcess::new();

/// Set while the callback thread is attached (or about to attach). With [`at_exit`]
/// storing the exit flag before reading this, either the thread sees the flag and never
/// attaches, or the exit hook sees this and waits for it.
static ATTACHED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// True on the callback thread only.
    static ON_CALLBACK_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this is rocketpy's callback thread: there, waiting for an unfinished send's
/// result would wait forever (this thread is what finishes it), so `SendFuture` refuses.
#[pyfunction]
pub fn on_callback_thread() -> bool {
    ON_CALLBACK_THREAD.with(|on| on.get())
}

/// Whether the callback thread is attached to Python.
pub fn attached() -> bool {
    ATTACHED.load(Ordering::SeqCst)
}

fn sender() -> &'static Sender<Job> {
    SENDER.get(|| {
        let (tx, rx) = channel::<Job>();
        std::thread::Builder::new()
            .name("rocketpy-callbacks".into())
            .spawn(move || {
                ON_CALLBACK_THREAD.with(|on| on.set(true));
                while let Ok(job) = rx.recv() {
                    ATTACHED.store(true, Ordering::SeqCst);
                    if process::exiting() {
                        ATTACHED.store(false, Ordering::SeqCst);
                        // Dropping a job drops Python references without the GIL: PyO3
                        // defers those, and the process is ending.
                        drop(job);
                        continue;
                    }
                    // Taking the GIL can wait a whole switch interval while Python threads
                    // run, so every job already queued runs under the same acquisition
                    // (bounded, so other threads still get their turn).
                    Python::attach(|py| {
                        job(py);
                        for _ in 0..MAX_JOBS_PER_ATTACH {
                            if process::exiting() {
                                break;
                            }
                            match rx.try_recv() {
                                Ok(job) => job(py),
                                Err(_) => break,
                            }
                        }
                    });
                    ATTACHED.store(false, Ordering::SeqCst);
                }
            })
            .expect("rocketpy: cannot start the callback thread");
        tx
    })
}

/// Queues `job` to run with the GIL on the callback thread.
pub fn submit(job: impl FnOnce(Python<'_>) + Send + 'static) {
    let _ = sender().send(Box::new(job));
}

/// Calls `callback(*args)`, reporting an exception it raises as unraisable (it has no caller).
pub fn call_reporting<'py>(
    py: Python<'py>,
    callback: &Py<PyAny>,
    args: impl pyo3::call::PyCallArgs<'py>,
) {
    if let Err(err) = callback.bind(py).call1(args) {
        err.write_unraisable(py, Some(callback.bind(py)));
    }
}

/// Registered with `atexit` by the module: marks the interpreter as exiting, then lets the
/// callback thread finish what it runs (at most `timeout`) so it is detached when
/// finalization starts.
#[pyfunction]
pub fn at_exit(py: Python<'_>) {
    process::mark_exiting();
    let deadline = Instant::now() + Duration::from_secs(2);
    py.detach(|| {
        while attached() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}
