//! The transaction check (RocketMQ's `TransactionalMessageCheckService`): every
//! `transactionCheckInterval` it walks the half messages from its progress, skips those
//! resolved or younger than `transactionTimeOut` (or their `CHECK_IMMUNITY_TIME_IN_SECONDS`),
//! gives up those checked `transactionCheckMax` times (a copy goes to
//! TRANS_CHECK_MAX_TIME_TOPIC), and asks a live producer of each other one's group with
//! CHECK_TRANSACTION_STATE. The producer answers with END_TRANSACTION.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rocketpy_protocol::code::request;
use rocketpy_protocol::header::CheckTransactionStateRequestHeader;
use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::message::record::{self, Decoded, Placement, RecordView};
use rocketpy_protocol::topic::{TRANS_CHECK_MAX_TIME_TOPIC, TRANS_HALF_TOPIC};
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::Connection;

use super::{messages, resolve, State};
use crate::state::BrokerInner;
use rocketpy_remoting::lifecycle::{every, stopped, Stop};

/// Half messages looked at per round at most: a round holds the transactions' lock.
const MAX_PER_ROUND: usize = 10_000;

/// One CHECK_TRANSACTION_STATE to send.
pub struct Check {
    pub conn: Arc<Connection>,
    pub request: RemotingCommand,
}

/// Runs rounds forever, every `transactionCheckInterval`.
pub async fn check_loop(broker: Arc<BrokerInner>, mut stop: Stop) {
    let period = Duration::from_millis(broker.config().transaction_check_interval.max(100));
    // The first round one period after start: producers reconnect first.
    tokio::select! {
        biased;
        _ = stopped(&mut stop) => return,
        _ = tokio::time::sleep(period) => {}
    }
    every(period, stop, || check_round(broker.clone())).await;
}

/// One round of [`check_loop`]: resolves off the I/O threads, then sends the checks.
async fn check_round(broker: Arc<BrokerInner>) {
    let checks = match tokio::task::spawn_blocking(move || round(&broker)).await {
        Ok(checks) => checks,
        Err(e) => {
            tracing::error!(error = %e, "transaction check round failed");
            return;
        }
    };
    for Check { conn, mut request } in checks {
        request.mark_oneway();
        if let Err(e) = conn.send(&request).await {
            tracing::debug!(peer = %conn.peer(), error = %e, "CHECK_TRANSACTION_STATE not sent");
        }
    }
}

/// One round: resolves what it can, returns the checks to send. Only a master checks (its
/// resolutions are writes; a slave's half messages are its master's).
pub fn round(broker: &BrokerInner) -> Vec<Check> {
    let store = &broker.store;
    if !store.role().is_master() {
        return Vec::new();
    }
    let mut state = broker.transactions.lock(&broker.store, &broker.offsets);
    state.read_ops(store);
    let min = store.min_offset_in_queue(TRANS_HALF_TOPIC, 0);
    let max = store.max_offset_in_queue(TRANS_HALF_TOPIC, 0);
    // Half messages removed with their files are gone with their transactions.
    state.advance(min);
    let mut checks = Vec::new();
    let mut first_open = None;
    let mut offset = state.half_progress;
    let mut looked = 0;
    while offset < max && looked < MAX_PER_ROUND {
        let here = offset;
        offset += 1;
        if state.is_resolved(here) {
            continue;
        }
        looked += 1;
        let got = store.get_message_unconfirmed(TRANS_HALF_TOPIC, 0, here, 1);
        let Some(bytes) = got.messages.first() else {
            continue;
        };
        let Ok(Decoded::Message(half)) = record::decode(bytes, false) else {
            tracing::warn!(offset = here, "unreadable half message skipped");
            continue;
        };
        match look_at(broker, &mut state, &half) {
            Ok(Some(check)) => checks.push(check),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(offset = here, error = %e, "transaction check stopped");
                first_open.get_or_insert(here);
                break;
            }
        }
        if !state.is_resolved(here) {
            first_open.get_or_insert(here);
        }
    }
    let progress = first_open.unwrap_or(offset);
    state.advance(progress);
    state.save(&broker.offsets);
    checks
}

/// Whether a half message is due for a check (the broker's clock: store times, not the
/// producers' born times, which may be skewed).
fn due(broker: &BrokerInner, half: &RecordView<'_>) -> bool {
    let timeout = broker.config().transaction_time_out as i64;
    let immunity = properties::find(half.properties, keys::CHECK_IMMUNITY_TIME_IN_SECONDS)
        .and_then(|s| s.trim().parse::<i64>().ok())
        .filter(|s| *s >= 0)
        .map_or(timeout, |s| s.saturating_mul(1000));
    broker.now_millis() - half.store_timestamp >= immunity
}

/// Gives a half message up, asks about it, or leaves it for later.
fn look_at(
    broker: &BrokerInner,
    state: &mut State,
    half: &RecordView<'_>,
) -> Result<Option<Check>, rocketpy_store::StoreError> {
    if !due(broker, half) {
        return Ok(None);
    }
    let offset = half.queue_offset;
    let checked = state.checks.get(&offset).copied().unwrap_or(0);
    if checked >= broker.config().transaction_check_max {
        broker.topics.ensure_system_topic(
            TRANS_CHECK_MAX_TIME_TOPIC,
            1,
            rocketpy_protocol::flag::perm::READ_WRITE,
        )?;
        let msgs = [
            messages::given_up(half, checked),
            messages::op(
                broker.now_millis(),
                broker.store_host,
                messages::REMOVE_TAG,
                offset,
                None,
            ),
        ];
        resolve(&broker.store, state, offset, &msgs)?;
        tracing::warn!(
            offset,
            checks = checked,
            "half message given up: its producers never answered"
        );
        return Ok(None);
    }
    let Some(msg) = messages::for_check(half, checked + 1) else {
        // No real destination: nothing could ever commit it.
        let op = [messages::op(
            broker.now_millis(),
            broker.store_host,
            messages::REMOVE_TAG,
            offset,
            None,
        )];
        resolve(&broker.store, state, offset, &op)?;
        return Ok(None);
    };
    broker.store.put_messages_nowait(&[messages::op(
        broker.now_millis(),
        broker.store_host,
        messages::CHECK_TAG,
        offset,
        Some(checked + 1),
    )])?;
    state.checks.insert(offset, checked + 1);
    let Some(group) = properties::find(half.properties, keys::PRODUCER_GROUP) else {
        return Ok(None);
    };
    static TURN: AtomicUsize = AtomicUsize::new(0);
    let Some(conn) = broker
        .producers
        .available_connection(group, TURN.fetch_add(1, Ordering::Relaxed))
    else {
        tracing::debug!(group, offset, "no producer of the group to ask");
        return Ok(None);
    };
    let body = record::encode(
        &msg,
        Placement {
            queue_offset: offset,
            physical_offset: half.physical_offset,
            store_timestamp: half.store_timestamp,
        },
    )?;
    let uniq = properties::find(half.properties, keys::UNIQ_KEY).map(str::to_owned);
    let request = RemotingCommand::request(request::CHECK_TRANSACTION_STATE)
        .with_header(&CheckTransactionStateRequestHeader {
            tran_state_table_offset: offset,
            commit_log_offset: half.physical_offset,
            msg_id: uniq.clone(),
            transaction_id: uniq,
            offset_msg_id: Some(record::offset_msg_id(
                &half.store_host,
                half.physical_offset,
            )),
        })
        .with_body(body);
    Ok(Some(Check { conn, request }))
}
