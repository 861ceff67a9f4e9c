//! The process-wide tokio runtime and the one way Python waits on Rust futures.

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

use pyo3::prelude::*;
use tokio::runtime::Runtime;

struct Owned {
    runtime: Runtime,
    pid: u32,
}

static RUNTIME: OnceLock<Owned> = OnceLock::new();

/// The runtime, created on first use with two worker threads per core (at least two).
///
/// A tokio runtime does not survive `fork()`: its threads are not copied. Using it from a
/// forked child would hang, so that is refused loudly instead.
pub fn runtime() -> &'static Runtime {
    let owned = RUNTIME.get_or_init(|| {
        let workers = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
            .max(2);
        Owned {
            runtime: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .thread_name("rocketpy-io")
                .enable_all()
                .build()
                .expect("rocketpy: cannot start the tokio runtime"),
            pid: std::process::id(),
        }
    });
    if owned.pid != std::process::id() {
        panic!(
            "rocketpy was used in a child process created by fork() after the parent started \
             its network runtime; start clients and servers after forking (or use the 'spawn' \
             multiprocessing start method)"
        );
    }
    &owned.runtime
}

/// Runs `fut` to completion with the GIL released, waking every 100 ms to let Python handle
/// signals (Ctrl-C raises KeyboardInterrupt here, cancelling the wait).
pub fn wait<F, T>(py: Python<'_>, fut: F) -> PyResult<T>
where
    F: Future<Output = T> + Send,
    T: Send,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(pyo3::exceptions::PyRuntimeError::new_err(
            "a blocking rocketpy call was made from rocketpy's I/O thread; \
             hand the work to another thread instead",
        ));
    }
    let rt = runtime();
    py.detach(|| {
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
