//! QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET, GET_MAX_OFFSET, GET_MIN_OFFSET.

use std::sync::Arc;

use rocketpy_protocol::code::response;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult, Reply};

use super::ok;
use crate::BrokerInner;

/// Answers the committed offset. With none committed, RocketMQ answers 0 when the queue still
/// starts at 0 and its first message is in memory (a young queue: a new group then reads it
/// from the start) and QUERY_NOT_FOUND otherwise (the client applies consumeFromWhere).
pub fn query_consumer_offset(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let group = req.field("consumerGroup")?;
    let topic = req.field("topic")?;
    let queue_id: i32 = req.parse_field("queueId")?;
    let offset = match broker.offsets.query(group, topic, queue_id) {
        Some(offset) => offset,
        None => {
            let min = broker.store.min_offset_in_queue(topic, queue_id);
            if min <= 0
                && !broker
                    .store
                    .check_in_disk_by_consume_offset(topic, queue_id, 0)
            {
                0
            } else {
                return Err(ProcessError::new(
                    response::QUERY_NOT_FOUND,
                    "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
                ));
            }
        }
    };
    Ok(Reply::Now(Some(ok(req).with_field("offset", offset))))
}

/// Commits an offset.
pub fn update_consumer_offset(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let group = req.field("consumerGroup")?;
    let topic = req.field("topic")?;
    let queue_id: i32 = req.parse_field("queueId")?;
    let offset: i64 = req.parse_field("commitOffset")?;
    if offset < 0 {
        return Err(ProcessError::new(
            response::INVALID_PARAMETER,
            format!("commitOffset {offset} is negative"),
        ));
    }
    broker.offsets.commit(group, topic, queue_id, offset);
    Ok(Reply::Now(Some(ok(req))))
}

/// Answers `offset` = `f(store, topic, queueId)` for a request naming a queue.
fn answer_queue_offset(
    broker: &Arc<BrokerInner>,
    req: &RemotingCommand,
    f: fn(&rocketpy_store::MessageStore, &str, i32) -> i64,
) -> ProcessResult {
    let topic = req.field("topic")?;
    let queue_id: i32 = req.parse_field("queueId")?;
    let offset = f(&broker.store, topic, queue_id);
    Ok(Reply::Now(Some(ok(req).with_field("offset", offset))))
}

/// One past the last offset of a queue.
pub fn get_max_offset(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    answer_queue_offset(
        broker,
        req,
        rocketpy_store::MessageStore::max_offset_in_queue,
    )
}

/// The first readable offset of a queue.
pub fn get_min_offset(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    answer_queue_offset(
        broker,
        req,
        rocketpy_store::MessageStore::min_offset_in_queue,
    )
}
