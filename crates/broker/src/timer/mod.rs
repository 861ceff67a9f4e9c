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

pub mod deliver;

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

    /// Forgets what was read: the next round reads the timer queue again from the timer
    /// group's offset, as after a restart (controller mode: the role changed, and the store
    /// may have been cut back or grown by the last master's writes).
    pub fn restart(&self) {
        *self.state.lock() = TimerState::default();
    }
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
