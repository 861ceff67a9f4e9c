//! The process-wide tokio runtime and the one way Python waits on Rust futures.

use std::future::Future;
use std::time::Duration;

use pyo3::prelude::*;
use tokio::runtime::Runtime;

use crate::process::{self, PerProcess};

static RUNTIME: PerProcess<Runtime> = PerProcess::new();

/// This process's runtime, created on first use with one worker thread per core (at least
/// two; one per process measured no faster for 16 producer processes on 2 cores), with the heap trimmer of [`crate::memory`]. A child process after fork() gets its own (the parent's threads were not copied).
pub fn runtime() -> &'static Runtime {
    RUNTIME.get(|| {
        let workers = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
            .max(2);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name("rocketpy-io")
            .enable_all()
            .build()
            .expect("rocketpy: cannot start the tokio runtime");
        rt.spawn(crate::memory::trim_loop());
        rt
    })
}

/// An error when called on one of the runtime's threads, where blocking would stall every
/// connection (and waiting on the runtime from inside it panics).
pub fn refuse_on_io_thread() -> PyResult<()> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(
            "a blocking rocketpy call was made from rocketpy's I/O thread; \
             hand the work to another thread instead",
        ));
    }
    Ok(())
}

/// Runs `fut` to completion with the GIL released. On the main thread it wakes every 100 ms
/// to let Python handle signals (Ctrl-C raises KeyboardInterrupt here, cancelling the wait);
/// other threads never re-attach while waiting (Python runs signal handlers only on the main
/// thread, and attaching during interpreter exit would abort).
pub fn wait<F, T>(py: Python<'_>, fut: F) -> PyResult<T>
where
    F: Future<Output = T> + Send,
    T: Send,
{
    refuse_on_io_thread()?;
    let rt = runtime();
    if !process::is_main_thread() {
        return Ok(process::detach(py, || rt.block_on(fut)));
    }
    process::detach(py, || {
        rt.block_on(async {
            tokio::pin!(fut);
            loop {
                tokio::select! {
                    out = &mut fut => return Ok(out),
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {
                        Python::attach(|py| py.check_signals())?;
                    }
                }
            }
        })
    })
}
