//! One definition of "now": wall-clock milliseconds since the epoch, as RocketMQ stamps
//! messages, offsets and checkpoints. Every crate reads the time through here: code that has
//! no server state calls [`now_millis`]; servers hold a [`Clock`], which tests make manual so
//! that time-based behaviour (pop invisibility, timer delivery, transaction checks, expiry)
//! is tested by advancing time instead of sleeping.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// Milliseconds since the Unix epoch (0 if the system clock is before it).
pub fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A server's clock: the system's, or a manual one that moves only when told (tests).
/// Clones share the same time.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    /// `None`: the system clock. `Some`: milliseconds set by the test.
    manual: Option<Arc<AtomicI64>>,
}

impl Clock {
    /// The system clock.
    pub fn system() -> Clock {
        Clock::default()
    }

    /// A manual clock standing at `start_ms` until [`Clock::advance`] or [`Clock::set`].
    pub fn manual(start_ms: i64) -> Clock {
        Clock {
            manual: Some(Arc::new(AtomicI64::new(start_ms))),
        }
    }

    /// Milliseconds since the epoch on this clock.
    pub fn now_millis(&self) -> i64 {
        match &self.manual {
            Some(ms) => ms.load(Ordering::Acquire),
            None => now_millis(),
        }
    }

    /// Moves a manual clock forward by `ms` (the system clock cannot be moved: no effect).
    pub fn advance(&self, ms: i64) {
        if let Some(now) = &self.manual {
            now.fetch_add(ms, Ordering::AcqRel);
        }
    }

    /// Sets a manual clock to `ms` (no effect on the system clock).
    pub fn set(&self, ms: i64) {
        if let Some(now) = &self.manual {
            now.store(ms, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn now_is_after_2020() {
        assert!(now_millis() > 1_577_836_800_000);
        assert!(Clock::system().now_millis() > 1_577_836_800_000);
    }

    #[test]
    fn a_manual_clock_moves_only_when_told_and_clones_share_it() {
        let clock = Clock::manual(1_000);
        let shared = clock.clone();
        assert_eq!(shared.now_millis(), 1_000);
        clock.advance(250);
        assert_eq!(shared.now_millis(), 1_250);
        shared.set(5_000);
        assert_eq!(clock.now_millis(), 5_000);
        let system = Clock::system();
        system.advance(1_000_000);
        assert!(system.now_millis() < now_millis() + 1_000);
    }
}
