//! A producer's lanes: where its requests go (broker address, broker name, topic, queue), by
//! number. A number is what crosses into the native send paths on every send, and the same
//! four always get the same number.
//!
//! What must stay true: lanes are appended, never removed or renumbered (a producer has one
//! per queue it sends to and broker address it knew), so a number handed out stays valid.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// Where a lane's requests go, with `X`: what a user of the table keeps beside it (the
/// binding caches the lane's `MessageQueue` there); it takes no part in the lane's identity.
#[derive(Debug)]
pub struct Lane<X = ()> {
    pub addr: String,
    pub broker_name: String,
    pub topic: String,
    pub queue_id: i32,
    pub extra: X,
}

impl<X> Lane<X> {
    /// What makes two lanes the same: where they lead (`extra` aside).
    fn key(&self) -> (&str, &str, &str, i32) {
        (&self.addr, &self.broker_name, &self.topic, self.queue_id)
    }
}

impl<X> PartialEq for Lane<X> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl<X> Eq for Lane<X> {}

impl<X> std::hash::Hash for Lane<X> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state)
    }
}

#[derive(Debug)]
struct Table<X> {
    by_id: Vec<Arc<Lane<X>>>,
    ids: HashMap<Arc<Lane<X>>, u32>,
}

/// Lanes by number.
#[derive(Debug)]
pub struct Lanes<X = ()> {
    table: RwLock<Table<X>>,
}

impl<X> Default for Lanes<X> {
    fn default() -> Self {
        Lanes {
            table: RwLock::new(Table {
                by_id: Vec::new(),
                ids: HashMap::new(),
            }),
        }
    }
}

impl<X: Default> Lanes<X> {
    /// The number of the lane to `queue_id` of `topic` on `broker_name` at `addr` (the same
    /// number for the same four; a new one, with a default `extra`, the first time).
    pub fn id(&self, addr: String, broker_name: String, topic: String, queue_id: i32) -> u32 {
        let lane = Lane {
            addr,
            broker_name,
            topic,
            queue_id,
            extra: X::default(),
        };
        if let Some(&id) = self.read().ids.get(&lane) {
            return id;
        }
        let mut table = self.table.write().unwrap_or_else(|e| e.into_inner());
        if let Some(&id) = table.ids.get(&lane) {
            return id;
        }
        let id = table.by_id.len() as u32;
        let lane = Arc::new(lane);
        table.by_id.push(lane.clone());
        table.ids.insert(lane, id);
        id
    }
}

impl<X> Lanes<X> {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Table<X>> {
        self.table.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Lane `id`; None when no lane has that number.
    pub fn get(&self, id: u32) -> Option<Arc<Lane<X>>> {
        self.read().by_id.get(id as usize).cloned()
    }

    /// How many lanes there are.
    pub fn len(&self) -> usize {
        self.read().by_id.len()
    }

    /// Whether there are none yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(lanes: &Lanes, addr: &str, queue: i32) -> u32 {
        lanes.id(addr.into(), "broker-a".into(), "T".into(), queue)
    }

    #[test]
    fn the_same_four_get_the_same_number_and_numbers_never_move() {
        let lanes = Lanes::<()>::default();
        assert!(lanes.is_empty());
        let a0 = id(&lanes, "127.0.0.1:1", 0);
        let a1 = id(&lanes, "127.0.0.1:1", 1);
        let b0 = id(&lanes, "127.0.0.1:2", 0);
        assert_eq!((a0, a1, b0), (0, 1, 2));
        assert_eq!(id(&lanes, "127.0.0.1:1", 1), a1);
        assert_eq!(lanes.len(), 3);
        let lane = lanes.get(b0).expect("lane b0");
        assert_eq!((lane.addr.as_str(), lane.queue_id), ("127.0.0.1:2", 0));
        assert!(lanes.get(3).is_none());
    }

    #[test]
    fn extra_takes_no_part_in_identity() {
        let lanes = Lanes::<std::sync::OnceLock<u8>>::default();
        let a = lanes.id("x:1".into(), "b".into(), "T".into(), 0);
        lanes.get(a).expect("lane").extra.set(7).expect("first set");
        assert_eq!(lanes.id("x:1".into(), "b".into(), "T".into(), 0), a);
        assert_eq!(lanes.get(a).and_then(|l| l.extra.get().copied()), Some(7));
    }
}
