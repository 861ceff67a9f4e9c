//! Handing out controller ids (RocketMQ 5.1.1's persistent unique broker id): a new broker asks
//! for the next id (GET_NEXT_BROKER_ID), writes it to a temporary identity file, then claims
//! it (APPLY_BROKER_ID) with a check code `"<addr>;<millis>"` that lets it retry the claim
//! after a crash without being taken for another broker.

use rocketpy_protocol::code::controller::response::{
    CONTROLLER_BROKER_ID_INVALID, CONTROLLER_INVALID_REQUEST,
};

use crate::event::{ApplyBrokerIdEvent, Event};
use crate::request::{field, ApplyBrokerIdRequest, GetNextBrokerIdRequest};
use crate::result::ControllerResult;
use crate::state::{ReplicasInfo, FIRST_BROKER_CONTROLLER_ID};

/// GET_NEXT_BROKER_ID: 1 for an unknown group, else the group's next id. Reads only.
pub fn get_next_broker_id(state: &ReplicasInfo, req: &GetNextBrokerIdRequest) -> ControllerResult {
    let next = state
        .group(&req.broker_name)
        .map_or(FIRST_BROKER_CONTROLLER_ID, |g| {
            g.replica_info.next_assign_broker_id
        });
    ControllerResult::success()
        .with(field::CLUSTER_NAME, &req.cluster_name)
        .with(field::BROKER_NAME, &req.broker_name)
        .with(field::NEXT_BROKER_ID, next)
}

/// APPLY_BROKER_ID: an unknown group accepts only id 1; a known group accepts a free id, or
/// an id already held under the same check code (a retry). Anything else is 2014.
///
/// Two checks RocketMQ lacks: an empty broker name (2005), whose event the log could not
/// decode again, and an id below 1 (2014), which would collide with the master's role id 0
/// or the controller's "no requester" id -1.
pub fn apply_broker_id(state: &ReplicasInfo, req: &ApplyBrokerIdRequest) -> ControllerResult {
    let result = ControllerResult::success()
        .with(field::CLUSTER_NAME, &req.cluster_name)
        .with(field::BROKER_NAME, &req.broker_name);
    let id = req.applied_broker_id;
    if req.broker_name.is_empty() {
        return result.fail(CONTROLLER_INVALID_REQUEST, "brokerName is empty");
    }
    if id < FIRST_BROKER_CONTROLLER_ID {
        return result.fail(
            CONTROLLER_BROKER_ID_INVALID,
            format!("brokerId {id} is below the first controller id {FIRST_BROKER_CONTROLLER_ID}"),
        );
    }
    let address = req
        .register_check_code
        .split(';')
        .next()
        .unwrap_or_default();
    let event = Event::ApplyBrokerId(ApplyBrokerIdEvent {
        broker_address: address.to_owned(),
        broker_name: req.broker_name.clone(),
        cluster_name: req.cluster_name.clone(),
        new_broker_id: id,
        register_check_code: req.register_check_code.clone(),
    });
    match state.group(&req.broker_name) {
        None if id == FIRST_BROKER_CONTROLLER_ID => result.with_event(event),
        None => result.fail(
            CONTROLLER_BROKER_ID_INVALID,
            format!(
                "Broker-set: {} hasn't been registered in controller, but broker try to apply brokerId: {id}",
                req.broker_name
            ),
        ),
        Some(group) => {
            let info = &group.replica_info;
            if !info.contains(id) || info.check_code(id) == Some(req.register_check_code.as_str())
            {
                result.with_event(event)
            } else {
                result.fail(
                    CONTROLLER_BROKER_ID_INVALID,
                    format!(
                        "Fail to apply brokerId: {id} in broker-set: {}",
                        req.broker_name
                    ),
                )
            }
        }
    }
}
