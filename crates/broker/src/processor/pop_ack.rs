//! ACK_MESSAGE, BATCH_ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME (RocketMQ 5.x pop): a popped message is done,
//! or stays invisible for another while. The message is named by its topic (the retry topic
//! for a retried one), queue, offset and POP_CK text.

use std::sync::Arc;

use rocketpy_protocol::body::batch_ack::BatchAckMessageRequestBody;
use rocketpy_protocol::body::fastjson;
use rocketpy_protocol::code::response;
use rocketpy_protocol::header::{
    AckMessageRequestHeader, ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader,
};
use rocketpy_protocol::topic::pop_real_topic;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult};

use super::{ok, reply, store_error, with_store_wait};
use crate::pop::extra_info::{ExtraInfo, ORDER_REVIVE_QID};
use crate::pop::order::OrderAck;
use crate::pop::{normal_topic, CkKey};
use crate::state::BrokerInner;

/// The checks both requests share; returns the parsed POP_CK.
fn check(
    broker: &BrokerInner,
    (topic, queue_id, offset): (&str, i32, i64),
    extra_info: &str,
    offset_at_end_ok: bool,
) -> Result<ExtraInfo, ProcessError> {
    let Some(cfg) = broker.topics.read_view(topic) else {
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
        ack_orderly(broker, (&h.topic, group, h.queue_id), h.offset, ei.pop_time)?;
        return reply(ok(req));
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

/// Handles BATCH_ACK_MESSAGE: each entry names one pop (checkpoint) and its acked offsets
/// as bits over `offset - startOffset`; each pop's acks become one revive-log record. As in
/// RocketMQ, entries for unknown queues and offsets outside a queue are skipped, and the
/// answer is SUCCESS (NO_MESSAGE for an empty body).
pub fn batch_ack_message(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let body: BatchAckMessageRequestBody = if req.body.is_empty() {
        BatchAckMessageRequestBody::default()
    } else {
        fastjson::from_slice(&req.body).map_err(|e| {
            ProcessError::new(
                response::INVALID_PARAMETER,
                format!("the batch ack's body is not readable: {e}"),
            )
        })?
    };
    if body.acks.is_empty() {
        return reply(RemotingCommand::response_to(req, response::NO_MESSAGE));
    }
    let mut last = None;
    for a in &body.acks {
        let Some(topic) = pop_real_topic(&a.topic, &a.consumer_group, &a.retry) else {
            continue; // an unknown retry flag: RocketMQ's parse fails on it
        };
        if !broker.topics.exists(&topic) {
            continue;
        }
        let min = broker.store.min_offset_in_queue(&topic, a.queue_id);
        let max = broker.store.max_offset_in_queue(&topic, a.queue_id);
        let offsets: Vec<i64> = a
            .bit_set
            .indexes()
            .map(|i| a.start_offset.saturating_add(i as i64))
            .filter(|o| (min..=max).contains(o))
            .collect();
        let group = a.consumer_group.as_str();
        if a.revive_queue_id == ORDER_REVIVE_QID {
            for offset in offsets {
                // A FIFO offset this group did not pop is skipped, as RocketMQ does.
                let _ = ack_orderly(broker, (&topic, group, a.queue_id), offset, a.pop_time);
            }
            continue;
        }
        let key = CkKey {
            topic,
            group: group.to_owned(),
            queue_id: a.queue_id,
            start: a.start_offset,
            pop_time: a.pop_time,
        };
        if let Some(appended) = broker
            .pop
            .ack_many(broker, &key, &offsets)
            .map_err(store_error)?
        {
            last = Some(appended);
        }
    }
    match last {
        Some(appended) => Ok(with_store_wait(broker, ok(req), appended, true)),
        None => reply(ok(req)),
    }
}

/// A FIFO ack: the group's offset moves to the first message of the pop not acked yet, and
/// the queue is released for the next pop once all are.
fn ack_orderly(
    broker: &BrokerInner,
    (topic, group, queue_id): (&str, &str, i32),
    offset: i64,
    pop_time: i64,
) -> Result<(), ProcessError> {
    let committed = broker.offsets.query(group, topic, queue_id).unwrap_or(-1);
    if offset < committed {
        return Ok(()); // acked before
    }
    match broker
        .pop
        .order
        .ack(topic, group, queue_id, offset, pop_time)
    {
        OrderAck::Commit(next) => {
            if next > committed {
                broker.offsets.commit(group, topic, queue_id, next);
            }
            broker.pop.wake(normal_topic(topic, group).unwrap_or(topic));
            Ok(())
        }
        OrderAck::Stale => Ok(()),
        OrderAck::Unknown => Err(ProcessError::new(
            response::MESSAGE_ILLEGAL,
            format!("the offset {offset} of {topic}@{queue_id} was not popped by {group}"),
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
    let now = broker.now_millis();
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
