//! CONSUMER_SEND_MSG_BACK: a consumer gives a message back after failing to consume it. The
//! broker stores a copy in the group's retry topic with a growing delay (level 3 +
//! reconsumeTimes, or the level asked for), keeping the original topic (RETRY_TOPIC) and id
//! (ORIGIN_MESSAGE_ID) in its properties; after maxReconsumeTimes it goes to the group's
//! dead-letter topic instead (RocketMQ's `consumerSendMsgBack`).

use std::sync::Arc;

use rocketpy_protocol::code::response;
use rocketpy_protocol::header::ConsumerSendMsgBackRequestHeader;
use rocketpy_protocol::message::java_hash;
use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::message::record::{self, Decoded, MessageToStore};
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult};

use super::{
    check_broker_writeable, check_stored_rights, dlq_topic, ok, reply, retry_topic, spread_queue,
    store_error, with_store_wait,
};
use crate::state::BrokerInner;

/// Handles CONSUMER_SEND_MSG_BACK.
pub fn consumer_send_msg_back(
    broker: &Arc<BrokerInner>,
    conn: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: ConsumerSendMsgBackRequestHeader = req.decode_header()?;
    let (offset, group) = (h.offset, h.group.as_str());
    let mut delay_level = h.delay_level;
    let origin_msg_id = h.origin_msg_id.clone().unwrap_or_default();
    check_broker_writeable(broker)?;
    let Some(cfg) = broker.groups.find_or_create(group) else {
        return Err(ProcessError::new(
            response::SUBSCRIPTION_GROUP_NOT_EXIST,
            format!("subscription group not exist, {group}"),
        ));
    };
    if cfg.retry_queue_nums <= 0 {
        return reply(ok(req)); // the group does not retry
    }
    let Some(record_bytes) = broker.store.look_message_by_offset(offset) else {
        return Err(ProcessError::new(
            response::SYSTEM_ERROR,
            format!("look message by offset failed, {offset}"),
        ));
    };
    let Ok(Decoded::Message(original)) = record::decode(&record_bytes, false) else {
        return Err(ProcessError::new(
            response::SYSTEM_ERROR,
            format!("the record at offset {offset} is unreadable"),
        ));
    };
    // Only a message of a topic the caller may consume is copied into its group's retry topic.
    check_stored_rights(
        broker,
        conn,
        req,
        original.topic,
        original.properties,
        rocketpy_acl::perm::SUB,
    )?;
    let max = h.max_reconsume_times.unwrap_or(cfg.retry_max_times);
    let mut props: Vec<(String, String)> = properties::pairs(original.properties)
        .filter(|(k, _)| *k != keys::DELAY_TIME_LEVEL && *k != keys::WAIT_STORE_MSG_OK)
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let set = |props: &mut Vec<(String, String)>, k: &str, v: String| match props
        .iter_mut()
        .find(|(pk, _)| pk == k)
    {
        Some(p) => p.1 = v,
        None => props.push((k.to_owned(), v)),
    };
    if properties::find(original.properties, keys::RETRY_TOPIC).is_none() {
        set(&mut props, keys::RETRY_TOPIC, original.topic.to_owned());
    }
    let origin = properties::find(original.properties, keys::ORIGIN_MESSAGE_ID)
        .map(str::to_owned)
        .unwrap_or_else(|| {
            if origin_msg_id.is_empty() {
                record::offset_msg_id(&original.store_host, original.physical_offset)
            } else {
                origin_msg_id.clone()
            }
        });
    set(&mut props, keys::ORIGIN_MESSAGE_ID, origin);
    let (topic, queue_id) = if original.reconsume_times >= max || delay_level < 0 {
        let dlq = dlq_topic(broker, group)?;
        if let Some(metrics) = &broker.metrics {
            metrics.on_dlq(group, original.topic);
        }
        (dlq, 0)
    } else {
        if delay_level == 0 {
            delay_level = 3 + original.reconsume_times;
        }
        set(&mut props, keys::DELAY_TIME_LEVEL, delay_level.to_string());
        let (topic, queues) = retry_topic(broker, group)?;
        (topic, spread_queue(queues))
    };
    let properties = properties::encode(props.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let msg = MessageToStore {
        tags_code: java_hash::tags_code(properties::find(&properties, keys::TAGS)),
        topic,
        queue_id,
        flag: original.flag,
        body: bytes::Bytes::copy_from_slice(original.body),
        properties,
        sys_flag: original.sys_flag,
        born_timestamp: original.born_timestamp,
        born_host: original.born_host,
        store_host: broker.store_host,
        reconsume_times: original.reconsume_times + 1,
        prepared_transaction_offset: 0,
    };
    tracing::debug!(group, peer = %conn.peer(), topic = %msg.topic, reconsume = msg.reconsume_times, "message sent back");
    let appended = broker
        .store
        .put_messages_nowait(std::slice::from_ref(&msg))
        .map_err(store_error)?;
    // Acknowledged like a send: under SYNC_FLUSH only once the retry copy is on disk, or the
    // consumer moves on from a message the broker may still lose.
    Ok(with_store_wait(broker, ok(req), appended, true))
}
