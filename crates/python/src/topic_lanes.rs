//! Which of a topic's lanes (its write queues) a send that names no queue takes.
//!
//! Auto-batched sends stick to one lane until the batch they fill there is full or has been
//! sent, then move to the next (Kafka's sticky partitioner, KIP-480). Spreading every message
//! round-robin instead cuts a producer's traffic into one small request per queue: with
//! eight queues, eight requests where one would do, which costs the client and the broker
//! per request. Over time the queues still get equal shares; a message that went out alone
//! (its lane was idle) leaves the choice where it is, so the next ones gather behind it.
//!
//! Synchronous sends take the lanes strictly in turn.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use rocketpy_remoting::{Accumulator, Added};

use crate::send_results::Pending;

/// One topic's lanes.
struct Lanes {
    ids: Box<[u32]>,
    turn: AtomicUsize,
    sticky: Mutex<Sticky>,
}

/// The lane auto-batched sends fill, and the batch they filled there last.
#[derive(Default)]
struct Sticky {
    index: usize,
    filling: Option<(u32, u64)>,
}

/// The lanes of every topic a producer sends to (set from routes by Python).
#[derive(Default)]
pub struct TopicLanes {
    topics: RwLock<HashMap<String, Arc<Lanes>>>,
}

impl TopicLanes {
    /// `topic`'s lanes from now on (its route's write queues).
    pub fn set(&self, topic: String, ids: Vec<u32>) {
        let lanes = Arc::new(Lanes {
            ids: ids.into(),
            turn: AtomicUsize::new(0),
            sticky: Mutex::default(),
        });
        self.write().insert(topic, lanes);
    }

    /// Forgets `topic`'s lanes.
    pub fn forget(&self, topic: &str) {
        self.write().remove(topic);
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Arc<Lanes>>> {
        self.topics.write().unwrap_or_else(|e| e.into_inner())
    }

    fn get(&self, topic: &str) -> Option<Arc<Lanes>> {
        let topics = self.topics.read().unwrap_or_else(|e| e.into_inner());
        topics.get(topic).filter(|l| !l.ids.is_empty()).cloned()
    }

    /// The next lane of `topic` in turn (synchronous sends); None when it has none.
    pub fn next(&self, topic: &str) -> Option<u32> {
        let lanes = self.get(topic)?;
        let turn = lanes.turn.fetch_add(1, Ordering::Relaxed);
        Some(lanes.ids[turn % lanes.ids.len()])
    }

    /// The lane of `topic` that auto-batched sends fill now, moving on when the batch filled
    /// there last is full or sent (see the module docs); None when the topic has no lanes.
    /// Tell the outcome with [`TopicLanes::added`].
    pub fn sticky(&self, topic: &str, accumulator: &Accumulator<u32, Pending>) -> Option<u32> {
        let lanes = self.get(topic)?;
        let mut sticky = lanes.sticky.lock().unwrap_or_else(|e| e.into_inner());
        let lane = lanes.ids[sticky.index % lanes.ids.len()];
        if let Some((filled, batch)) = sticky.filling {
            if filled == lane && accumulator.gathering(&lane) != Some(batch) {
                sticky.index = sticky.index.wrapping_add(1);
                sticky.filling = None;
                return Some(lanes.ids[sticky.index % lanes.ids.len()]);
            }
        }
        Some(lane)
    }

    /// An auto-batched send of `topic` went to `lane` (from [`TopicLanes::sticky`]). The
    /// choice is not held across the send (which may wait for room with the GIL released):
    /// concurrent senders make it approximate, never wrong.
    pub fn added(&self, topic: &str, lane: u32, added: Added) {
        let Some(lanes) = self.get(topic) else {
            return;
        };
        let mut sticky = lanes.sticky.lock().unwrap_or_else(|e| e.into_inner());
        match sticky.filling {
            // The batch filled here is full (this item started the next one): move on.
            Some((filled, batch)) if filled == lane && batch != added.batch => {
                sticky.index = sticky.index.wrapping_add(1);
                sticky.filling = None;
            }
            _ => sticky.filling = (!added.sent_alone).then_some((lane, added.batch)),
        }
    }
}
