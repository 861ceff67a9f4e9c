//! INVOKE_BROKER_TO_RESET_OFFSET (mqadmin resetOffsetByTime): the broker works out each
//! queue's offset at the time and tells every online member of the group to move there with
//! RESET_CONSUMER_CLIENT_OFFSET (oneway), as RocketMQ's `Broker2Client.resetOffset` does. The
//! members then commit the new offsets themselves. A group with no member online gets
//! CONSUMER_NOT_ONLINE, on which mqadmin falls back to committing offsets itself.

use std::collections::BTreeMap;
use std::sync::Arc;

use rocketpy_protocol::body::admin::reset_offset_body;
use rocketpy_protocol::body::MessageQueue;
use rocketpy_protocol::code::{request, response};
use rocketpy_protocol::header::ResetOffsetRequestHeader;
use rocketpy_protocol::{LanguageCode, RemotingCommand};
use rocketpy_remoting::{Connection, ProcessError, ProcessResult};

use super::{ok, reply};
use crate::state::BrokerInner;

/// The offsets of the group's queues at `timestamp` (-1: the end), never moving a queue
/// forward unless `force` (RocketMQ's rule).
fn offsets_at(
    broker: &BrokerInner,
    h: &ResetOffsetRequestHeader,
) -> Result<BTreeMap<MessageQueue, i64>, ProcessError> {
    let Some(cfg) = broker.topics.get(&h.topic) else {
        return Err(ProcessError::new(
            response::TOPIC_NOT_EXIST,
            format!(
                "[reset-offset] reset offset failed, no topic in this broker. topic={}",
                h.topic
            ),
        ));
    };
    let mut table = BTreeMap::new();
    for q in 0..cfg.write_queue_nums.max(0) {
        let Some(committed) = broker.offsets.query(&h.group, &h.topic, q) else {
            return Err(ProcessError::new(
                response::SYSTEM_ERROR,
                format!("THe consumer group <{}> not exist", h.group),
            ));
        };
        let at = if h.timestamp == -1 {
            broker.store.max_offset_in_queue(&h.topic, q)
        } else {
            broker.store.offset_by_time(&h.topic, q, h.timestamp)
        }
        .max(0);
        let offset = if h.is_force || at < committed {
            at
        } else {
            committed
        };
        let mq = MessageQueue {
            topic: h.topic.clone(),
            broker_name: broker.config().broker_name.clone(),
            queue_id: q,
        };
        table.insert(mq, offset);
    }
    Ok(table)
}

/// The body for C++ clients (`ResetOffsetBodyForC`): a list of queues with their offsets,
/// which RocketMQ sends when the admin request comes from a C++ client.
fn body_for_c(offsets: &BTreeMap<MessageQueue, i64>) -> Vec<u8> {
    let list: Vec<_> = offsets
        .iter()
        .map(|(mq, offset)| {
            serde_json::json!({
                "topic": mq.topic, "brokerName": mq.broker_name,
                "queueId": mq.queue_id, "offset": offset,
            })
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({ "offsetTable": list })).unwrap_or_default()
}

/// Handles INVOKE_BROKER_TO_RESET_OFFSET.
pub fn invoke_reset_offset(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: ResetOffsetRequestHeader = req.decode_header()?;
    let offsets = offsets_at(broker, &h)?;
    let members = broker.consumers.member_connections(&h.group);
    if members.is_empty() {
        return Err(ProcessError::new(
            response::CONSUMER_NOT_ONLINE,
            format!(
                "Consumer not online, so can not reset offset, Group: {} Topic: {} Timestamp: {}",
                h.group, h.topic, h.timestamp
            ),
        ));
    }
    let body = reset_offset_body(&offsets);
    let client_body = if req.language == LanguageCode::Cpp {
        body_for_c(&offsets)
    } else {
        body.clone()
    };
    let header = ResetOffsetRequestHeader {
        queue_id: None,
        offset: None,
        ..h
    };
    for conn in members {
        let mut notice = RemotingCommand::request(request::RESET_CONSUMER_CLIENT_OFFSET)
            .with_header(&header)
            .with_body(client_body.clone());
        notice.mark_oneway();
        tokio::spawn(async move {
            if let Err(e) = conn.send(&notice).await {
                tracing::warn!(peer = %conn.peer(), error = %e, "RESET_CONSUMER_CLIENT_OFFSET not sent");
            }
        });
    }
    tracing::info!(topic = %header.topic, group = %header.group, timestamp = header.timestamp, "offsets reset");
    reply(ok(req).with_body(body))
}
