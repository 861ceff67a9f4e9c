//! Look-ups in the store: QUERY_MESSAGE (by key), VIEW_MESSAGE_BY_ID (by CommitLog offset),
//! SEARCH_OFFSET_BY_TIMESTAMP and GET_EARLIEST_MSG_STORETIME.

use std::sync::Arc;

use rocketpy_acl::perm::SUB;
use rocketpy_protocol::code::response;
use rocketpy_protocol::header::{
    GetEarliestMsgStoretimeRequestHeader, GetEarliestMsgStoretimeResponseHeader,
    QueryMessageRequestHeader, QueryMessageResponseHeader, SearchOffsetRequestHeader,
    SearchOffsetResponseHeader, ViewMessageRequestHeader,
};
use rocketpy_protocol::message::record::{self, Decoded};
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult, Reply};

use super::{check_stored_rights, ok, reply};
use crate::state::BrokerInner;

/// Most messages one QUERY_MESSAGE returns (RocketMQ's `defaultQueryMaxNum`).
pub const MAX_QUERY_NUM: i32 = 32;

/// Messages of `topic` with UNIQ_KEY or a KEYS token equal to `key`, stored in
/// `[beginTimestamp, endTimestamp]`, newest first; the body is the records concatenated.
pub fn query_message(
    broker: &Arc<BrokerInner>,
    conn: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: QueryMessageRequestHeader = req.decode_header()?;
    let max_num = h.max_num.clamp(1, MAX_QUERY_NUM) as usize;
    let broker = broker.clone();
    let conn = conn.clone();
    let req = req.clone();
    // The index may lag the CommitLog by a moment; the store waits for it, off the I/O threads.
    Ok(Reply::Later(Box::pin(async move {
        // Up to 32 whole messages: read only when the connection has room for them.
        let _room = conn
            .reserve(
                broker
                    .settings
                    .store
                    .max_transfer_bytes_on_message_in_memory,
            )
            .await;
        let store = broker.store.clone();
        let found = tokio::task::spawn_blocking(move || {
            store.query_message(
                &h.topic,
                &h.key,
                max_num,
                h.begin_timestamp,
                h.end_timestamp,
            )
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
        let header = QueryMessageResponseHeader {
            index_last_update_timestamp: rocketpy_protocol::clock::now_millis(),
            index_last_update_phyoffset: max,
        };
        Some(ok(&req).with_header(&header).with_body(body))
    })))
}

/// The record at a CommitLog offset (the client decodes the offset from the message id).
pub fn view_message_by_id(
    broker: &Arc<BrokerInner>,
    conn: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: ViewMessageRequestHeader = req.decode_header()?;
    let not_found = || {
        ProcessError::new(
            response::SYSTEM_ERROR,
            format!("can not find message by the offset, {}", h.offset),
        )
    };
    let record = broker
        .store
        .look_message_by_offset(h.offset)
        .ok_or_else(not_found)?;
    // The ACL needs SUB on the topics of the message found, whatever `topic` the caller named.
    if broker.acl.is_some() {
        let Ok(Decoded::Message(view)) = record::decode(&record, false) else {
            return Err(not_found());
        };
        check_stored_rights(broker, conn, req, view.topic, view.properties, SUB)?;
    }
    reply(ok(req).with_body(record))
}

/// The first offset of a queue stored at or after `timestamp`.
pub fn search_offset_by_timestamp(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: SearchOffsetRequestHeader = req.decode_header()?;
    let offset = broker
        .store
        .offset_by_time(&h.topic, h.queue_id, h.timestamp);
    reply(ok(req).with_header(&SearchOffsetResponseHeader { offset }))
}

/// Store time of the first readable message of a queue (-1 when it has none).
pub fn earliest_msg_store_time(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: GetEarliestMsgStoretimeRequestHeader = req.decode_header()?;
    let timestamp = broker
        .store
        .earliest_message_time_in_queue(&h.topic, h.queue_id)
        .unwrap_or(-1);
    reply(ok(req).with_header(&GetEarliestMsgStoretimeResponseHeader { timestamp }))
}
