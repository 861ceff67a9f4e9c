//! Applying a committed event to the state (RocketMQ's `ReplicasInfoManager.applyEvent`).
//!
//! What must stay true: [`apply`] is deterministic and total. It reads nothing but the state
//! and the event (no clock, no liveness, no randomness), never panics, and an event about a
//! group that is not there changes nothing (RocketMQ would throw on an address update of an
//! unknown group; a replicated log must not stop on it). Every controller applying the same
//! log therefore holds the same state.

use crate::event::{
    AlterSyncStateSetEvent, ApplyBrokerIdEvent, CleanBrokerDataEvent, ElectMasterEvent, Event,
    UpdateBrokerAddressEvent,
};
use crate::state::{BrokerGroup, ReplicasInfo};

/// Applies one event.
pub fn apply(state: &mut ReplicasInfo, event: &Event) {
    match event {
        Event::AlterSyncStateSet(e) => alter_sync_state_set(state, e),
        Event::ApplyBrokerId(e) => apply_broker_id(state, e),
        Event::ElectMaster(e) => elect_master(state, e),
        Event::CleanBrokerData(e) => clean_broker_data(state, e),
        Event::UpdateBrokerAddress(e) => update_broker_address(state, e),
    }
}

/// The set is replaced and its epoch grows by one.
fn alter_sync_state_set(state: &mut ReplicasInfo, e: &AlterSyncStateSetEvent) {
    if let Some(group) = state.groups.get_mut(&e.broker_name) {
        let info = &mut group.sync_state_info;
        info.sync_state_set = e.new_sync_state_set.clone();
        info.sync_state_set_epoch = info.sync_state_set_epoch.wrapping_add(1);
    }
}

/// Adds the member unless its id is taken (so a retried apply changes nothing); the first
/// member creates the group with epochs 0.
fn apply_broker_id(state: &mut ReplicasInfo, e: &ApplyBrokerIdEvent) {
    let group = state
        .groups
        .entry(e.broker_name.clone())
        .or_insert_with(|| BrokerGroup::new(&e.cluster_name, &e.broker_name));
    if !group.replica_info.contains(e.new_broker_id) {
        group
            .replica_info
            .add(e.new_broker_id, &e.broker_address, &e.register_check_code);
    }
}

/// Elected: the master is set, both epochs grow and the set becomes {master}. Not elected:
/// the master is cleared and its epoch grows, the set is kept (the replicas in it are still
/// the ones that may be elected later without losing data).
fn elect_master(state: &mut ReplicasInfo, e: &ElectMasterEvent) {
    let Some(group) = state.groups.get_mut(&e.broker_name) else {
        return;
    };
    let info = &mut group.sync_state_info;
    info.master_epoch = info.master_epoch.wrapping_add(1);
    match (e.new_master_elected, e.new_master_broker_id) {
        (true, Some(id)) => {
            info.master_broker_id = Some(id);
            info.sync_state_set = [id].into();
            info.sync_state_set_epoch = info.sync_state_set_epoch.wrapping_add(1);
        }
        // `Event::decode` refuses an elected master without an id; a hand-built one is read
        // as "none elected", the only meaning that needs no id.
        _ => info.master_broker_id = None,
    }
}

/// No ids: the group goes. Otherwise the ids leave the members and the set (without an epoch
/// change, as in RocketMQ), and the group goes once it has no member left.
///
/// RocketMQ also drops its SyncStateSet table entry once the set is empty, which leaves a
/// group whose members are known but which every request treats as unknown; with one table
/// per group that half state cannot exist, so the group stays while it has members.
fn clean_broker_data(state: &mut ReplicasInfo, e: &CleanBrokerDataEvent) {
    let ids = match &e.broker_id_set_to_clean {
        Some(ids) if !ids.is_empty() => ids,
        _ => {
            state.groups.remove(&e.broker_name);
            return;
        }
    };
    let Some(group) = state.groups.get_mut(&e.broker_name) else {
        return;
    };
    for id in ids {
        group.replica_info.broker_id_info.remove(id);
        group.sync_state_info.sync_state_set.remove(id);
    }
    if group.replica_info.broker_id_info.is_empty() {
        state.groups.remove(&e.broker_name);
    }
}

/// The member's address changes; its check code stays.
fn update_broker_address(state: &mut ReplicasInfo, e: &UpdateBrokerAddressEvent) {
    if let Some(info) = state
        .groups
        .get_mut(&e.broker_name)
        .and_then(|g| g.replica_info.broker_id_info.get_mut(&e.broker_id))
    {
        info.address = e.broker_address.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply_id(state: &mut ReplicasInfo, id: i64, addr: &str) {
        apply(
            state,
            &Event::ApplyBrokerId(ApplyBrokerIdEvent {
                broker_address: addr.into(),
                broker_name: "a".into(),
                cluster_name: "c".into(),
                new_broker_id: id,
                register_check_code: format!("{addr};1"),
            }),
        );
    }

    #[test]
    fn events_change_what_rocketmq_changes() {
        let mut s = ReplicasInfo::new();
        apply_id(&mut s, 1, "h:1");
        apply_id(&mut s, 1, "h:1");
        apply_id(&mut s, 2, "h:2");
        let g = s.group("a").unwrap();
        assert_eq!(g.replica_info.next_assign_broker_id, 3);
        assert_eq!(g.sync_state_info.master_epoch, 0);

        apply(
            &mut s,
            &Event::ElectMaster(ElectMasterEvent::elected("a", 1)),
        );
        let info = &s.group("a").unwrap().sync_state_info;
        assert_eq!((info.master_epoch, info.sync_state_set_epoch), (1, 1));
        assert_eq!(info.master_broker_id, Some(1));

        apply(
            &mut s,
            &Event::AlterSyncStateSet(AlterSyncStateSetEvent {
                broker_name: "a".into(),
                new_sync_state_set: [1, 2].into(),
            }),
        );
        apply(
            &mut s,
            &Event::ElectMaster(ElectMasterEvent::none_elected("a")),
        );
        let info = &s.group("a").unwrap().sync_state_info;
        assert_eq!((info.master_epoch, info.sync_state_set_epoch), (2, 2));
        assert_eq!(info.master_broker_id, None);
        assert_eq!(info.sync_state_set, [1, 2].into());

        apply(
            &mut s,
            &Event::UpdateBrokerAddress(UpdateBrokerAddressEvent {
                broker_address: "h:9".into(),
                broker_id: 2,
                broker_name: "a".into(),
                cluster_name: "c".into(),
            }),
        );
        let g = s.group("a").unwrap();
        assert_eq!(g.replica_info.address(2), Some("h:9"));
        assert_eq!(g.replica_info.check_code(2), Some("h:2;1"));

        apply(
            &mut s,
            &Event::CleanBrokerData(CleanBrokerDataEvent {
                broker_id_set_to_clean: Some([1].into()),
                broker_name: "a".into(),
            }),
        );
        let g = s.group("a").unwrap();
        assert_eq!(g.replica_info.ids(), [2].into());
        assert_eq!(g.sync_state_info.sync_state_set, [2].into());
        assert_eq!(g.sync_state_info.sync_state_set_epoch, 2);

        apply(
            &mut s,
            &Event::CleanBrokerData(CleanBrokerDataEvent {
                broker_id_set_to_clean: None,
                broker_name: "a".into(),
            }),
        );
        assert!(s.groups.is_empty());
    }

    #[test]
    fn events_of_unknown_groups_change_nothing() {
        let mut s = ReplicasInfo::new();
        apply(
            &mut s,
            &Event::ElectMaster(ElectMasterEvent::elected("x", 1)),
        );
        apply(
            &mut s,
            &Event::UpdateBrokerAddress(UpdateBrokerAddressEvent {
                broker_address: "h".into(),
                broker_id: 1,
                broker_name: "x".into(),
                cluster_name: "c".into(),
            }),
        );
        assert_eq!(s, ReplicasInfo::new());
    }
}
