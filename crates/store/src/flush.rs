//! Durability waits. Under SYNC_FLUSH a put is acknowledged only after an `msync` covering its
//! record returned; puts that arrive while a flush runs share the next one (group commit), so
//! many concurrent writers pay for one disk sync between them.
//!
//! A [`FlushTicket`] is the put's claim on that flush: wait on it from a thread
//! ([`FlushTicket::wait`]) or `.await` it from async code. It completes with `true` once the
//! record is on disk, `false` if the flush failed or the store shut down first.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

#[derive(Default)]
struct TicketState {
    done: Option<bool>,
    waker: Option<Waker>,
}

#[derive(Default)]
struct TicketInner {
    state: Mutex<TicketState>,
    cond: Condvar,
}

impl TicketInner {
    fn complete(&self, ok: bool) {
        let waker = {
            let mut s = self.state.lock();
            if s.done.is_some() {
                return;
            }
            s.done = Some(ok);
            s.waker.take()
        };
        self.cond.notify_all();
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// A put's wait for its record to reach the disk.
#[derive(Clone)]
pub struct FlushTicket {
    inner: Arc<TicketInner>,
}

impl std::fmt::Debug for FlushTicket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlushTicket")
            .field("done", &self.inner.state.lock().done)
            .finish()
    }
}

impl FlushTicket {
    /// Blocks up to `timeout`: `true` when flushed, `false` on timeout or failure.
    pub fn wait(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut s = self.inner.state.lock();
        while s.done.is_none() {
            if self.inner.cond.wait_until(&mut s, deadline).timed_out() {
                break;
            }
        }
        s.done.unwrap_or(false)
    }
}

impl Future for FlushTicket {
    type Output = bool;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        let mut s = self.inner.state.lock();
        match s.done {
            Some(ok) => Poll::Ready(ok),
            None => {
                s.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// Pending flush requests, handed to the flush thread in batches.
#[derive(Default)]
pub(crate) struct GroupCommit {
    requests: Mutex<Vec<Arc<TicketInner>>>,
    wake: Condvar,
}

impl GroupCommit {
    /// A ticket completed by the next flush of the log; call after appending, so that flush
    /// covers the appended records.
    pub(crate) fn request(&self) -> FlushTicket {
        let inner = Arc::new(TicketInner::default());
        self.requests.lock().push(inner.clone());
        self.wake.notify_one();
        FlushTicket { inner }
    }

    /// Waits up to `timeout` for requests and takes them all. One flush of the whole log
    /// covers every one of them: each was appended before it asked.
    pub(crate) fn take(&self, timeout: Duration) -> Option<Vec<PendingFlush>> {
        let mut reqs = self.requests.lock();
        if reqs.is_empty() {
            self.wake.wait_for(&mut reqs, timeout);
        }
        if reqs.is_empty() {
            return None;
        }
        Some(
            std::mem::take(&mut *reqs)
                .into_iter()
                .map(PendingFlush)
                .collect(),
        )
    }

    /// Wakes the flush thread (shutdown).
    pub(crate) fn notify(&self) {
        self.wake.notify_all();
    }

    /// Fails every pending request (the store is going away without flushing).
    pub(crate) fn fail_all(&self) {
        for t in std::mem::take(&mut *self.requests.lock()) {
            t.complete(false);
        }
    }
}

/// A pending request as seen by the flush thread.
pub(crate) struct PendingFlush(Arc<TicketInner>);

impl PendingFlush {
    pub(crate) fn complete(&self, ok: bool) {
        self.0.complete(ok);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickets_complete_and_time_out() {
        let gc = GroupCommit::default();
        let a = gc.request();
        let b = gc.request();
        let batch = gc.take(Duration::from_millis(1)).unwrap();
        assert_eq!(batch.len(), 2);
        for t in &batch {
            t.complete(true);
        }
        assert!(a.wait(Duration::from_millis(1)));
        assert!(b.wait(Duration::from_millis(1)));
        let c = gc.request();
        assert!(
            !c.wait(Duration::from_millis(5)),
            "never flushed: times out"
        );
        gc.fail_all();
        assert!(!c.wait(Duration::from_secs(1)));
    }
}
