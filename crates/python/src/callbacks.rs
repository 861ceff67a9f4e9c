//! One thread that runs Python callbacks (async completions, server notifications).
//!
//! Callbacks never run on the tokio I/O threads: a slow or blocking callback (or one that
//! makes a blocking rocketpy call) must not stall the network, and the I/O threads never wait
//! for the GIL.

use std::sync::mpsc::{channel, Sender};
use std::sync::{Mutex, OnceLock};

use pyo3::prelude::*;

type Job = Box<dyn FnOnce(Python<'_>) + Send>;

/// Jobs run per GIL acquisition at most.
const MAX_JOBS_PER_ATTACH: usize = 4096;

static SENDER: OnceLock<Mutex<Sender<Job>>> = OnceLock::new();

fn sender() -> Sender<Job> {
    let lock = SENDER.get_or_init(|| {
        let (tx, rx) = channel::<Job>();
        std::thread::Builder::new()
            .name("rocketpy-callbacks".into())
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    // Taking the GIL can wait a whole switch interval while Python threads
                    // run, so every job already queued runs under the same acquisition
                    // (bounded, so other threads still get their turn).
                    Python::attach(|py| {
                        job(py);
                        for _ in 0..MAX_JOBS_PER_ATTACH {
                            match rx.try_recv() {
                                Ok(job) => job(py),
                                Err(_) => break,
                            }
                        }
                    });
                }
            })
            .expect("rocketpy: cannot start the callback thread");
        Mutex::new(tx)
    });
    lock.lock().unwrap_or_else(|e| e.into_inner()).clone()
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
