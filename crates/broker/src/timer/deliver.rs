//! The timer at work: at send a future timer message is redirected to the timer topic
//! ([`redirect`]); each tick reads the timer queue and stores the due ones in their real
//! topics ([`TimerService::tick`], run by [`timer_loop`]). See [`super`] for the format.

use super::*;
use crate::state::BrokerInner;
use rocketpy_remoting::lifecycle::{every, Stop};

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
    let created = broker
        .topics
        .ensure_system_topic(TIMER_TOPIC, 1, perm::READ_WRITE)
        .map_err(crate::error::system_error)?;
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

impl TimerService {
    /// One round: reads the timer queue's new units, delivers what is due, saves progress.
    /// Returns how many were delivered.
    /// Only a master delivers (a slave's copies come from its master); the role is read
    /// under the state's lock, which [`TimerService::restart`] takes at a role change.
    pub fn tick(&self, broker: &BrokerInner, now: i64) -> usize {
        let mut state = self.state.lock();
        if !broker.store.role().is_master() {
            return 0;
        }
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
    let got = broker
        .store
        .get_message_unconfirmed(TIMER_TOPIC, 0, offset, 1);
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
