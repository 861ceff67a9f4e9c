//! The bytes one connection may hold for its peer, so that a peer that sends requests and
//! never reads the answers costs the server a bounded amount of memory, whatever the size of
//! each answer:
//! - **owed**: answers encoded and not yet taken by the socket, plus reservations of answers
//!   being read from the store ([`Budget::reserve`]). Above the high water mark the
//!   connection reads no more requests until the socket has taken the owed bytes down to the
//!   low water mark (RocketMQ 5's broker stops reading an unwritable channel the same way;
//!   `writeBufferHighWaterMark` / `writeBufferLowWaterMark` are its keys).
//! - **held**: requests being answered later (long polls, flush waits), counted by their frame
//!   size; above its bound the connection reads no more requests until some are answered.
//!
//! What must stay true: every byte charged is released exactly once (a frame when the writer
//! finished with it or the send failed, a reservation when dropped, a held request when its
//! answer went out), and every release that brings a count back under its mark wakes the
//! waiters, as does the connection closing.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

/// The marks of one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marks {
    /// Owed bytes above which the connection reads no more requests.
    pub high: usize,
    /// Owed bytes at or below which it reads again.
    pub low: usize,
    /// Bytes of held requests above which it reads no more requests.
    pub held: usize,
}

impl Default for Marks {
    /// 4 MiB owed (a pull answer is at most 256 KiB of messages, or one message of up to
    /// 4 MiB), reading again at 2 MiB; 16 MiB of held requests (40,000 long polls of a client
    /// with that many queues on one connection).
    fn default() -> Self {
        Marks {
            high: 4 << 20,
            low: 2 << 20,
            held: 16 << 20,
        }
    }
}

/// The counters of one connection (see the module documentation).
#[derive(Debug, Default)]
pub struct Budget {
    marks: Marks,
    owed: AtomicUsize,
    held: AtomicUsize,
    closed: AtomicBool,
    room: Notify,
}

impl Budget {
    /// A budget with `marks` (a low mark above the high one is taken as the high one).
    pub fn new(marks: Marks) -> Budget {
        Budget {
            marks: Marks {
                low: marks.low.min(marks.high),
                ..marks
            },
            ..Budget::default()
        }
    }

    /// Bytes owed now.
    pub fn owed(&self) -> usize {
        self.owed.load(Ordering::Acquire)
    }

    /// Bytes of held requests now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    /// Counts `n` bytes of an answer queued for the socket.
    pub fn charge(&self, n: usize) {
        self.owed.fetch_add(n, Ordering::AcqRel);
    }

    /// The socket took `n` owed bytes (or they will never be sent).
    pub fn release(&self, n: usize) {
        let before = self.owed.fetch_sub(n, Ordering::AcqRel);
        if before.saturating_sub(n) <= self.marks.low {
            self.room.notify_waiters();
        }
    }

    /// Counts a request of `n` bytes being answered later.
    pub fn hold(&self, n: usize) {
        self.held.fetch_add(n, Ordering::AcqRel);
    }

    /// A held request of `n` bytes was answered.
    pub fn unhold(&self, n: usize) {
        let before = self.held.fetch_sub(n, Ordering::AcqRel);
        if before.saturating_sub(n) <= self.marks.held {
            self.room.notify_waiters();
        }
    }

    /// The connection closed: nobody waits any more.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.room.notify_waiters();
    }

    fn full(&self) -> bool {
        self.owed() > self.marks.high || self.held() > self.marks.held
    }

    /// Waits until another request may be read: owed bytes back at the low mark once they
    /// passed the high one, and held requests within their bound. `false` when `patience`
    /// passed first (the peer reads nothing: the caller closes the connection) or the
    /// connection closed.
    pub async fn wait_for_room(&self, patience: Option<Duration>) -> bool {
        if !self.full() {
            return true;
        }
        let wait = async {
            loop {
                let notified = self.room.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if self.closed.load(Ordering::Acquire) {
                    return false;
                }
                if self.owed() <= self.marks.low && self.held() <= self.marks.held {
                    return true;
                }
                notified.await;
            }
        };
        match patience {
            Some(p) => tokio::time::timeout(p, wait).await.unwrap_or(false),
            None => wait.await,
        }
    }

    /// Waits until the owed bytes are at most the high mark, then counts `n` more for an
    /// answer about to be read (from the store) until the returned reservation is dropped —
    /// after its answer was queued and charged. Answers of requests held for a while (long
    /// polls) are read only when there is room for them, so a peer that pipelines thousands
    /// of long polls and reads nothing holds at most the high mark plus one answer.
    pub async fn reserve(self: &Arc<Self>, n: usize) -> Reservation {
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.closed.load(Ordering::Acquire) || self.owed() <= self.marks.high {
                self.charge(n);
                return Reservation {
                    budget: self.clone(),
                    bytes: n,
                };
            }
            notified.await;
        }
    }
}

/// Bytes counted for an answer being read ([`Budget::reserve`]); released when dropped.
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<Budget>,
    bytes: usize,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.release(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MARKS: Marks = Marks {
        high: 100,
        low: 40,
        held: 50,
    };

    #[tokio::test]
    async fn reading_stops_above_the_high_mark_and_resumes_at_the_low_one() {
        let b = Arc::new(Budget::new(MARKS));
        b.charge(100);
        assert!(b.wait_for_room(Some(Duration::ZERO)).await, "at the mark");
        b.charge(1);
        assert!(!b.wait_for_room(Some(Duration::from_millis(1))).await);
        let waiter = tokio::spawn({
            let b = b.clone();
            async move { b.wait_for_room(None).await }
        });
        tokio::task::yield_now().await;
        b.release(50); // 51 owed: above low
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        b.release(11); // 40: at low
        assert!(waiter.await.unwrap());
    }

    #[tokio::test]
    async fn held_requests_are_bounded_too() {
        let b = Budget::new(MARKS);
        b.hold(51);
        assert!(!b.wait_for_room(Some(Duration::from_millis(1))).await);
        b.unhold(51);
        assert!(b.wait_for_room(Some(Duration::ZERO)).await);
    }

    #[tokio::test]
    async fn reservations_wait_for_room_and_count_until_dropped() {
        let b = Arc::new(Budget::new(MARKS));
        let first = b.reserve(80).await;
        let second = b.reserve(30).await; // 80 <= high: granted
        assert_eq!(b.owed(), 110);
        let third = tokio::spawn({
            let b = b.clone();
            async move { b.reserve(30).await }
        });
        tokio::task::yield_now().await;
        assert!(!third.is_finished(), "above the high mark: waits");
        drop(second);
        drop(first); // 0 owed
        let third = third.await.unwrap();
        assert_eq!(b.owed(), 30);
        drop(third);
        assert_eq!(b.owed(), 0);
    }

    #[tokio::test]
    async fn closing_wakes_every_waiter() {
        let b = Arc::new(Budget::new(MARKS));
        b.charge(1000);
        let waiter = tokio::spawn({
            let b = b.clone();
            async move { b.wait_for_room(None).await }
        });
        tokio::task::yield_now().await;
        b.close();
        assert!(!waiter.await.unwrap());
        let _granted = b.reserve(1).await; // a closed connection reserves at once
    }
}
