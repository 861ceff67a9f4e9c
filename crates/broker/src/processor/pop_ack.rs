//! ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME (RocketMQ 5.x pop): a popped message is done,
//! or stays invisible for another while. The message is named by its topic (the retry topic
//! for a retried one), queue, offset and POP_CK text.

use std::sync::Arc;

use rocketpy_protocol::code::response;
use rocketpy_protocol::header::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader,
};
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult};

use super::{ok, reply, store_error, with_store_wait};
use crate::pop::extra_info::ExtraInfo;
use crate::pop::order::OrderAck;
use crate::pop::{normal_topic, CkKey};
use crate::{now_millis, BrokerInner};

/// The checks both requests share; returns the parsed POP_CK.
fn check(
    broker: &BrokerInner,
    (topic, queue_id, offset): (&str, i32, i64),
    extra_info: &str,
    offset_at_end_ok: bool,
) -> Result<ExtraInfo, ProcessError> {
    let Some(cfg) = broker.topics.get(topic) else {
        return Err(ProcessError::new(
            response::TOPIC_NOT_EXIST,
            format!("topic[{topic}] not exist, apply first please!"),
        ));
    };
    if queue_id < 0 || queue_id >= cfg.read_queue_nums {
        return Err(ProcessError::new(
            response::MESSAGE_ILLEGAL,
            format!(
                "queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{}]",
                cfg.read_queue_nums
            ),
        ));
    }
    let min = broker.store.min_offset_in_queue(topic, queue_id);
    let max = broker.store.max_offset_in_queue(topic, queue_id);
    if offset < min || offset > max || (offset == max && !offset_at_end_ok) {
        return Err(ProcessError::new(
            response::NO_MESSAGE,
            format!(
                "offset is illegal, key:{topic}@{queue_id}, commit:{offset}, store:{min},{max}"
            ),
        ));
    }
    ExtraInfo::parse(extra_info).ok_or_else(|| {
        ProcessError::new(
            response::INVALID_PARAMETER,
            format!("extraInfo is illegal: {extra_info:?}"),
        )
    })
}

/// Handles ACK_MESSAGE. An ack of a message revived already (or acked twice) succeeds and
/// changes nothing.
pub fn ack_message(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: AckMessageRequestHeader = req.decode_header()?;
    let ei = check(
        broker,
        (&h.topic, h.queue_id, h.offset),
        &h.extra_info,
        true,
    )?;
    let group = h.consumer_group.as_str();
    if ei.is_order() {
        return ack_orderly(broker, req, &h, &ei);
    }
    let key = CkKey {
        topic: h.topic.clone(),
        group: group.to_owned(),
        queue_id: h.queue_id,
        start: ei.start_offset,
        pop_time: ei.pop_time,
    };
    match broker
        .pop
        .ack(broker, &key, h.offset)
        .map_err(store_error)?
    {
        Some(appended) => Ok(with_store_wait(broker, ok(req), appended, true)),
        None => reply(ok(req)),
    }
}

/// A FIFO ack: the group's offset moves to the first message of the pop not acked yet, and
/// the queue is released for the next pop once all are.
fn ack_orderly(
    broker: &BrokerInner,
    req: &RemotingCommand,
    h: &AckMessageRequestHeader,
    ei: &ExtraInfo,
) -> ProcessResult {
    let group = h.consumer_group.as_str();
    let committed = broker
        .offsets
        .query(group, &h.topic, h.queue_id)
        .unwrap_or(-1);
    if h.offset < committed {
        return reply(ok(req)); // acked before
    }
    match broker
        .pop
        .order
        .ack(&h.topic, group, h.queue_id, h.offset, ei.pop_time)
    {
        OrderAck::Commit(next) => {
            if next > committed {
                broker.offsets.commit(group, &h.topic, h.queue_id, next);
            }
            broker
                .pop
                .wake(normal_topic(&h.topic, group).unwrap_or(&h.topic));
            reply(ok(req))
        }
        OrderAck::Stale => reply(ok(req)),
        OrderAck::Unknown => Err(ProcessError::new(
            response::MESSAGE_ILLEGAL,
            format!(
                "the offset {} of {}@{} was not popped by {group}",
                h.offset, h.topic, h.queue_id
            ),
        )),
    }
}

/// Handles CHANGE_MESSAGE_INVISIBLETIME: the message gets a checkpoint of its own with the
/// new invisible time (from now) and its old one is acked; the answer's pop time and
/// invisible time make its new POP_CK.
pub fn change_invisible_time(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: ChangeInvisibleTimeRequestHeader = req.decode_header()?;
    let ei = check(
        broker,
        (&h.topic, h.queue_id, h.offset),
        &h.extra_info,
        false,
    )?;
    let group = h.consumer_group.as_str();
    let now = now_millis();
    if ei.is_order() {
        let (pop_time, invisible_time) = broker
            .pop
            .order
            .change_invisible(
                (&h.topic, group, h.queue_id),
                h.offset,
                ei.pop_time,
                now + h.invisible_time,
            )
            .unwrap_or((ei.pop_time, ei.invisible_time));
        let header = ChangeInvisibleTimeResponseHeader {
            pop_time,
            invisible_time,
            revive_qid: ei.revive_qid,
        };
        return reply(ok(req).with_header(&header));
    }
    let new_key = CkKey {
        topic: h.topic.clone(),
        group: group.to_owned(),
        queue_id: h.queue_id,
        start: h.offset,
        pop_time: now,
    };
    let appended = broker
        .pop
        .checkpoint(
            broker,
            new_key,
            vec![h.offset],
            h.invisible_time,
            ei.revive_qid,
        )
        .map_err(store_error)?;
    let old = CkKey {
        topic: h.topic.clone(),
        group: group.to_owned(),
        queue_id: h.queue_id,
        start: ei.start_offset,
        pop_time: ei.pop_time,
    };
    let acked = broker
        .pop
        .ack(broker, &old, h.offset)
        .map_err(store_error)?;
    let header = ChangeInvisibleTimeResponseHeader {
        pop_time: now,
        invisible_time: h.invisible_time,
        revive_qid: ei.revive_qid,
    };
    Ok(with_store_wait(
        broker,
        ok(req).with_header(&header),
        acked.unwrap_or(appended),
        true,
    ))
}
