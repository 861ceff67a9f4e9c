//! A snapshot of the whole state, for the Raft integration to save and restore
//! ([`ReplicasInfo`] as JSON, with a format number).
//!
//! This format is rocketpy's own: RocketMQ's DLedger controller takes no snapshots (its state
//! machine's `onSnapshotSave` does nothing and a restart replays the whole log), and its jRaft
//! controller writes Hessian-serialized Java objects, which nothing outside the JVM reads.
//! Nothing outside rocketpy reads these bytes either.
//!
//! What must stay true:
//! - `restore(save(s)) == s` for every state, and the bytes of equal states are equal (all
//!   maps are ordered), so two nodes' snapshots of the same log compare byte for byte.
//! - [`restore`] never panics, is bounded like every JSON reader of rocketpy, refuses an
//!   unknown format number, and refuses a state that the events could never have produced
//!   in a way that would mislead a handler (a group filed under another name, a next id
//!   below 1).
//! - A new format gets a new number; old numbers stay readable.

use rocketpy_protocol::limits::{check_json, JsonLimits};
use serde::{Deserialize, Serialize};

use crate::state::{ReplicasInfo, FIRST_BROKER_CONTROLLER_ID};

/// The format [`save`] writes.
pub const SNAPSHOT_FORMAT: u32 = 1;

/// Why bytes are not a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    #[error("snapshot is not readable JSON: {0}")]
    Json(String),
    #[error("snapshot format {0} is not known (this build reads {known})", known = SNAPSHOT_FORMAT)]
    UnknownFormat(u32),
    #[error("snapshot is inconsistent: {0}")]
    Inconsistent(String),
}

#[derive(Serialize)]
struct SnapshotRef<'a> {
    format: u32,
    state: &'a ReplicasInfo,
}

#[derive(Deserialize)]
struct SnapshotOwned {
    format: u32,
    state: ReplicasInfo,
}

/// The snapshot's bytes.
pub fn save(state: &ReplicasInfo) -> Vec<u8> {
    // A struct of strings, integers and ordered collections always serializes.
    serde_json::to_vec(&SnapshotRef {
        format: SNAPSHOT_FORMAT,
        state,
    })
    .unwrap_or_default()
}

/// The state a snapshot holds.
pub fn restore(bytes: &[u8]) -> Result<ReplicasInfo, SnapshotError> {
    check_json(bytes, JsonLimits::TABLE).map_err(SnapshotError::Json)?;
    let snapshot: SnapshotOwned =
        serde_json::from_slice(bytes).map_err(|e| SnapshotError::Json(e.to_string()))?;
    if snapshot.format != SNAPSHOT_FORMAT {
        return Err(SnapshotError::UnknownFormat(snapshot.format));
    }
    for (name, group) in &snapshot.state.groups {
        let bad = |what: &str| Err(SnapshotError::Inconsistent(format!("group {name}: {what}")));
        if group.replica_info.broker_name != *name || group.sync_state_info.broker_name != *name {
            return bad("filed under another broker name");
        }
        if group.replica_info.next_assign_broker_id < FIRST_BROKER_CONTROLLER_ID {
            return bad("next broker id below 1");
        }
        if group.sync_state_info.master_epoch < 0 || group.sync_state_info.sync_state_set_epoch < 0
        {
            return bad("negative epoch");
        }
    }
    Ok(snapshot.state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::apply;
    use crate::event::{ApplyBrokerIdEvent, ElectMasterEvent, Event};

    fn sample() -> ReplicasInfo {
        let mut s = ReplicasInfo::new();
        for (name, id) in [("b", 1), ("a", 1), ("a", 2)] {
            apply(
                &mut s,
                &Event::ApplyBrokerId(ApplyBrokerIdEvent {
                    broker_address: format!("h:{id}"),
                    broker_name: name.into(),
                    cluster_name: "c".into(),
                    new_broker_id: id,
                    register_check_code: format!("h:{id};7"),
                }),
            );
        }
        apply(
            &mut s,
            &Event::ElectMaster(ElectMasterEvent::elected("a", 2)),
        );
        s
    }

    #[test]
    fn round_trips_byte_for_byte() {
        let s = sample();
        let bytes = save(&s);
        let back = restore(&bytes).unwrap();
        assert_eq!(back, s);
        assert_eq!(save(&back), bytes);
        assert_eq!(
            restore(&save(&ReplicasInfo::new())).unwrap(),
            ReplicasInfo::new()
        );
    }

    #[test]
    fn refuses_bad_snapshots() {
        assert!(matches!(restore(b""), Err(SnapshotError::Json(_))));
        assert!(matches!(restore(b"\xff\x00"), Err(SnapshotError::Json(_))));
        assert!(matches!(
            restore(br#"{"format":2,"state":{"groups":{}}}"#),
            Err(SnapshotError::UnknownFormat(2))
        ));
        let text = String::from_utf8(save(&sample())).unwrap();
        let moved = text.replacen(r#""groups":{"a""#, r#""groups":{"z""#, 1);
        assert!(matches!(
            restore(moved.as_bytes()),
            Err(SnapshotError::Inconsistent(_))
        ));
        let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(restore(deep.as_bytes()).is_err());
    }
}
