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

use crate::batch::Added;

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
    /// `gathering(lane)` is the batch gathering on a lane now (`Accumulator::gathering`).
    /// Tell the outcome with [`TopicLanes::added`].
    pub fn sticky(&self, topic: &str, gathering: impl Fn(u32) -> Option<u64>) -> Option<u32> {
        let lanes = self.get(topic)?;
        let mut sticky = lanes.sticky.lock().unwrap_or_else(|e| e.into_inner());
        let lane = lanes.ids[sticky.index % lanes.ids.len()];
        if let Some((filled, batch)) = sticky.filling {
            if filled == lane && gathering(lane) != Some(batch) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn added(batch: u64, sent_alone: bool) -> Added {
        Added { batch, sent_alone }
    }

    #[test]
    fn synchronous_sends_take_the_lanes_in_turn() {
        let lanes = TopicLanes::default();
        assert_eq!(lanes.next("T"), None);
        lanes.set("T".into(), vec![4, 5, 6]);
        let taken: Vec<_> = (0..7).filter_map(|_| lanes.next("T")).collect();
        assert_eq!(taken, [4, 5, 6, 4, 5, 6, 4]);
        lanes.set("Empty".into(), vec![]);
        assert_eq!(
            lanes.next("Empty"),
            None,
            "no lanes is no lane, not a panic"
        );
        lanes.forget("T");
        assert_eq!(lanes.next("T"), None);
    }

    #[test]
    fn batched_sends_stick_to_a_lane_until_its_batch_is_full_or_sent() {
        let lanes = TopicLanes::default();
        lanes.set("T".into(), vec![10, 11]);
        // Batch 1 gathers on lane 10: the next sends join it.
        let gathering = |lane: u32| (lane == 10).then_some(1);
        assert_eq!(lanes.sticky("T", gathering), Some(10));
        lanes.added("T", 10, added(1, false));
        assert_eq!(lanes.sticky("T", gathering), Some(10));
        lanes.added("T", 10, added(1, false));
        // Batch 1 left (nothing gathers on 10 now): move on to 11.
        assert_eq!(lanes.sticky("T", |_| None), Some(11));
        lanes.added("T", 11, added(2, false));
        // A send that started the next batch on 11 (the one it filled is full): move on.
        lanes.added("T", 11, added(3, false));
        assert_eq!(
            lanes.sticky("T", |lane| (lane == 11).then_some(3)),
            Some(10)
        );
    }

    #[test]
    fn a_message_sent_alone_leaves_the_choice_where_it_is() {
        let lanes = TopicLanes::default();
        lanes.set("T".into(), vec![1, 2]);
        assert_eq!(lanes.sticky("T", |_| None), Some(1));
        lanes.added("T", 1, added(7, true));
        // Nothing was filling: the next ones gather behind it on the same lane.
        assert_eq!(lanes.sticky("T", |_| None), Some(1));
        assert_eq!(lanes.sticky("Unknown", |_| None), None);
    }

    #[test]
    fn over_many_batches_the_lanes_get_equal_shares() {
        let lanes = TopicLanes::default();
        lanes.set("T".into(), vec![0, 1, 2, 3]);
        let mut per_lane = [0u32; 4];
        let mut batch = 0u64;
        for i in 0..4000u64 {
            // Each batch holds 10 messages, then leaves.
            let lane = lanes
                .sticky("T", |_| (i % 10 != 0).then_some(batch))
                .expect("a lane");
            if i % 10 == 0 {
                batch += 1;
            }
            lanes.added("T", lane, added(batch, false));
            per_lane[lane as usize] += 1;
        }
        assert!(per_lane.iter().all(|&n| n == 1000), "{per_lane:?}");
    }
}
