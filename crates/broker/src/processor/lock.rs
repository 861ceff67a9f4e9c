//! LOCK_BATCH_MQ and UNLOCK_BATCH_MQ (orderly consumers lock the queues they consume).

use std::sync::Arc;

use rocketpy_protocol::body::{fastjson, LockBatchRequestBody, LockBatchResponseBody};
use rocketpy_protocol::code::response;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult};

use super::{json_reply, ok, reply};
use crate::state::BrokerInner;

fn parse(req: &RemotingCommand) -> Result<LockBatchRequestBody, ProcessError> {
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
    json_reply(
        req,
        &LockBatchResponseBody {
            lock_ok_mq_set: held,
        },
    )
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
    reply(ok(req))
}
