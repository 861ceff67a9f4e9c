//! SendMessage: 5.x messages become one SEND_MESSAGE_V2 (one message) or SEND_BATCH_MESSAGE
//! to a queue the proxy picks — by the message group for a FIFO message (the same group,
//! the same queue), round robin otherwise — as RocketMQ's proxy does (it ignores the queue
//! id a client names: queues are numbered per broker).

use rocketpy_protocol::code::{request, response};
use rocketpy_protocol::header::{SendMessageRequestHeader, SendMessageResponseHeader};
use rocketpy_protocol::message::batch::encode_batch_item;
use rocketpy_protocol::message::java_hash::java_string_hash;
use rocketpy_protocol::message::record::parse_offset_msg_id;
use rocketpy_protocol::topic::AUTO_CREATE_TOPIC_KEY_TOPIC;

use crate::context::Context;
use crate::convert::{outgoing, Outgoing};
use crate::pb::{self, Code};
use crate::routes::BrokerQueue;
use crate::state::ProxyInner;
use crate::status::{ok, status, ProxyError};
use crate::transaction::TransactionId;
use rocketpy_protocol::message::properties::{self as props, keys};
use rocketpy_protocol::topic_attributes::TopicMessageType;

/// Queues a topic created by a send gets (RocketMQ proxy's `defaultTopicQueueNums`).
const DEFAULT_TOPIC_QUEUES: i32 = 4;

/// The queue of a message group: a stable pick among the topic's writable queues.
fn queue_of_group(queues: &[BrokerQueue], group: &str) -> usize {
    (java_string_hash(group) as u32 as usize) % queues.len()
}

/// Handles SendMessage.
pub async fn send_message(
    proxy: &ProxyInner,
    ctx: &Context,
    req: pb::SendMessageRequest,
) -> pb::SendMessageResponse {
    match send(proxy, ctx, req).await {
        Ok(entries) => pb::SendMessageResponse {
            status: Some(ok()),
            entries,
        },
        Err(e) => pb::SendMessageResponse {
            status: Some(e.status()),
            entries: Vec::new(),
        },
    }
}

/// A message's type by its properties (RocketMQ's `TopicMessageType.parseFromMessageProperty`).
fn message_type_of(properties: &str) -> TopicMessageType {
    let has = |k| props::find(properties, k).is_some();
    if props::find(properties, keys::TRANSACTION_PREPARED) == Some("true") {
        TopicMessageType::Transaction
    } else if has(keys::DELAY_TIME_LEVEL)
        || has(keys::TIMER_DELIVER_MS)
        || has(keys::TIMER_DELAY_SEC)
        || has(keys::TIMER_DELAY_MS)
    {
        TopicMessageType::Delay
    } else if has(keys::SHARDING_KEY) {
        TopicMessageType::Fifo
    } else {
        TopicMessageType::Normal
    }
}

/// Refuses a message its topic's type does not take, as RocketMQ 5's proxy does
/// (MESSAGE_PROPERTY_CONFLICT_WITH_TYPE); a topic without a type takes every type.
fn check_message_type(
    topic: &str,
    expected: Option<TopicMessageType>,
    properties: &str,
) -> Result<(), ProxyError> {
    let Some(expected) = expected else {
        return Ok(());
    };
    let actual = message_type_of(properties);
    if expected.accepts(actual) {
        return Ok(());
    }
    Err(ProxyError::new(
        Code::MessagePropertyConflictWithType,
        format!(
            "TopicMessageType validate failed, the expected type is {}, but actual type is {} (topic {topic})",
            expected.name(),
            actual.name()
        ),
    ))
}

async fn send(
    proxy: &ProxyInner,
    ctx: &Context,
    req: pb::SendMessageRequest,
) -> Result<Vec<pb::SendResultEntry>, ProxyError> {
    let now = proxy.now_millis();
    let msgs: Vec<Outgoing> = req
        .messages
        .iter()
        .map(|m| outgoing(m, ctx.peer, now, proxy.config.max_delay_ms))
        .collect::<Result<_, _>>()?;
    let Some(first) = msgs.first() else {
        return Err(ProxyError::new(Code::BadRequest, "no message to send"));
    };
    if msgs.iter().any(|m| m.topic != first.topic) {
        return Err(ProxyError::new(
            Code::BadRequest,
            "the messages of one request must share a topic",
        ));
    }
    if msgs.len() > 1 && msgs.iter().any(|m| m.transactional) {
        return Err(ProxyError::new(
            Code::BadRequest,
            "transactional messages are sent one per request",
        ));
    }
    let topic = first.topic.clone();
    let route = proxy.routes.route(&topic).await?;
    check_message_type(&topic, route.message_type, &first.properties)?;
    let queues = route.write_queues();
    if queues.is_empty() {
        return Err(ProxyError::new(
            Code::Forbidden,
            format!("topic {topic} has no writable queue"),
        ));
    }
    let pick = match (&first.message_group, msgs.len()) {
        (Some(group), 1) => queue_of_group(&queues, group),
        _ => proxy.next_index() % queues.len(),
    };
    let queue = &queues[pick];
    let header = SendMessageRequestHeader {
        producer_group: topic.clone(),
        topic: topic.clone(),
        default_topic: AUTO_CREATE_TOPIC_KEY_TOPIC.to_owned(),
        default_topic_queue_nums: DEFAULT_TOPIC_QUEUES,
        queue_id: queue.queue_id,
        sys_flag: first.sys_flag,
        born_timestamp: first.born_timestamp,
        flag: 0,
        properties: (msgs.len() == 1).then(|| first.properties.clone()),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        max_reconsume_times: None,
        batch: Some(msgs.len() > 1),
        broker_name: Some(queue.broker_name.clone()),
    };
    let request = if msgs.len() == 1 {
        crate::request::remoting_request(request::SEND_MESSAGE_V2)
            .with_header(&header)
            .with_body(first.body.clone())
    } else {
        let mut body = Vec::new();
        for m in &msgs {
            encode_batch_item(&mut body, 0, &m.body, &m.properties)
                .map_err(|e| ProxyError::new(Code::BadRequest, e))?;
        }
        crate::request::remoting_request(request::SEND_BATCH_MESSAGE)
            .with_header(&header)
            .with_body(body)
    };
    let resp = proxy
        .remoting
        .invoke(&queue.addr, request, proxy.config.remoting_timeout)
        .await?;
    let code = match resp.code {
        response::SUCCESS => Code::Ok,
        response::FLUSH_DISK_TIMEOUT
        | response::FLUSH_SLAVE_TIMEOUT
        | response::SLAVE_NOT_AVAILABLE => crate::status::remoting_code(resp.code),
        other => return Err(ProxyError::from_remoting(other, resp.remark.as_deref())),
    };
    let h: SendMessageResponseHeader = resp
        .decode_header()
        .map_err(|e| ProxyError::new(Code::InternalServerError, e.to_string()))?;
    let offset_ids: Vec<&str> = h.msg_id.split(',').collect();
    let entry_status = if code == Code::Ok {
        ok()
    } else {
        status(code, resp.remark.clone().unwrap_or_default())
    };
    Ok(msgs
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let transaction_id = if m.transactional {
                let commit_log_offset = offset_ids
                    .get(i)
                    .and_then(|id| parse_offset_msg_id(id).ok())
                    .map_or(0, |(_, o)| o);
                TransactionId {
                    broker_addr: queue.addr.clone(),
                    commit_log_offset,
                    queue_offset: h.queue_offset + i as i64,
                }
                .to_string()
            } else {
                String::new()
            };
            pb::SendResultEntry {
                status: Some(entry_status.clone()),
                message_id: m.message_id.clone(),
                transaction_id,
                offset: h.queue_offset + i as i64,
                recall_handle: String::new(),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_types_by_properties() {
        let p = |pairs: &[(&str, &str)]| props::encode(pairs.iter().copied());
        assert_eq!(message_type_of(&p(&[])), TopicMessageType::Normal);
        assert_eq!(
            message_type_of(&p(&[(keys::SHARDING_KEY, "g")])),
            TopicMessageType::Fifo
        );
        assert_eq!(
            message_type_of(&p(&[(keys::TIMER_DELIVER_MS, "1")])),
            TopicMessageType::Delay
        );
        let tx = p(&[
            (keys::TRANSACTION_PREPARED, "true"),
            (keys::SHARDING_KEY, "g"),
        ]);
        assert_eq!(message_type_of(&tx), TopicMessageType::Transaction);
        assert!(
            check_message_type("T", None, &tx).is_ok(),
            "no type: every type"
        );
        assert!(check_message_type("T", Some(TopicMessageType::Mixed), &tx).is_ok());
        let err = check_message_type("T", Some(TopicMessageType::Fifo), &p(&[])).unwrap_err();
        assert_eq!(err.code, Code::MessagePropertyConflictWithType);
        assert!(err
            .message
            .contains("expected type is FIFO, but actual type is NORMAL"));
    }
}
