//! END_TRANSACTION: a producer's outcome for one half message. Commit appends the message to
//! its real topic and queue with the op record that resolves the half message; rollback
//! appends only the op record; unknown leaves the half message to the check. A repeated
//! outcome (a client's retry, an answer to a check that crossed a commit) changes nothing.

use std::sync::Arc;

use rocketpy_protocol::code::response;
use rocketpy_protocol::flag::message as sys_flag;
use rocketpy_protocol::header::EndTransactionRequestHeader;
use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::message::record::{self, Decoded};
use rocketpy_protocol::topic::TRANS_HALF_TOPIC;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult};

use super::{ok, reply, store_error, with_store_wait};
use crate::state::BrokerInner;
use crate::transaction::{self, messages};

fn refused(remark: impl Into<String>) -> ProcessError {
    ProcessError::new(response::SYSTEM_ERROR, remark)
}

/// Handles END_TRANSACTION (usually oneway: the answer is for callers that wait).
pub fn end_transaction(
    broker: &Arc<BrokerInner>,
    conn: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: EndTransactionRequestHeader = req.decode_header()?;
    let outcome = h.commit_or_rollback;
    match outcome {
        sys_flag::TRANSACTION_NOT_TYPE => {
            tracing::debug!(group = %h.producer_group, offset = h.tran_state_table_offset, from_check = ?h.from_transaction_check, peer = %conn.peer(), "transaction state unknown; the check will ask again");
            return reply(ok(req));
        }
        sys_flag::TRANSACTION_COMMIT_TYPE | sys_flag::TRANSACTION_ROLLBACK_TYPE => {}
        other => {
            return Err(refused(format!(
                "commitOrRollback {other} is none of 0 (unknown), 8 (commit), 12 (rollback)"
            )))
        }
    }
    let Some(bytes) = broker.store.look_message_by_offset(h.commit_log_offset) else {
        return Err(refused(format!(
            "Find prepared transaction message failed: no message at commitLogOffset {}",
            h.commit_log_offset
        )));
    };
    let half = match record::decode(&bytes, false) {
        Ok(Decoded::Message(view)) if view.topic == TRANS_HALF_TOPIC => view,
        _ => {
            return Err(refused(format!(
            "Find prepared transaction message failed: commitLogOffset {} is not a half message",
            h.commit_log_offset
        )))
        }
    };
    // The caller must be allowed to publish to the half message's real topic.
    super::check_stored_rights(
        broker,
        conn,
        req,
        half.topic,
        half.properties,
        rocketpy_acl::perm::PUB,
    )?;
    // RocketMQ's checkPrepareMessage, with its remarks.
    if properties::find(half.properties, keys::PRODUCER_GROUP) != Some(h.producer_group.as_str()) {
        return Err(refused("The producer group wrong"));
    }
    if half.queue_offset != h.tran_state_table_offset {
        return Err(refused("The transaction state table offset wrong"));
    }
    if half.physical_offset != h.commit_log_offset {
        return Err(refused("The commit log offset wrong"));
    }
    let mut msgs = Vec::with_capacity(2);
    if outcome == sys_flag::TRANSACTION_COMMIT_TYPE {
        let Some(mut visible) = messages::committed(&half) else {
            return Err(refused("the half message has no REAL_TOPIC / REAL_QID"));
        };
        if crate::timer::deliver::redirect(broker, &mut visible).is_err() {
            // A delivery time the broker no longer accepts: the message is delivered now.
            tracing::debug!(
                offset = half.queue_offset,
                "committed timer message delivered at once"
            );
        }
        msgs.push(visible);
    }
    msgs.push(messages::op(
        broker.now_millis(),
        broker.store_host,
        messages::REMOVE_TAG,
        half.queue_offset,
        None,
    ));
    let resolved = {
        let mut state = broker.transactions.lock(&broker.store, &broker.offsets);
        transaction::resolve(&broker.store, &mut state, half.queue_offset, &msgs)
            .map_err(store_error)?
    };
    match resolved {
        // Held pulls wake through the store's arriving listener, as for any send.
        Some(appended) => {
            if let (Some(metrics), Some(topic)) = (
                &broker.metrics,
                properties::find(half.properties, keys::REAL_TOPIC),
            ) {
                if outcome == sys_flag::TRANSACTION_COMMIT_TYPE {
                    metrics.on_commit(topic, half.born_timestamp, broker.now_millis());
                } else {
                    metrics.on_rollback(topic);
                }
            }
            Ok(with_store_wait(broker, ok(req), appended, true))
        }
        None => {
            tracing::debug!(offset = half.queue_offset, peer = %conn.peer(), "transaction already resolved; outcome ignored");
            reply(ok(req))
        }
    }
}
