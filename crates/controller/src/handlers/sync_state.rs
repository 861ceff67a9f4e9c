//! The SyncStateSet: the master changes it (ALTER_SYNC_STATE_SET, shrinking lagging replicas
//! and adding caught-up ones), brokers poll it (GET_REPLICA_INFO), mqadmin shows it
//! (GET_SYNC_STATE_DATA).
//!
//! The alter checks are what fence a deposed master: once a newer election happened its
//! requests carry a stale master id (2002) or epoch (2000), and a set epoch it has not seen
//! (2001) means its proposal was computed from an older set.

use rocketpy_protocol::code::controller::response::{
    CONTROLLER_ALTER_SYNC_STATE_SET_FAILED, CONTROLLER_BROKER_METADATA_NOT_EXIST,
    CONTROLLER_BROKER_NOT_ALIVE, CONTROLLER_FENCED_MASTER_EPOCH,
    CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH, CONTROLLER_INVALID_MASTER, CONTROLLER_INVALID_REPLICAS,
};

use super::sync_state_set_body;
use crate::body::{self, BrokerReplicasInfo, GroupReplicasInfo, ReplicaIdentity, SyncStateSet};
use crate::event::{AlterSyncStateSetEvent, Event};
use crate::liveness::Liveness;
use crate::request::{field, AlterSyncStateSetRequest, GetReplicaInfoRequest};
use crate::result::ControllerResult;
use crate::state::ReplicasInfo;

/// ALTER_SYNC_STATE_SET, checked in RocketMQ's order: unknown group (2013), a set equal to
/// the current one (2013), not the current master (2002), a stale master epoch (2000), a
/// stale set epoch (2001), per proposed id a non-member (2003) or a dead one (2006), a set
/// without the master (2013). Accepted: the new set epoch (+1) in the header and the body,
/// and an AlterSyncStateSet event.
///
/// The header always carries `newSyncStateSetEpoch` (a Java `int`, so 0 on refusals).
pub fn alter_sync_state_set(
    state: &ReplicasInfo,
    liveness: &dyn Liveness,
    req: &AlterSyncStateSetRequest,
) -> ControllerResult {
    let refused = |code: i32, remark: String| {
        ControllerResult::success()
            .with(field::NEW_SYNC_STATE_SET_EPOCH, 0)
            .fail(code, remark)
    };
    let Some(group) = state.group(&req.broker_name) else {
        return refused(
            CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
            "Broker metadata is not existed".into(),
        );
    };
    let info = &group.sync_state_info;
    let proposed = &req.sync_state_set.sync_state_set;
    if *proposed == info.sync_state_set {
        return refused(
            CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
            "The newSyncStateSet is equal with oldSyncStateSet, no needed to update syncStateSet"
                .into(),
        );
    }
    if info.master_broker_id != Some(req.master_broker_id) {
        return refused(
            CONTROLLER_INVALID_MASTER,
            format!(
                "Rejecting alter syncStateSet request because the current leader is:{{{}}}, not {{{}}}",
                info.master_broker_id
                    .map_or_else(|| "null".to_owned(), |m| m.to_string()),
                req.master_broker_id
            ),
        );
    }
    if req.master_epoch != info.master_epoch {
        return refused(
            CONTROLLER_FENCED_MASTER_EPOCH,
            format!(
                "Rejecting alter syncStateSet request because the current master epoch is:{{{}}}, not {{{}}}",
                info.master_epoch, req.master_epoch
            ),
        );
    }
    if req.sync_state_set.sync_state_set_epoch != info.sync_state_set_epoch {
        return refused(
            CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH,
            format!(
                "Rejecting alter syncStateSet request because the current syncStateSet epoch is:{{{}}}, not {{{}}}",
                info.sync_state_set_epoch, req.sync_state_set.sync_state_set_epoch
            ),
        );
    }
    for id in proposed {
        if !group.replica_info.contains(*id) {
            return refused(
                CONTROLLER_INVALID_REPLICAS,
                format!("Rejecting alter syncStateSet request because the replicas {{{id}}} don't exist"),
            );
        }
        if !liveness.is_alive(&req.broker_name, *id) {
            return refused(
                CONTROLLER_BROKER_NOT_ALIVE,
                format!("Rejecting alter syncStateSet request because the replicas {{{id}}} don't alive"),
            );
        }
    }
    if !proposed.contains(&req.master_broker_id) {
        return refused(
            CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
            format!(
                "Rejecting alter syncStateSet request because the newSyncStateSet don't contains origin leader {{{}}}",
                req.master_broker_id
            ),
        );
    }
    let epoch = info.sync_state_set_epoch.wrapping_add(1);
    ControllerResult::success()
        .with(field::NEW_SYNC_STATE_SET_EPOCH, epoch)
        .with_body(body::encode(&SyncStateSet {
            sync_state_set: proposed.clone(),
            sync_state_set_epoch: epoch,
        }))
        .with_event(Event::AlterSyncStateSet(AlterSyncStateSetEvent {
            broker_name: req.broker_name.clone(),
            new_sync_state_set: proposed.clone(),
        }))
}

/// GET_REPLICA_INFO: the master id, address and epoch (the id and address absent when there
/// is no master), and the set as the body; an unknown group is 2008 (the broker then
/// registers again). Reads only.
pub fn get_replica_info(state: &ReplicasInfo, req: &GetReplicaInfoRequest) -> ControllerResult {
    let Some(group) = state.group(&req.broker_name) else {
        return ControllerResult::success().fail(
            CONTROLLER_BROKER_METADATA_NOT_EXIST,
            "Broker metadata is not existed",
        );
    };
    let info = &group.sync_state_info;
    ControllerResult::success()
        .with_opt(field::MASTER_BROKER_ID, info.master_broker_id)
        .with_opt(field::MASTER_ADDRESS, group.master_address())
        .with(field::MASTER_EPOCH, info.master_epoch)
        .with_body(sync_state_set_body(info))
}

/// GET_SYNC_STATE_DATA: for each known name asked for, every member with whether it is
/// alive, split into in-sync and not-in-sync (`BrokerReplicasInfo`). Unknown names are left
/// out. Reads only.
pub fn get_sync_state_data(
    state: &ReplicasInfo,
    liveness: &dyn Liveness,
    broker_names: &[String],
) -> ControllerResult {
    let mut answer = BrokerReplicasInfo::default();
    for name in broker_names {
        let Some(group) = state.group(name) else {
            continue;
        };
        let info = &group.sync_state_info;
        let mut entry = GroupReplicasInfo {
            in_sync_replicas: Vec::new(),
            master_address: group.master_address().map(str::to_owned),
            master_broker_id: info.master_broker_id,
            master_epoch: info.master_epoch,
            not_in_sync_replicas: Vec::new(),
            sync_state_set_epoch: info.sync_state_set_epoch,
        };
        for (id, member) in &group.replica_info.broker_id_info {
            let replica = ReplicaIdentity {
                alive: liveness.is_alive(name, *id),
                broker_address: member.address.clone(),
                broker_id: *id,
                broker_name: name.clone(),
            };
            if info.sync_state_set.contains(id) {
                entry.in_sync_replicas.push(replica);
            } else {
                entry.not_in_sync_replicas.push(replica);
            }
        }
        answer.replicas_info_table.insert(name.clone(), entry);
    }
    ControllerResult::success().with_body(body::encode(&answer))
}
