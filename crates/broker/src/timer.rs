//! Timer messages (RocketMQ 5.x): a message sent with `TIMER_DELIVER_MS` (a time),
//! `TIMER_DELAY_SEC` or `TIMER_DELAY_MS` (a delay) is delivered at that time, any time up to
//! `timerMaxDelaySec` ahead — not only at the 18 delay levels of 4.x, which keep working.
//!
//! At send, such a message is stored in the timer topic (`rmq_sys_wheel_timer`, one queue)
//! with its destination in `REAL_TOPIC` / `REAL_QID` and its delivery time in
//! `TIMER_OUT_MS` and in its consume-queue unit's tag code, so the timer reads the queue's
//! 20-byte units, not the messages, to know what is due. When the time comes, a copy goes to
//! the real topic with `TIMER_ENQUEUE_MS` and `TIMER_DEQUEUE_MS` added (RocketMQ's
//! properties), and the timer group's offset moves past every message delivered before.
//!
//! After a restart the timer reads its queue again from that offset. A message due by then
//! whose copy the index already finds in the real topic (same UNIQ_KEY, delivered by the last
//! run after the offset was saved) is not delivered twice.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use rocketpy_protocol::code::response;
use rocketpy_protocol::flag::perm;
use rocketpy_protocol::message::java_hash;
use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::message::record::{self, Decoded, MessageToStore};
use rocketpy_remoting::ProcessError;
use rocketpy_store::{GetMessageStatus, StoreError};

use crate::state::BrokerInner;
use rocketpy_remoting::lifecycle::{every, Stop};

/// The timer topic (RocketMQ's `TimerMessageStore.TIMER_TOPIC`).
pub const TIMER_TOPIC: &str = "rmq_sys_wheel_timer";
/// The system group whose offset on the timer topic says where reading starts.
pub const TIMER_GROUP: &str = "CID_RMQ_SYS_TIMER";
/// How often the timer looks for new and due messages.
const TICK: Duration = Duration::from_millis(100);

/// Where a timer message goes, read from its properties; `None` for a message that is not a
/// timer message (or was taken by the timer already: `TIMER_OUT_MS` is set).
fn delivery_time(props: &str, now: i64) -> Result<Option<i64>, String> {
    if !props.contains("TIMER_") || properties::find(props, keys::TIMER_OUT_MS).is_some() {
        return Ok(None);
    }
    let parse = |k: &str| -> Result<Option<i64>, String> {
        properties::find(props, k)
            .map(|v| {
                v.trim()
                    .parse::<i64>()
                    .map_err(|_| format!("timer message illegal: {k}={v:?} is not a number"))
            })
            .transpose()
    };
    if let Some(s) = parse(keys::TIMER_DELAY_SEC)? {
        return Ok(Some(now.saturating_add(s.saturating_mul(1000))));
    }
    if let Some(ms) = parse(keys::TIMER_DELAY_MS)? {
        return Ok(Some(now.saturating_add(ms)));
    }
    parse(keys::TIMER_DELIVER_MS)
}

/// At send: a timer message due in the future goes to the timer topic instead of `msg`'s
/// topic; one due now or in the past is stored where it was sent, at once. A delay beyond
/// `timerMaxDelaySec` is refused with MESSAGE_ILLEGAL (RocketMQ's remark).
pub fn redirect(broker: &BrokerInner, msg: &mut MessageToStore) -> Result<(), ProcessError> {
    let now = broker.now_millis();
    let at = match delivery_time(&msg.properties, now) {
        Ok(Some(at)) if at > now => at,
        Ok(_) => return Ok(()),
        Err(e) => return Err(ProcessError::new(response::MESSAGE_ILLEGAL, e)),
    };
    if properties::find(&msg.properties, keys::DELAY_TIME_LEVEL).is_some_and(|l| l != "0") {
        return Ok(()); // a 4.x delay level wins, as in RocketMQ
    }
    let max_ms = broker.config().timer_max_delay_sec.saturating_mul(1000);
    if at - now > max_ms {
        return Err(ProcessError::new(
            response::MESSAGE_ILLEGAL,
            format!(
                "timer message illegal, the delay time should not be bigger than the max delay {max_ms}ms; or if set del msg, the delay time should be bigger than the current time"
            ),
        ));
    }
    let (_, created) = broker
        .topics
        .create_system_topic(TIMER_TOPIC, 1, perm::READ_WRITE)
        .map_err(crate::processor::system_error)?;
    if created {
        broker.register_now.notify_one();
    }
    let mut props = std::mem::take(&mut msg.properties);
    properties::push(&mut props, keys::TIMER_OUT_MS, &at.to_string());
    properties::push(&mut props, keys::REAL_TOPIC, &msg.topic);
    properties::push(&mut props, keys::REAL_QUEUE_ID, &msg.queue_id.to_string());
    msg.properties = props;
    msg.topic = TIMER_TOPIC.to_owned();
    msg.queue_id = 0;
    msg.tags_code = at; // the timer reads due times from the consume queue
    Ok(())
}

/// Timer messages waiting for their time.
#[derive(Debug, Default)]
pub struct TimerService {
    state: Mutex<TimerState>,
}

#[derive(Debug, Default)]
struct TimerState {
    /// (due time, offset in the timer queue) of every message not delivered yet.
    pending: BTreeSet<(i64, i64)>,
    /// The offsets of `pending` (the timer group's offset is the smallest).
    pending_offsets: BTreeMap<i64, ()>,
    /// How far the timer queue has been read.
    read_to: i64,
    /// Whether the offsets read at start still need the restart check.
    started: bool,
}

impl TimerService {
    /// Messages waiting (tests, metrics).
    pub fn pending(&self) -> usize {
        self.state.lock().pending.len()
    }

    /// One round: reads the timer queue's new units, delivers what is due, saves progress.
    /// Returns how many were delivered.
    pub fn tick(&self, broker: &BrokerInner, now: i64) -> usize {
        let mut state = self.state.lock();
        let first_round = !state.started;
        if first_round {
            state.started = true;
            state.read_to = broker
                .offsets
                .query(TIMER_GROUP, TIMER_TOPIC, 0)
                .unwrap_or(0)
                .max(broker.store.min_offset_in_queue(TIMER_TOPIC, 0));
        }
        let end = broker.store.max_offset_in_queue(TIMER_TOPIC, 0);
        if let Some(cq) = broker.store.find_consume_queue(TIMER_TOPIC, 0) {
            while state.read_to < end {
                let Some(units) = cq.units_from(state.read_to) else {
                    state.read_to = end; // retention took the rest
                    break;
                };
                if units.is_empty() {
                    break;
                }
                for i in 0..units.len() {
                    let offset = units.start_offset + i as i64;
                    let unit = units.get(i);
                    state.pending.insert((unit.tags_code, offset));
                    state.pending_offsets.insert(offset, ());
                }
                state.read_to = units.start_offset + units.len() as i64;
            }
        }
        let mut delivered = 0;
        while let Some(&(at, offset)) = state.pending.first() {
            if at > now {
                break;
            }
            match deliver(broker, offset, now, first_round) {
                Ok(()) => {}
                Err(e) => {
                    tracing::warn!(offset, error = %e, "delivering a timer message failed; trying again");
                    break;
                }
            }
            state.pending.pop_first();
            state.pending_offsets.remove(&offset);
            delivered += 1;
        }
        let progress = state
            .pending_offsets
            .keys()
            .next()
            .copied()
            .unwrap_or(state.read_to);
        if broker.offsets.query(TIMER_GROUP, TIMER_TOPIC, 0) != Some(progress) {
            broker.offsets.commit(TIMER_GROUP, TIMER_TOPIC, 0, progress);
        }
        delivered
    }
}

/// Puts the timer message at `offset` into its real topic. With `check_index` (the first
/// round after a start) a copy the index already finds there is not put again.
fn deliver(
    broker: &BrokerInner,
    offset: i64,
    now: i64,
    check_index: bool,
) -> Result<(), StoreError> {
    let got = broker.store.get_message(TIMER_TOPIC, 0, offset, 1, None);
    let (Some(raw), GetMessageStatus::Found) = (got.messages.first(), got.status) else {
        return Ok(()); // gone (retention): nothing to deliver
    };
    let Ok(Decoded::Message(v)) = record::decode(raw, false) else {
        return Ok(());
    };
    let (Some(topic), Some(queue_id)) = (
        properties::find(v.properties, keys::REAL_TOPIC),
        properties::find(v.properties, keys::REAL_QUEUE_ID).and_then(|q| q.parse::<i32>().ok()),
    ) else {
        tracing::warn!(
            offset,
            "timer message without REAL_TOPIC / REAL_QID dropped"
        );
        return Ok(());
    };
    if check_index && delivered_before(broker, topic, v.properties, v.store_timestamp) {
        return Ok(());
    }
    let mut props = String::with_capacity(v.properties.len() + 48);
    for (k, val) in properties::pairs(v.properties) {
        if k != keys::REAL_TOPIC && k != keys::REAL_QUEUE_ID {
            properties::push(&mut props, k, val);
        }
    }
    properties::push(
        &mut props,
        keys::TIMER_ENQUEUE_MS,
        &v.store_timestamp.to_string(),
    );
    properties::push(&mut props, keys::TIMER_DEQUEUE_MS, &now.to_string());
    let msg = MessageToStore {
        tags_code: java_hash::tags_code(properties::find(&props, keys::TAGS)),
        topic: topic.to_owned(),
        queue_id,
        flag: v.flag,
        body: Bytes::copy_from_slice(v.body),
        properties: props,
        sys_flag: v.sys_flag,
        born_timestamp: v.born_timestamp,
        born_host: v.born_host,
        store_host: broker.store_host,
        reconsume_times: v.reconsume_times,
        prepared_transaction_offset: 0,
    };
    broker
        .store
        .put_messages_nowait(std::slice::from_ref(&msg))
        .map(drop)
}

/// Whether the index holds a copy of this timer message in `topic` (the last run delivered it
/// after its progress was saved).
fn delivered_before(broker: &BrokerInner, topic: &str, props: &str, enqueued: i64) -> bool {
    let Some(uniq) = properties::find(props, keys::UNIQ_KEY) else {
        return false;
    };
    broker
        .store
        .query_message(topic, uniq, 32, enqueued, i64::MAX)
        .iter()
        .any(|r| match record::decode(r, false) {
            Ok(Decoded::Message(v)) => {
                v.topic == topic && properties::find(v.properties, keys::TIMER_DEQUEUE_MS).is_some()
            }
            _ => false,
        })
}

/// Runs the timer every [`TICK`], off the I/O threads.
pub async fn timer_loop(broker: Arc<BrokerInner>, stop: Stop) {
    every(TICK, stop, || {
        let b = broker.clone();
        async move {
            let _ = tokio::task::spawn_blocking(move || b.timer.tick(&b, b.now_millis())).await;
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivery_times_come_from_rocketmq_properties() {
        let p = |pairs: &[(&str, &str)]| properties::encode(pairs.iter().copied());
        assert_eq!(
            delivery_time(&p(&[("TIMER_DELIVER_MS", "5000")]), 1000),
            Ok(Some(5000))
        );
        assert_eq!(
            delivery_time(&p(&[("TIMER_DELAY_SEC", "3")]), 1000),
            Ok(Some(4000))
        );
        assert_eq!(
            delivery_time(&p(&[("TIMER_DELAY_MS", "250")]), 1000),
            Ok(Some(1250))
        );
        assert_eq!(delivery_time(&p(&[("TAGS", "a")]), 1000), Ok(None));
        assert_eq!(
            delivery_time(
                &p(&[("TIMER_DELIVER_MS", "5000"), ("TIMER_OUT_MS", "5000")]),
                1
            ),
            Ok(None),
            "taken by the timer already"
        );
        assert!(delivery_time(&p(&[("TIMER_DELAY_SEC", "soon")]), 1).is_err());
    }
}
