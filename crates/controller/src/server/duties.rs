//! What a controller does on its own, besides answering: notice brokers that went away
//! (heartbeat expiry, closed connection), and on the leader re-elect a group whose master is
//! gone, then tell the group's live brokers (RocketMQ's `ControllerManager.onBrokerInactive`,
//! `triggerElectMaster`, `notifyBrokerRoleChanged` and the leader's inactive-master scan).
//!
//! What must stay true:
//! - Only the leader elects; a follower only forgets the broker (its view stays warm for the
//!   day it leads).
//! - No election replaces a master during the warm-up after start (`electionWarmUpMillis`):
//!   until then this controller has not heard every live broker, and would take a live
//!   master for a dead one.
//! - A controller-triggered election is retried only when its outcome is unknown (lost
//!   leadership, timeout); "still the master" (2011) and "nobody" (2004) are answers.

use std::sync::Arc;

use rocketpy_protocol::code::controller::request::NOTIFY_BROKER_ROLE_CHANGED;
use rocketpy_protocol::code::controller::response::{
    CONTROLLER_MASTER_NOT_AVAILABLE, CONTROLLER_MASTER_STILL_EXIST,
};
use rocketpy_protocol::RemotingCommand;

use super::heartbeats::Departed;
use super::Shared;
use crate::body::{self, ElectMasterResponseBody, SyncStateSet};
use crate::liveness::Liveness;
use crate::raft::ControllerRequest;
use crate::request::{field, ElectMasterRequest};
use crate::result::ControllerResult;

/// Brokers that left this controller's table: a master among them is replaced (on the
/// leader).
pub async fn departed(shared: Arc<Shared>, gone: Vec<Departed>) {
    for d in gone {
        tracing::info!(broker = %d.broker_name, id = d.broker_id, "broker inactive");
        let Some(controller) = shared.controller() else {
            return;
        };
        if !controller.is_leader() {
            continue;
        }
        let is_master = controller
            .local_state()
            .group(&d.broker_name)
            .is_some_and(|g| g.sync_state_info.master_broker_id == Some(d.broker_id));
        if is_master {
            elect(&shared, &d.broker_name).await;
        }
    }
}

/// The leader's scan: groups whose master is not alive while a member is.
pub async fn scan_inactive_masters(shared: &Arc<Shared>) {
    let Some(controller) = shared.controller() else {
        return;
    };
    if !controller.is_leader() || shared.warming_up() {
        return;
    }
    let view = shared.heartbeats.view();
    for name in controller.local_state().groups_needing_reelection(&view) {
        elect(shared, &name).await;
    }
}

/// The controller's own election for a group whose master went away.
pub async fn elect(shared: &Arc<Shared>, broker_name: &str) {
    if shared.warming_up() {
        tracing::info!(broker = %broker_name, "master gone, but the controller is still warming up; the scan after warm-up decides");
        return;
    }
    let Some(controller) = shared.controller() else {
        return;
    };
    let request = ControllerRequest::ElectMaster(ElectMasterRequest::by_controller(broker_name));
    let attempts = shared.settings.read().elect_master_max_retry_count.max(1);
    for attempt in 1..=attempts {
        if shared.controller().is_none() {
            return; // shutting down
        }
        let view = shared.heartbeats.view();
        let result = controller.submit(&request, &view).await;
        super::metrics::count_election(shared, "", broker_name, result.code);
        match result.code {
            c if result.is_success() || c == CONTROLLER_MASTER_STILL_EXIST => {
                tracing::info!(broker = %broker_name, code = c, master = ?result.field(field::MASTER_BROKER_ID), epoch = ?result.field(field::MASTER_EPOCH), "controller-triggered election");
                if result.is_success() {
                    notify(shared, broker_name, &result, &view);
                }
                return;
            }
            CONTROLLER_MASTER_NOT_AVAILABLE => {
                tracing::warn!(broker = %broker_name, "no replica of the SyncStateSet is alive: the group has no master until one comes back");
                return;
            }
            c => {
                tracing::warn!(broker = %broker_name, attempt, code = c, remark = ?result.remark, "controller-triggered election failed")
            }
        }
    }
}

/// NOTIFY_BROKER_ROLE_CHANGED to every live member of the group after a successful election
/// (oneway, no retry: brokers also poll GET_REPLICA_INFO).
pub fn notify(
    shared: &Arc<Shared>,
    broker_name: &str,
    elected: &ControllerResult,
    view: &dyn Liveness,
) {
    if !shared.settings.read().notify_broker_role_changed {
        return;
    }
    let Some(body) = elected
        .body
        .as_deref()
        .and_then(|b| body::decode::<ElectMasterResponseBody>(b).ok())
    else {
        return;
    };
    let Some(members) = body.broker_member_group else {
        return;
    };
    let sss = body::encode(&SyncStateSet {
        sync_state_set: body.sync_state_set,
        sync_state_set_epoch: elected
            .field(field::SYNC_STATE_SET_EPOCH)
            .and_then(|v| v.parse().ok())
            .unwrap_or_default(),
    });
    let mut request = RemotingCommand::request(NOTIFY_BROKER_ROLE_CHANGED).with_body(sss);
    for name in [
        field::MASTER_ADDRESS,
        field::MASTER_EPOCH,
        field::SYNC_STATE_SET_EPOCH,
        field::MASTER_BROKER_ID,
    ] {
        if let Some(v) = elected.field(name) {
            request.set_field(name, v);
        }
    }
    for (id, addr) in members.broker_addrs {
        if !view.is_alive(broker_name, id) {
            continue;
        }
        let (client, request) = (shared.client.clone(), request.clone());
        tokio::spawn(async move {
            if let Err(e) = client.invoke_oneway(&addr, request).await {
                tracing::warn!(%addr, error = %e, "NOTIFY_BROKER_ROLE_CHANGED not sent");
            }
        });
    }
}
