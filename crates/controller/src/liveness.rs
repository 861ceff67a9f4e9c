//! What this controller knows of each broker's health, from its heartbeats (BROKER_HEARTBEAT,
//! 904). Liveness is local to each controller, as in RocketMQ's DLedger mode: it is never
//! replicated, which is why brokers heartbeat every controller.
//!
//! Handlers receive liveness as a view ([`Liveness`]) taken at one instant, so a handler's
//! answer depends only on (replicated state, that view): the caller decides what "now" is and
//! when a heartbeat has expired.

use std::collections::BTreeMap;

/// One broker's last heartbeat data (RocketMQ's `BrokerLiveInfo`, without the channel and
/// timestamps, which stay with the heartbeat table of the network layer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokerLiveInfo {
    /// Whether its last heartbeat is within its timeout (`isBrokerActive`).
    pub alive: bool,
    /// The last epoch in its epoch file (-1 when it sent none).
    pub epoch: i32,
    /// Its CommitLog max offset (-1 when it sent none).
    pub max_offset: i64,
    /// Its confirm offset (-1 when it sent none).
    pub confirm_offset: i64,
    /// Lower wins an election among equals (`Integer.MAX_VALUE` when it sent none).
    pub election_priority: i32,
}

impl BrokerLiveInfo {
    /// An alive broker with these figures.
    pub fn alive(epoch: i32, max_offset: i64, election_priority: i32) -> Self {
        Self {
            alive: true,
            epoch,
            max_offset,
            confirm_offset: max_offset,
            election_priority,
        }
    }
}

/// A view of liveness per (broker name, controller id).
///
/// Keyed by broker name (not cluster too), as the replicated tables are: a broker name is one
/// group across the controller.
pub trait Liveness {
    /// The broker's last heartbeat data, or `None` if this controller has none.
    fn live_info(&self, broker_name: &str, broker_id: i64) -> Option<BrokerLiveInfo>;

    /// Whether the broker's heartbeat is current. No data means not alive.
    fn is_alive(&self, broker_name: &str, broker_id: i64) -> bool {
        self.live_info(broker_name, broker_id)
            .is_some_and(|info| info.alive)
    }
}

/// A plain table of liveness: what tests use, and what the network layer can fill from its
/// heartbeat table when it takes a view.
#[derive(Debug, Clone, Default)]
pub struct LivenessTable {
    entries: BTreeMap<(String, i64), BrokerLiveInfo>,
}

impl LivenessTable {
    /// Nobody alive.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records (or replaces) a broker's data.
    pub fn set(&mut self, broker_name: &str, broker_id: i64, info: BrokerLiveInfo) {
        self.entries
            .insert((broker_name.to_owned(), broker_id), info);
    }

    /// Records an alive broker with these figures.
    pub fn set_alive(&mut self, broker_name: &str, broker_id: i64, epoch: i32, max_offset: i64) {
        self.set(
            broker_name,
            broker_id,
            BrokerLiveInfo::alive(epoch, max_offset, i32::MAX),
        );
    }

    /// Marks a broker dead (its heartbeat expired or its channel closed), keeping its figures.
    pub fn set_dead(&mut self, broker_name: &str, broker_id: i64) {
        if let Some(info) = self.entries.get_mut(&(broker_name.to_owned(), broker_id)) {
            info.alive = false;
        }
    }

    /// Forgets a broker.
    pub fn remove(&mut self, broker_name: &str, broker_id: i64) {
        self.entries.remove(&(broker_name.to_owned(), broker_id));
    }
}

impl Liveness for LivenessTable {
    fn live_info(&self, broker_name: &str, broker_id: i64) -> Option<BrokerLiveInfo> {
        self.entries
            .get(&(broker_name.to_owned(), broker_id))
            .copied()
    }
}
