//! LOCK_BATCH_MQ and UNLOCK_BATCH_MQ (orderly consumers lock the queues they consume).

use std::sync::Arc;

use rocketpy_protocol::body::fastjson;
use rocketpy_protocol::code::response;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult, Reply};
use serde::{Deserialize, Serialize};

use super::ok;
use crate::rebalance_lock::MessageQueue;
use crate::BrokerInner;

/// `LockBatchRequestBody` / `UnlockBatchRequestBody`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LockBody {
    consumer_group: String,
    client_id: String,
    #[serde(default)]
    mq_set: Vec<MessageQueue>,
}

/// `LockBatchResponseBody`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct LockResponse {
    #[serde(rename = "lockOKMQSet")]
    lock_ok_mq_set: Vec<MessageQueue>,
}

fn parse(req: &RemotingCommand) -> Result<LockBody, ProcessError> {
    fastjson::from_slice(&req.body)
        .map_err(|e| ProcessError::new(response::SYSTEM_ERROR, format!("invalid lock body: {e}")))
}

/// Locks what it can of the requested queues for the client; answers the queues it holds.
pub fn lock_batch(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let body = parse(req)?;
    let held = broker
        .locks
        .lock_batch(&body.consumer_group, &body.mq_set, &body.client_id);
    let json = serde_json::to_vec(&LockResponse {
        lock_ok_mq_set: held,
    })
    .map_err(|e| ProcessError::new(response::SYSTEM_ERROR, e.to_string()))?;
    Ok(Reply::Now(Some(ok(req).with_body(json))))
}

/// Releases the client's locks on the requested queues.
pub fn unlock_batch(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let body = parse(req)?;
    broker
        .locks
        .unlock_batch(&body.consumer_group, &body.mq_set, &body.client_id);
    Ok(Reply::Now(Some(ok(req))))
}
