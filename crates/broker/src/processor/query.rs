//! Look-ups in the store: QUERY_MESSAGE (by key), VIEW_MESSAGE_BY_ID (by CommitLog offset),
//! SEARCH_OFFSET_BY_TIMESTAMP and GET_EARLIEST_MSG_STORETIME.

use std::sync::Arc;

use rocketpy_protocol::code::response;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult, Reply};

use super::ok;
use crate::BrokerInner;

/// Most messages one QUERY_MESSAGE returns (RocketMQ's `defaultQueryMaxNum`).
pub const MAX_QUERY_NUM: i32 = 32;

/// Messages of `topic` with UNIQ_KEY or a KEYS token equal to `key`, stored in
/// `[beginTimestamp, endTimestamp]`, newest first; the body is the records concatenated.
pub fn query_message(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let topic = req.field("topic")?.to_owned();
    let key = req.field("key")?.to_owned();
    let max_num: i32 = req.parse_field("maxNum")?;
    let begin: i64 = req.parse_field("beginTimestamp")?;
    let end: i64 = req.parse_field("endTimestamp")?;
    let max_num = max_num.clamp(1, MAX_QUERY_NUM) as usize;
    let broker = broker.clone();
    let req = req.clone();
    // The index may lag the CommitLog by a moment; the store waits for it, off the I/O threads.
    Ok(Reply::Later(Box::pin(async move {
        let store = broker.store.clone();
        let found = tokio::task::spawn_blocking(move || {
            store.query_message(&topic, &key, max_num, begin, end)
        })
        .await;
        let records = match found {
            Ok(r) => r,
            Err(e) => {
                return Some(
                    ProcessError::new(response::SYSTEM_ERROR, e.to_string()).into_response(&req),
                )
            }
        };
        if records.is_empty() {
            return Some(
                ProcessError::new(
                    response::QUERY_NOT_FOUND,
                    "can not find message, maybe time range not correct",
                )
                .into_response(&req),
            );
        }
        let mut body = Vec::with_capacity(records.iter().map(|r| r.len()).sum());
        for r in &records {
            body.extend_from_slice(r);
        }
        let (_, max) = broker.store.commit_log_range();
        Some(
            ok(&req)
                .with_field(
                    "indexLastUpdateTimestamp",
                    rocketpy_store::message_store_now(),
                )
                .with_field("indexLastUpdatePhyoffset", max)
                .with_body(body),
        )
    })))
}

/// The record at a CommitLog offset (the client decodes the offset from the message id).
pub fn view_message_by_id(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let offset: i64 = req.parse_field("offset")?;
    match broker.store.look_message_by_offset(offset) {
        Some(record) => Ok(Reply::Now(Some(ok(req).with_body(record)))),
        None => Err(ProcessError::new(
            response::SYSTEM_ERROR,
            format!("can not find message by the offset, {offset}"),
        )),
    }
}

/// The first offset of a queue stored at or after `timestamp`.
pub fn search_offset_by_timestamp(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let topic = req.field("topic")?;
    let queue_id: i32 = req.parse_field("queueId")?;
    let timestamp: i64 = req.parse_field("timestamp")?;
    let offset = broker.store.offset_by_time(topic, queue_id, timestamp);
    Ok(Reply::Now(Some(ok(req).with_field("offset", offset))))
}

/// Store time of the first readable message of a queue (-1 when it has none).
pub fn earliest_msg_store_time(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let topic = req.field("topic")?;
    let queue_id: i32 = req.parse_field("queueId")?;
    let ts = broker
        .store
        .earliest_message_time_in_queue(topic, queue_id)
        .unwrap_or(-1);
    Ok(Reply::Now(Some(ok(req).with_field("timestamp", ts))))
}
