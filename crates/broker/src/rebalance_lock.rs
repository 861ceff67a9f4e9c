//! Queue locks for orderly consumption (RocketMQ's `RebalanceLockManager`): one client of a
//! group holds a queue at a time; a lock not renewed for 60 s expires and may be taken over.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rocketpy_protocol::body::MessageQueue;

/// How long a lock lasts without renewal (`rocketmq.broker.rebalance.lockMaxLiveTime`).
pub const LOCK_MAX_LIVE_TIME: Duration = Duration::from_secs(60);

struct LockEntry {
    client_id: String,
    last_update: Instant,
}

/// Lock tables by group.
#[derive(Default)]
pub struct RebalanceLockManager {
    table: Mutex<HashMap<String, HashMap<MessageQueue, LockEntry>>>,
    max_live: Option<Duration>,
}

impl RebalanceLockManager {
    /// Locks expire after `max_live` (default [`LOCK_MAX_LIVE_TIME`]).
    pub fn new(max_live: Option<Duration>) -> Self {
        RebalanceLockManager {
            table: Mutex::default(),
            max_live,
        }
    }

    fn live(&self) -> Duration {
        self.max_live.unwrap_or(LOCK_MAX_LIVE_TIME)
    }

    /// Locks (or renews) what it can of `mqs` for `client_id`; returns the queues it holds.
    pub fn lock_batch(
        &self,
        group: &str,
        mqs: &[MessageQueue],
        client_id: &str,
    ) -> Vec<MessageQueue> {
        let live = self.live();
        let mut table = self.table.lock();
        let locks = table.entry(group.to_owned()).or_default();
        let now = Instant::now();
        let mut held = Vec::new();
        for mq in mqs {
            match locks.get_mut(mq) {
                Some(e) if e.client_id == client_id => {
                    e.last_update = now;
                    held.push(mq.clone());
                }
                Some(e) if now.duration_since(e.last_update) > live => {
                    tracing::info!(group, queue = ?mq, old = %e.client_id, new = client_id, "expired queue lock taken over");
                    *e = LockEntry {
                        client_id: client_id.to_owned(),
                        last_update: now,
                    };
                    held.push(mq.clone());
                }
                Some(_) => {}
                None => {
                    locks.insert(
                        mq.clone(),
                        LockEntry {
                            client_id: client_id.to_owned(),
                            last_update: now,
                        },
                    );
                    held.push(mq.clone());
                }
            }
        }
        held
    }

    /// Releases the queues `client_id` holds among `mqs`.
    pub fn unlock_batch(&self, group: &str, mqs: &[MessageQueue], client_id: &str) {
        let mut table = self.table.lock();
        if let Some(locks) = table.get_mut(group) {
            for mq in mqs {
                if locks.get(mq).is_some_and(|e| e.client_id == client_id) {
                    locks.remove(mq);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mq(id: i32) -> MessageQueue {
        MessageQueue {
            topic: "T".into(),
            broker_name: "b".into(),
            queue_id: id,
        }
    }

    #[test]
    fn one_holder_expiry_and_unlock() {
        let m = RebalanceLockManager::new(Some(Duration::from_millis(50)));
        assert_eq!(m.lock_batch("g", &[mq(0), mq(1)], "c1"), vec![mq(0), mq(1)]);
        assert!(m.lock_batch("g", &[mq(0)], "c2").is_empty(), "held by c1");
        assert_eq!(
            m.lock_batch("other", &[mq(0)], "c2"),
            vec![mq(0)],
            "per group"
        );
        m.unlock_batch("g", &[mq(1)], "c2"); // not c2's: ignored
        assert!(m.lock_batch("g", &[mq(1)], "c2").is_empty());
        m.unlock_batch("g", &[mq(1)], "c1");
        assert_eq!(m.lock_batch("g", &[mq(1)], "c2"), vec![mq(1)]);
        std::thread::sleep(Duration::from_millis(80));
        assert_eq!(
            m.lock_batch("g", &[mq(0)], "c2"),
            vec![mq(0)],
            "expired lock taken over"
        );
    }
}
