//! What the controllers' Raft log carries: a [`Proposal`] (the events of one decision, in
//! RocketMQ's encoding, plus the fences the decision was computed against), and what applying
//! it answers ([`ApplyOutcome`]).
//!
//! Why fences: the leader decides against its applied state and its local liveness view,
//! then proposes. Between the two, the state may move (a new leader whose applied state still
//! lags the entries of the previous term, or a decision of a deposed leader that a majority
//! still commits). Each proposal therefore names, per group it touches, the group's version
//! it saw ([`GroupFence`]: the master epoch, the SyncStateSet epoch, the id counter and the
//! member ids, or "absent"); apply re-checks them all and applies the batch only if every one
//! still holds (docs/controller-design.md §7, "conditional commands").
//!
//! What must stay true:
//! - Applying a proposal is deterministic and all-or-nothing: every node applies or skips the
//!   same batch, so the state machines stay equal.
//! - Events are stored as RocketMQ's bytes ([`crate::Event::encode`]) and read back with
//!   [`crate::Event::decode`] (bounded, validated): nothing else decides their meaning.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Cursor;

use serde::de::Error as _;
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::apply::apply;
use crate::event::Event;
use crate::state::ReplicasInfo;

/// A controller's id in the Raft group (`controllerDLegerSelfId` mapped to a number).
pub type NodeId = u64;

openraft::declare_raft_types!(
    /// The controllers' Raft types: proposals in, apply outcomes out, snapshots in memory.
    pub TypeConfig:
        D = Proposal,
        R = ApplyOutcome,
        NodeId = NodeId,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

/// The Raft handle of a controller.
pub type ControllerRaft = openraft::Raft<TypeConfig>;
/// One log entry.
pub type Entry = openraft::Entry<TypeConfig>;
/// A log position.
pub type LogId = openraft::LogId<NodeId>;
/// The persisted vote.
pub type Vote = openraft::Vote<NodeId>;
/// A peer's address book entry.
pub type Node = openraft::BasicNode;
/// openraft's storage error, as the storage traits return it.
pub type StorageError = openraft::StorageError<NodeId>;

/// The version of a group a decision read: what must not have changed when it applies.
///
/// Epochs alone would miss member changes (a new id, a cleaned id), which the id counter and
/// the member set catch; an address change alone does not change any decision's validity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupVersion {
    pub master_epoch: i32,
    pub sync_state_set_epoch: i32,
    pub next_assign_broker_id: i64,
    pub member_ids: BTreeSet<i64>,
}

/// A precondition on one group: its version, or that it does not exist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupFence {
    pub broker_name: String,
    /// `None`: the group must be absent (the first APPLY_BROKER_ID creates it).
    pub version: Option<GroupVersion>,
}

impl GroupFence {
    /// The fence of a group as `state` holds it now.
    pub fn of(state: &ReplicasInfo, broker_name: &str) -> Self {
        Self {
            broker_name: broker_name.to_owned(),
            version: state.group(broker_name).map(|g| GroupVersion {
                master_epoch: g.sync_state_info.master_epoch,
                sync_state_set_epoch: g.sync_state_info.sync_state_set_epoch,
                next_assign_broker_id: g.replica_info.next_assign_broker_id,
                member_ids: g.replica_info.ids(),
            }),
        }
    }

    /// Whether `state` still holds the group as the fence saw it.
    pub fn holds(&self, state: &ReplicasInfo) -> bool {
        Self::of(state, &self.broker_name) == *self
    }
}

/// An event as the log stores it: RocketMQ's 2-byte type id and the JSON after it.
///
/// Serialized as `[typeId, "json"]` so the log stays readable text; deserialized through
/// [`Event::decode`], so a damaged entry is an error, never a default event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedEvent(pub Event);

impl Serialize for LoggedEvent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let bytes = self.0.encode();
        let (id, json) = bytes.split_at(2.min(bytes.len()));
        let id = u16::from_be_bytes([
            id.first().copied().unwrap_or(0),
            id.get(1).copied().unwrap_or(0),
        ]);
        let json = std::str::from_utf8(json).map_err(S::Error::custom)?;
        (id, json).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for LoggedEvent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let (id, json): (u16, String) = Deserialize::deserialize(deserializer)?;
        let mut bytes = Vec::with_capacity(json.len() + 2);
        bytes.extend_from_slice(&id.to_be_bytes());
        bytes.extend_from_slice(json.as_bytes());
        Event::decode(&bytes)
            .map(LoggedEvent)
            .map_err(D::Error::custom)
    }
}

/// One decision of the leader: its events, applied together or not at all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    /// One fence per group the events touch, taken from the state the decision read.
    pub fences: Vec<GroupFence>,
    pub events: Vec<LoggedEvent>,
}

impl Proposal {
    /// The proposal of `events` decided against `state`: fenced on every group they touch.
    pub fn new(state: &ReplicasInfo, events: &[Event]) -> Self {
        let names: BTreeSet<&str> = events.iter().map(Event::broker_name).collect();
        Self {
            fences: names
                .into_iter()
                .map(|name| GroupFence::of(state, name))
                .collect(),
            events: events.iter().cloned().map(LoggedEvent).collect(),
        }
    }

    /// Applies the events if every fence holds; otherwise changes nothing and names the
    /// first group that moved.
    pub fn apply_to(&self, state: &mut ReplicasInfo) -> ApplyOutcome {
        if let Some(moved) = self.fences.iter().find(|f| !f.holds(state)) {
            return ApplyOutcome::Stale {
                broker_name: moved.broker_name.clone(),
            };
        }
        for event in &self.events {
            apply(state, &event.0);
        }
        ApplyOutcome::Applied {
            events: self.events.len(),
        }
    }
}

/// What applying one log entry did; the proposer's `client_write` returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ApplyOutcome {
    /// Every fence held and the events were applied.
    Applied { events: usize },
    /// A group changed since the decision: nothing was applied, the leader decides again.
    Stale { broker_name: String },
    /// A blank or membership entry: no controller state changed.
    NoCommand,
}

/// The peers of a group by id (`controllerDLegerPeers`), as openraft's membership takes them.
pub type Peers = BTreeMap<NodeId, Node>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{ApplyBrokerIdEvent, ElectMasterEvent};

    fn add(name: &str, id: i64) -> Event {
        Event::ApplyBrokerId(ApplyBrokerIdEvent {
            broker_address: format!("h:{id}"),
            broker_name: name.into(),
            cluster_name: "c".into(),
            new_broker_id: id,
            register_check_code: format!("h:{id};1"),
        })
    }

    #[test]
    fn stale_decisions_change_nothing() {
        let mut state = ReplicasInfo::new();
        let first = Proposal::new(&state, &[add("a", 1)]);
        assert_eq!(
            first.apply_to(&mut state),
            ApplyOutcome::Applied { events: 1 }
        );
        // The same decision again: the group exists now, so its "absent" fence fails.
        let before = state.clone();
        assert!(matches!(
            first.apply_to(&mut state),
            ApplyOutcome::Stale { .. }
        ));
        assert_eq!(state, before);

        let elect = Proposal::new(
            &state,
            &[Event::ElectMaster(ElectMasterEvent::elected("a", 1))],
        );
        let again = elect.clone();
        assert_eq!(
            elect.apply_to(&mut state),
            ApplyOutcome::Applied { events: 1 }
        );
        // A deposed leader's election computed against epoch 0 cannot apply after epoch 1.
        assert!(matches!(
            again.apply_to(&mut state),
            ApplyOutcome::Stale { .. }
        ));
        assert_eq!(state.group("a").unwrap().sync_state_info.master_epoch, 1);
    }

    #[test]
    fn proposals_round_trip_through_json_as_rocketmq_bytes() {
        let p = Proposal::new(&ReplicasInfo::new(), &[add("a", 1), add("b", 1)]);
        let json = serde_json::to_string(&p).unwrap();
        assert!(json.contains(r#"[2,"{\"brokerAddress\""#), "{json}");
        assert_eq!(serde_json::from_str::<Proposal>(&json).unwrap(), p);
        // A damaged event is an error, not a default.
        let bad = json.replacen("[2,", "[9,", 1);
        assert!(serde_json::from_str::<Proposal>(&bad).is_err());
    }
}
