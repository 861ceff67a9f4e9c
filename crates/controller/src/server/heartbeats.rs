//! The controller's table of broker heartbeats (BROKER_HEARTBEAT, 904): RocketMQ's
//! `DefaultBrokerHeartbeatManager`. Local to each controller, never replicated; brokers send
//! their heartbeats to every controller.
//!
//! What must stay true:
//! - A broker is alive while `last heartbeat + its timeout >= now`, on the table's [`Clock`]
//!   (a manual clock in tests).
//! - An entry leaves the table when it expires ([`HeartbeatTable::expire`]) or when the
//!   connection it came on closes ([`HeartbeatTable::connection_closed`]); both report the
//!   brokers that left, which is what triggers an election when one was a master.
//! - Epoch and offsets only move forward: a heartbeat updates them only when
//!   `(epoch, maxOffset)` grew, as RocketMQ does, so a heartbeat that arrives late cannot
//!   make a broker look further behind than it is.
//! - The table is bounded: a heartbeat for a new broker beyond [`MAX_BROKERS`] is refused.

use std::collections::BTreeMap;

use parking_lot::Mutex;
use rocketpy_protocol::clock::Clock;

use crate::liveness::{BrokerLiveInfo, LivenessTable};

/// Brokers one controller tracks at most (a broker group has a handful; a cluster hundreds).
pub const MAX_BROKERS: usize = 100_000;
/// RocketMQ's defaults for fields a heartbeat leaves out.
pub const DEFAULT_TIMEOUT_MS: i64 = 10_000;

/// One BROKER_HEARTBEAT as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heartbeat {
    pub cluster_name: String,
    pub broker_name: String,
    pub broker_addr: String,
    pub broker_id: i64,
    /// -1 when absent.
    pub epoch: i32,
    /// -1 when absent.
    pub max_offset: i64,
    /// -1 when absent.
    pub confirm_offset: i64,
    /// [`DEFAULT_TIMEOUT_MS`] when absent.
    pub timeout_ms: i64,
    /// `i32::MAX` when absent.
    pub election_priority: i32,
}

#[derive(Debug, Clone)]
struct Entry {
    beat: Heartbeat,
    last_update_ms: i64,
    connection: u64,
}

impl Entry {
    fn alive(&self, now: i64) -> bool {
        self.last_update_ms.saturating_add(self.beat.timeout_ms) >= now
    }
}

/// A broker that left the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Departed {
    pub cluster_name: String,
    pub broker_name: String,
    pub broker_id: i64,
}

/// The heartbeat table.
pub struct HeartbeatTable {
    clock: Clock,
    entries: Mutex<BTreeMap<(String, i64), Entry>>,
}

impl HeartbeatTable {
    pub fn new(clock: Clock) -> Self {
        Self {
            clock,
            entries: Mutex::new(BTreeMap::new()),
        }
    }

    /// The table's clock.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Records a heartbeat that came on `connection`; `false` when the table is full.
    pub fn beat(&self, beat: Heartbeat, connection: u64) -> bool {
        let now = self.clock.now_millis();
        let mut entries = self.entries.lock();
        let key = (beat.broker_name.clone(), beat.broker_id);
        let full = entries.len() >= MAX_BROKERS;
        match entries.get_mut(&key) {
            Some(e) => {
                let grew = (beat.epoch, beat.max_offset) > (e.beat.epoch, e.beat.max_offset);
                let (epoch, max, confirm) = if grew {
                    (beat.epoch, beat.max_offset, beat.confirm_offset)
                } else {
                    (e.beat.epoch, e.beat.max_offset, e.beat.confirm_offset)
                };
                e.beat = Heartbeat {
                    epoch,
                    max_offset: max,
                    confirm_offset: confirm,
                    ..beat
                };
                e.last_update_ms = now;
                e.connection = connection;
            }
            None if full => return false,
            None => {
                entries.insert(
                    key,
                    Entry {
                        beat,
                        last_update_ms: now,
                        connection,
                    },
                );
            }
        }
        true
    }

    /// Removes the brokers whose heartbeat expired and reports them.
    pub fn expire(&self) -> Vec<Departed> {
        let now = self.clock.now_millis();
        self.remove_where(|e| !e.alive(now))
    }

    /// Removes the brokers whose heartbeats came on a closed connection and reports them.
    pub fn connection_closed(&self, connection: u64) -> Vec<Departed> {
        self.remove_where(|e| e.connection == connection)
    }

    fn remove_where(&self, gone: impl Fn(&Entry) -> bool) -> Vec<Departed> {
        let mut entries = self.entries.lock();
        let keys: Vec<_> = entries
            .iter()
            .filter(|(_, e)| gone(e))
            .map(|(k, _)| k.clone())
            .collect();
        keys.into_iter()
            .filter_map(|k| entries.remove(&k))
            .map(|e| Departed {
                cluster_name: e.beat.cluster_name,
                broker_name: e.beat.broker_name,
                broker_id: e.beat.broker_id,
            })
            .collect()
    }

    /// Liveness now, as the handlers take it.
    pub fn view(&self) -> LivenessTable {
        let now = self.clock.now_millis();
        let mut table = LivenessTable::new();
        for ((name, id), e) in self.entries.lock().iter() {
            table.set(
                name,
                *id,
                BrokerLiveInfo {
                    alive: e.alive(now),
                    epoch: e.beat.epoch,
                    max_offset: e.beat.max_offset,
                    confirm_offset: e.beat.confirm_offset,
                    election_priority: e.beat.election_priority,
                },
            );
        }
        table
    }

    /// Live brokers per (cluster, broker name), as RocketMQ's `getActiveBrokersNum` counts
    /// them (groups with none alive are left out).
    pub fn active_counts(&self) -> BTreeMap<(String, String), i64> {
        let now = self.clock.now_millis();
        let mut counts = BTreeMap::new();
        for e in self.entries.lock().values().filter(|e| e.alive(now)) {
            *counts
                .entry((e.beat.cluster_name.clone(), e.beat.broker_name.clone()))
                .or_insert(0) += 1;
        }
        counts
    }

    /// Brokers tracked now (alive or not yet expired).
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// Whether no broker is tracked.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::liveness::Liveness;

    fn beat(id: i64, epoch: i32, max: i64) -> Heartbeat {
        Heartbeat {
            cluster_name: "c".into(),
            broker_name: "b".into(),
            broker_addr: format!("h:{id}"),
            broker_id: id,
            epoch,
            max_offset: max,
            confirm_offset: max,
            timeout_ms: 1_000,
            election_priority: i32::MAX,
        }
    }

    #[test]
    fn expires_on_its_clock_and_on_close() {
        let clock = Clock::manual(0);
        let table = HeartbeatTable::new(clock.clone());
        assert!(table.beat(beat(1, 1, 10), 7));
        assert!(table.beat(beat(2, 1, 10), 8));
        clock.advance(1_000);
        assert!(table.view().is_alive("b", 1));
        assert_eq!(table.active_counts()[&("c".into(), "b".into())], 2);
        assert!(table.expire().is_empty());
        clock.advance(1);
        assert!(!table.view().is_alive("b", 1));
        assert!(table.active_counts().is_empty());
        table.beat(beat(2, 1, 10), 8);
        let gone = table.expire();
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].broker_id, 1);
        let gone = table.connection_closed(8);
        assert_eq!(gone[0].broker_id, 2);
        assert!(table.is_empty());
    }

    #[test]
    fn figures_only_grow() {
        let table = HeartbeatTable::new(Clock::manual(0));
        table.beat(beat(1, 2, 100), 1);
        table.beat(beat(1, 2, 50), 1);
        assert_eq!(table.view().live_info("b", 1).unwrap().max_offset, 100);
        table.beat(beat(1, 3, 10), 1);
        let info = table.view().live_info("b", 1).unwrap();
        assert_eq!((info.epoch, info.max_offset), (3, 10));
    }
}
