//! Logging a condition that repeats on every request (a full disk, a failing background
//! step) at most once per interval, so the log stays readable and small.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Lets one call through per interval.
#[derive(Debug)]
pub struct LogEvery {
    start: Instant,
    every: Duration,
    /// Nanoseconds after `start` when the next call may log (0: at once).
    next: AtomicU64,
}

impl LogEvery {
    /// Once per `every`.
    pub fn new(every: Duration) -> Self {
        LogEvery {
            start: Instant::now(),
            every,
            next: AtomicU64::new(0),
        }
    }

    /// Once per minute.
    pub fn minute() -> Self {
        Self::new(Duration::from_secs(60))
    }

    /// Runs `log` if the interval since the last run has passed; returns whether it ran.
    pub fn log(&self, log: impl FnOnce()) -> bool {
        let now = self.start.elapsed().as_nanos() as u64;
        let next = self.next.load(Ordering::Relaxed);
        if now < next {
            return false;
        }
        let until = now + self.every.as_nanos() as u64;
        if self
            .next
            .compare_exchange(next, until, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        log();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn once_per_interval() {
        let every = LogEvery::new(Duration::from_secs(3600));
        assert!(every.log(|| {}));
        assert!(!every.log(|| {}));
        let often = LogEvery::new(Duration::ZERO);
        assert!(often.log(|| {}));
        assert!(often.log(|| {}));
    }
}
