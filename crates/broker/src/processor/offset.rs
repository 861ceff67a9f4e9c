//! QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET, GET_MAX_OFFSET, GET_MIN_OFFSET.

use std::sync::Arc;

use rocketpy_protocol::code::response;
use rocketpy_protocol::header::{
    GetMaxOffsetRequestHeader, GetMaxOffsetResponseHeader, GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader, QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader, UpdateConsumerOffsetRequestHeader,
};
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult};

use super::{ok, reply};
use crate::state::BrokerInner;

/// Answers the committed offset. With none committed, RocketMQ answers 0 when the queue still
/// starts at 0 and its first message is in memory (a young queue: a new group then reads it
/// from the start) and QUERY_NOT_FOUND otherwise (the client applies consumeFromWhere).
pub fn query_consumer_offset(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: QueryConsumerOffsetRequestHeader = req.decode_header()?;
    let (topic, queue_id) = (h.topic.as_str(), h.queue_id);
    let offset = match broker.offsets.query(&h.consumer_group, topic, queue_id) {
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
    reply(ok(req).with_header(&QueryConsumerOffsetResponseHeader { offset }))
}

/// Commits an offset.
pub fn update_consumer_offset(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: UpdateConsumerOffsetRequestHeader = req.decode_header()?;
    if h.commit_offset < 0 {
        return Err(ProcessError::new(
            response::INVALID_PARAMETER,
            format!("commitOffset {} is negative", h.commit_offset),
        ));
    }
    broker
        .offsets
        .commit(&h.consumer_group, &h.topic, h.queue_id, h.commit_offset);
    reply(ok(req))
}

/// One past the last offset of a queue.
pub fn get_max_offset(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: GetMaxOffsetRequestHeader = req.decode_header()?;
    let offset = broker.store.max_offset_in_queue(&h.topic, h.queue_id);
    reply(ok(req).with_header(&GetMaxOffsetResponseHeader { offset }))
}

/// The first readable offset of a queue.
pub fn get_min_offset(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: GetMinOffsetRequestHeader = req.decode_header()?;
    let offset = broker.store.min_offset_in_queue(&h.topic, h.queue_id);
    reply(ok(req).with_header(&GetMinOffsetResponseHeader { offset }))
}
