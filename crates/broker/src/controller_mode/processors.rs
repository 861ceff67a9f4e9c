//! The requests a controller-mode broker answers: NOTIFY_BROKER_ROLE_CHANGED (1008, from the
//! controller leader) and GET_BROKER_EPOCH_CACHE (1007, mqadmin getBrokerEpoch).
//!
//! A broker not in controller mode answers both with SYSTEM_ERROR, as RocketMQ's does ("this
//! request only for controllerMode").

use std::sync::Arc;

use rocketpy_controller::body::{self, SyncStateSet};
use rocketpy_controller::request::field;
use rocketpy_protocol::code::response::{SUCCESS, SYSTEM_ERROR};
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult, Reply};
use serde::Serialize;

use super::client::ReplicaInfo;
use super::replicas::ReplicasManager;
use crate::state::BrokerInner;

/// This broker's replicas manager; RocketMQ's answer (its remark to the letter) on a broker
/// not in controller mode.
fn manager(broker: &BrokerInner) -> Result<Arc<ReplicasManager>, ProcessError> {
    broker
        .replicas
        .clone()
        .ok_or_else(|| ProcessError::new(SYSTEM_ERROR, "this request only for controllerMode "))
}

/// NOTIFY_BROKER_ROLE_CHANGED: the new master, its epoch and the SyncStateSet.
pub fn notify_role_changed(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let manager = manager(broker)?;
    let sss: SyncStateSet = body::decode(&req.body)
        .map_err(|e| ProcessError::new(SYSTEM_ERROR, format!("invalid SyncStateSet body: {e}")))?;
    let info = ReplicaInfo {
        master_broker_id: req
            .field_opt(field::MASTER_BROKER_ID)
            .and_then(|v| v.trim().parse().ok()),
        master_address: req
            .field_opt(field::MASTER_ADDRESS)
            .filter(|a| !a.is_empty())
            .map(str::to_owned),
        master_epoch: req.parse_field(field::MASTER_EPOCH)?,
        sync_state_set_epoch: req
            .parse_field_or(field::SYNC_STATE_SET_EPOCH, sss.sync_state_set_epoch)?,
        sync_state_set: sss.sync_state_set,
    };
    let broker = broker.clone();
    tokio::spawn(async move { manager.apply(&broker, &info).await });
    Ok(Reply::Now(Some(RemotingCommand::response_to(req, SUCCESS))))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EpochEntryBody {
    end_offset: i64,
    epoch: i32,
    start_offset: i64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EpochEntryCache {
    broker_id: i64,
    broker_name: String,
    cluster_name: String,
    epoch_list: Vec<EpochEntryBody>,
    max_offset: i64,
}

/// GET_BROKER_EPOCH_CACHE: the epoch table (the last entry open-ended, as Java's
/// `Long.MAX_VALUE`) and the CommitLog end.
pub fn epoch_cache(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let manager = manager(broker)?;
    let entries = manager.epochs().lock().cache().entries();
    let body = EpochEntryCache {
        broker_id: manager.registration_id().unwrap_or(manager.broker_id()),
        broker_name: broker.config().broker_name.clone(),
        cluster_name: broker.config().broker_cluster_name.clone(),
        epoch_list: entries
            .iter()
            .map(|e| EpochEntryBody {
                end_offset: e.end_offset,
                epoch: e.epoch,
                start_offset: e.start_offset,
            })
            .collect(),
        max_offset: broker.store.commit_log_range().1,
    };
    let body =
        serde_json::to_vec(&body).map_err(|e| ProcessError::new(SYSTEM_ERROR, e.to_string()))?;
    Ok(Reply::Now(Some(
        RemotingCommand::response_to(req, SUCCESS).with_body(body),
    )))
}
