//! The gRPC server's own thread: a single-threaded tokio runtime that runs the listener, every
//! connection and every call. A call's pieces — the connection's task that reads and writes
//! HTTP/2 frames, the task of each call (hyper spawns one per stream), the broker's processors
//! reached in process — wake one another several times per call. On the process's
//! multi-threaded runtime each such wake-up could hand the task to the other worker (a futex
//! wake and a context switch, the largest single cost of a small call on a VM); here they all
//! run on one thread, which sleeps only in `epoll_wait` when every connection is idle.
//!
//! What must stay true: nothing on this runtime blocks for long (as on any tokio runtime —
//! disk waits go to `spawn_blocking`); [`ServerThread::stop`] ends every connection and call
//! (long polls included) and returns once the thread, and so the listening socket, is gone.

use std::future::Future;
use std::io;
use std::time::Duration;

use tokio::sync::oneshot;

/// A thread running one server future on a runtime of its own.
pub(crate) struct ServerThread {
    /// Fired to end the server at once (its calls are cancelled).
    abort: Option<oneshot::Sender<()>>,
    /// Resolves when the thread has dropped its runtime.
    done: Option<oneshot::Receiver<()>>,
}

impl ServerThread {
    /// Starts a thread named `rocketpy-grpc` that builds a current-thread runtime and runs the
    /// future `make` returns until it ends or [`ServerThread::stop`] is called.
    pub(crate) fn start<F, Fut>(make: F) -> io::Result<ServerThread>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = io::Result<()>>,
    {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (abort, aborted) = oneshot::channel::<()>();
        let (finished, done) = oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("rocketpy-grpc".into())
            .spawn(move || {
                runtime.block_on(async move {
                    tokio::select! {
                        served = make() => if let Err(e) = served {
                            tracing::error!(error = %e, "the gRPC server could not run");
                        },
                        _ = aborted => {}
                    }
                });
                // Calls still open (long polls) are dropped with their connections.
                runtime.shutdown_timeout(Duration::from_secs(1));
                let _ = finished.send(());
            })?;
        Ok(ServerThread {
            abort: Some(abort),
            done: Some(done),
        })
    }

    /// Ends the server and waits until its thread has let go of its sockets.
    pub(crate) async fn stop(&mut self) {
        if let Some(abort) = self.abort.take() {
            let _ = abort.send(());
        }
        if let Some(done) = self.done.take() {
            let _ = done.await;
        }
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        if let Some(abort) = self.abort.take() {
            let _ = abort.send(());
        }
    }
}
