//! ELECT_MASTER: choose a group's master, asked by a broker (at start, or when the controller
//! reports no master), by mqadmin electMaster (designated), or by the controller itself when
//! the master went away.

use rocketpy_protocol::code::controller::response::{
    CONTROLLER_BROKER_NEED_TO_BE_REGISTERED, CONTROLLER_ELECT_MASTER_FAILED,
    CONTROLLER_MASTER_NOT_AVAILABLE, CONTROLLER_MASTER_STILL_EXIST,
};

use crate::body::{self, BrokerMemberGroup, ElectMasterResponseBody};
use crate::config::ControllerConfig;
use crate::elect_policy;
use crate::event::{ElectMasterEvent, Event};
use crate::liveness::Liveness;
use crate::request::{field, ElectMasterRequest};
use crate::result::ControllerResult;
use crate::state::ReplicasInfo;

/// ELECT_MASTER.
///
/// - Unknown group: 2010.
/// - First election of the group (master epoch 0): a requester with a real id becomes
///   master, whatever the (then empty) SyncStateSet. RocketMQ does not check that this id is a
///   member; here a non-member gets 2010, since a master nobody registered has no address.
/// - Otherwise [`elect_policy::elect`] picks, preferring the requested id when designated,
///   from the SyncStateSet and, with `enableElectUncleanMaster`, from every member.
/// - The old master chosen again: 2011 with the current epochs and the set, no event.
/// - A new master: SUCCESS with the epochs its event will produce (+1 each), the set {new},
///   the members, and an ElectMaster event.
/// - Nobody: the controller's own trigger records "no master" (event, 2004) so brokers stop
///   following the dead one; a broker's or admin's request gets 2012 and changes nothing.
pub fn elect_master(
    state: &ReplicasInfo,
    liveness: &dyn Liveness,
    config: &ControllerConfig,
    req: &ElectMasterRequest,
) -> ControllerResult {
    let result = ControllerResult::success();
    let Some(group) = state.group(&req.broker_name) else {
        return result.fail(
            CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
            "Broker hasn't been registered",
        );
    };
    let info = &group.sync_state_info;
    let replicas = &group.replica_info;
    let old_master = info.master_broker_id;
    let requester = req.broker_id.filter(|id| *id != -1);

    let mut new_master = None;
    if info.is_first_time_for_elect() {
        if let Some(id) = requester {
            if !replicas.contains(id) {
                return result.fail(
                    CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                    format!(
                        "BrokerId: {id} hasn't been registered in broker-set: {}",
                        req.broker_name
                    ),
                );
            }
            new_master = Some(id);
        }
    }
    if new_master.is_none() {
        let all = config.enable_elect_unclean_master.then(|| replicas.ids());
        let preferred = if req.designate_elect {
            req.broker_id
        } else {
            None
        };
        new_master = elect_policy::elect(
            liveness,
            &req.broker_name,
            &info.sync_state_set,
            all.as_ref(),
            old_master,
            preferred,
        );
    }

    match new_master {
        Some(id) if Some(id) == old_master => result
            .with(field::MASTER_BROKER_ID, id)
            .with_opt(field::MASTER_ADDRESS, replicas.address(id))
            .with(field::MASTER_EPOCH, info.master_epoch)
            .with(field::SYNC_STATE_SET_EPOCH, info.sync_state_set_epoch)
            .with_body(body::encode(&ElectMasterResponseBody {
                broker_member_group: None,
                sync_state_set: info.sync_state_set.clone(),
            }))
            .fail(
                CONTROLLER_MASTER_STILL_EXIST,
                format!(
                    "The old master {id} is still alive, not need to elect new master for broker {}",
                    req.broker_name
                ),
            ),
        Some(id) => result
            .with(field::MASTER_BROKER_ID, id)
            .with_opt(field::MASTER_ADDRESS, replicas.address(id))
            .with(field::MASTER_EPOCH, info.master_epoch.wrapping_add(1))
            .with(
                field::SYNC_STATE_SET_EPOCH,
                info.sync_state_set_epoch.wrapping_add(1),
            )
            .with_body(body::encode(&ElectMasterResponseBody {
                broker_member_group: Some(BrokerMemberGroup {
                    broker_addrs: replicas.address_table(),
                    broker_name: replicas.broker_name.clone(),
                    cluster: replicas.cluster_name.clone(),
                }),
                sync_state_set: [id].into(),
            }))
            .with_event(Event::ElectMaster(ElectMasterEvent::elected(
                &req.broker_name,
                id,
            ))),
        None if req.is_controller_trigger() => result
            .with_event(Event::ElectMaster(ElectMasterEvent::none_elected(
                &req.broker_name,
            )))
            .fail(
                CONTROLLER_MASTER_NOT_AVAILABLE,
                "Old master has down and failed to elect a new broker master",
            ),
        None => result.fail(CONTROLLER_ELECT_MASTER_FAILED, "Failed to elect a new master"),
    }
}
