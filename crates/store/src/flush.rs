//! Flushing: when the CommitLog and the consume queues reach the disk, and the checkpoint that
//! says how far they did.
//!
//! Under SYNC_FLUSH a put is acknowledged only after an `msync` covering its record returned;
//! puts that arrive while a flush runs share the next one (group commit), so many concurrent
//! writers pay for one disk sync between them. Under ASYNC_FLUSH a background step hands new
//! pages to the kernel's write-back every `flushIntervalCommitLog` and msyncs every
//! `flushCommitLogThoroughInterval`. Consume queues are flushed every
//! `flushIntervalConsumeQueue`, and only then does the checkpoint advance: it never claims more
//! than is on disk (recovery starts from it).
//!
//! A [`FlushTicket`] is the put's claim on that flush: wait on it from a thread
//! ([`FlushTicket::wait`]) or `.await` it from async code. It completes with `true` once the
//! record is on disk, `false` if the flush failed or the store shut down first.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::message::record::MessageToStore;

use crate::checkpoint::Checkpoint;
use crate::commit_log::CommitLog;
use crate::config::{FlushDiskType, StoreConfig};
use crate::error::Result;
use crate::index_service::IndexService;
use crate::io::Storage;
use crate::queue_table::ConsumeQueueTable;

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

/// Longest wait for more SYNC_FLUSH puts to share a flush (see [`FlushService::step`]).
const GROUP_COMMIT_WINDOW: Duration = Duration::from_micros(300);

/// The flush policy, its timers' settings, and the checkpoint.
pub(crate) struct FlushService {
    sync: bool,
    interval_commit_log: Duration,
    least_pages: usize,
    thorough_interval: Duration,
    interval_consume_queue: Duration,
    storage: Arc<dyn Storage>,
    checkpoint_path: PathBuf,
    /// Held while the checkpoint is read and written: the flush thread and an explicit
    /// `flush()` both write it, through the same temporary file (one rename would find the
    /// other's temporary gone), and the newer values must land last.
    checkpoint_lock: parking_lot::Mutex<()>,
    commit_log: Arc<CommitLog>,
    queues: Arc<ConsumeQueueTable>,
    group_commit: GroupCommit,
    /// Store time of the newest record known on disk, per file kind (the checkpoint).
    physic_flushed_ts: AtomicI64,
    logics_flushed_ts: AtomicI64,
    index_flushed_ts: AtomicI64,
}

/// The flush thread's timers.
pub(crate) struct FlushTimers {
    last_group_commit: usize,
    next_commit_log_flush: Instant,
    last_thorough: Instant,
    next_logic_flush: Instant,
}

impl Default for FlushTimers {
    fn default() -> Self {
        let now = Instant::now();
        FlushTimers {
            last_group_commit: 1,
            next_commit_log_flush: now,
            last_thorough: now,
            next_logic_flush: now,
        }
    }
}

impl FlushService {
    pub(crate) fn new(
        config: &StoreConfig,
        storage: Arc<dyn Storage>,
        commit_log: Arc<CommitLog>,
        queues: Arc<ConsumeQueueTable>,
    ) -> Self {
        FlushService {
            sync: config.flush_disk_type == FlushDiskType::SyncFlush,
            interval_commit_log: Duration::from_millis(config.flush_interval_commit_log.max(1)),
            least_pages: config.flush_commit_log_least_pages,
            thorough_interval: Duration::from_millis(config.flush_commit_log_thorough_interval),
            interval_consume_queue: Duration::from_millis(
                config.flush_interval_consume_queue.max(1),
            ),
            checkpoint_path: config.store_path_root_dir.join("checkpoint"),
            checkpoint_lock: parking_lot::Mutex::new(()),
            storage,
            commit_log,
            queues,
            group_commit: GroupCommit::default(),
            physic_flushed_ts: AtomicI64::new(0),
            logics_flushed_ts: AtomicI64::new(0),
            index_flushed_ts: AtomicI64::new(0),
        }
    }

    /// Whether the flush step is latency-critical (SYNC_FLUSH: writers wait for it).
    pub(crate) fn is_sync(&self) -> bool {
        self.sync
    }

    /// After recovery: everything up to `ts` is on disk.
    pub(crate) fn recovered(&self, ts: i64) {
        self.physic_flushed_ts.store(ts, Ordering::Release);
        self.logics_flushed_ts.store(ts, Ordering::Release);
    }

    /// The index reached the disk up to store time `ts`.
    pub(crate) fn index_flushed(&self, ts: i64) {
        self.index_flushed_ts.fetch_max(ts, Ordering::AcqRel);
    }

    /// The durability wait of just-appended `msgs`: under SYNC_FLUSH, unless every one of them
    /// said it need not wait (`WAIT=false`).
    pub(crate) fn ticket_for(&self, msgs: &[MessageToStore]) -> Option<FlushTicket> {
        let wait = self.sync
            && msgs
                .iter()
                .any(|m| properties::find(&m.properties, keys::WAIT_STORE_MSG_OK) != Some("false"));
        wait.then(|| self.group_commit.request())
    }

    /// Flushes the CommitLog, the consume queues and `index`, then the checkpoint.
    pub(crate) fn flush_all(&self, index: &IndexService) -> Result<()> {
        let ts = self.commit_log.last_store_timestamp();
        self.commit_log.flush()?;
        self.physic_flushed_ts.fetch_max(ts, Ordering::AcqRel);
        self.queues.flush()?;
        self.logics_flushed_ts.fetch_max(ts, Ordering::AcqRel);
        let index_ts = index.last_timestamp();
        index.flush()?;
        self.index_flushed(index_ts);
        self.write_checkpoint()
    }

    fn write_checkpoint(&self) -> Result<()> {
        let _one_writer = self.checkpoint_lock.lock();
        Checkpoint {
            physic_msg_timestamp: self.physic_flushed_ts.load(Ordering::Acquire),
            logics_msg_timestamp: self.logics_flushed_ts.load(Ordering::Acquire),
            index_msg_timestamp: self.index_flushed_ts.load(Ordering::Acquire),
        }
        .write(self.storage.as_ref(), &self.checkpoint_path)
    }

    /// Wakes the flush thread (shutdown).
    pub(crate) fn wake(&self) {
        self.group_commit.notify();
    }

    /// Fails every pending durability wait (the store stops without flushing them).
    pub(crate) fn fail_pending(&self) {
        self.group_commit.fail_all();
    }

    fn flush_commit_log(&self) -> bool {
        let ts = self.commit_log.last_store_timestamp();
        match self.commit_log.flush() {
            Ok(()) => {
                self.physic_flushed_ts.fetch_max(ts, Ordering::AcqRel);
                true
            }
            Err(e) => {
                tracing::error!(error = %e, "commit log flush failed");
                false
            }
        }
    }

    /// One round of the flush thread; returns how long to sleep before the next.
    pub(crate) fn step(&self, t: &mut FlushTimers) -> Duration {
        if self.sync {
            // Group commit: one msync serves every put that asked before it started.
            if let Some(mut batch) = self.group_commit.take(Duration::from_millis(10)) {
                // Concurrent writers: the writers served by the last flush are still waking
                // up and re-queueing; give them up to GROUP_COMMIT_WINDOW so one msync serves
                // them too. A lone writer (last batch of one) never waits.
                let expected = t.last_group_commit;
                let deadline = Instant::now() + GROUP_COMMIT_WINDOW;
                while batch.len() < expected && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_micros(20));
                    if let Some(more) = self.group_commit.take(Duration::ZERO) {
                        batch.extend(more);
                    }
                }
                t.last_group_commit = batch.len();
                let ok = self.flush_commit_log();
                for ticket in batch {
                    ticket.complete(ok);
                }
            }
        }
        let now = Instant::now();
        if !self.sync && now >= t.next_commit_log_flush {
            // ASYNC_FLUSH: every interval, hand new pages to the kernel's write-back without
            // waiting; every thorough interval, msync (durable) and only then advance the
            // checkpoint. An msync every interval forces journal commits that stall the
            // writers' page faults, holding puts to the disk's speed.
            t.next_commit_log_flush = now + self.interval_commit_log;
            let pages = self.commit_log.files().dirty_bytes() / 4096;
            if now.duration_since(t.last_thorough) >= self.thorough_interval {
                t.last_thorough = now;
                self.flush_commit_log();
            } else if pages >= self.least_pages {
                if let Err(e) = self.commit_log.files().start_writeback() {
                    tracing::error!(error = %e, "commit log write-back failed");
                }
            }
        }
        if now >= t.next_logic_flush {
            t.next_logic_flush = now + self.interval_consume_queue;
            let ts = self.commit_log.last_store_timestamp();
            if self.queues.flush().is_ok() {
                self.logics_flushed_ts.fetch_max(ts, Ordering::AcqRel);
                if let Err(e) = self.write_checkpoint() {
                    tracing::error!(error = %e, "checkpoint write failed");
                }
            }
        }
        if self.sync {
            Duration::ZERO
        } else {
            t.next_commit_log_flush
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(100))
        }
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
