//! REGISTER_BROKER: a broker with an id tells the controller where it is and learns the
//! current master, if that master is alive.

use rocketpy_protocol::code::controller::response::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED;

use super::sync_state_set_body;
use crate::event::{Event, UpdateBrokerAddressEvent};
use crate::liveness::Liveness;
use crate::request::{field, RegisterBrokerRequest};
use crate::result::ControllerResult;
use crate::state::ReplicasInfo;

/// REGISTER_BROKER: an unknown group or id is 2010. The master fields are filled only when a
/// master is set and alive (a dead master's broker must not follow it), the body is the
/// current SyncStateSet, and a changed address yields an UpdateBrokerAddress event.
pub fn register_broker(
    state: &ReplicasInfo,
    liveness: &dyn Liveness,
    req: &RegisterBrokerRequest,
) -> ControllerResult {
    let mut result = ControllerResult::success()
        .with(field::CLUSTER_NAME, &req.cluster_name)
        .with(field::BROKER_NAME, &req.broker_name);
    let Some(group) = state.group(&req.broker_name) else {
        return result.fail(
            CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
            format!(
                "Broker-set: {} hasn't been registered in controller",
                req.broker_name
            ),
        );
    };
    if !group.replica_info.contains(req.broker_id) {
        return result.fail(
            CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
            format!(
                "BrokerId: {} hasn't been registered in broker-set: {}",
                req.broker_id, req.broker_name
            ),
        );
    }
    let info = &group.sync_state_info;
    if let Some(master) = info
        .master_broker_id
        .filter(|m| liveness.is_alive(&req.broker_name, *m))
    {
        result = result
            .with(field::MASTER_BROKER_ID, master)
            .with_opt(field::MASTER_ADDRESS, group.replica_info.address(master))
            .with(field::MASTER_EPOCH, info.master_epoch)
            .with(field::SYNC_STATE_SET_EPOCH, info.sync_state_set_epoch);
    }
    result = result.with_body(sync_state_set_body(info));
    if group.replica_info.address(req.broker_id) != Some(req.broker_address.as_str()) {
        result = result.with_event(Event::UpdateBrokerAddress(UpdateBrokerAddressEvent {
            broker_address: req.broker_address.clone(),
            broker_id: req.broker_id,
            broker_name: req.broker_name.clone(),
            cluster_name: req.cluster_name.clone(),
        }));
    }
    result
}
