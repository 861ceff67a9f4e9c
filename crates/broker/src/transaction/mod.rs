//! Transactional messages (RocketMQ 4.x): half messages, their outcome (END_TRANSACTION), and
//! the check that asks producers about half messages left without one.
//!
//! Everything that must survive a restart is in the store: half messages on
//! RMQ_SYS_TRANS_HALF_TOPIC queue 0, op records on RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0 (a
//! resolved half offset, or a check count), and the check's progress through both queues as
//! offsets of group CID_RMQ_SYS_TRANS. [`Transactions`] holds what is read back from them:
//! which half messages at or after the progress are resolved, and how often each was checked.
//!
//! Invariants: a half message is resolved (committed, rolled back or given up) at most once:
//! the decision and its records are made under one lock, and a commit's message and its op
//! record are appended together. Every half offset below `half_progress` is resolved or gone
//! with its file; every op record about a half offset at or after it is at or after
//! `op_progress`.

pub mod check;
pub mod half;
pub mod messages;

use std::collections::{BTreeSet, HashMap, VecDeque};

use parking_lot::{Mutex, MutexGuard};
use rocketpy_protocol::message::record::{self, Decoded, MessageToStore};
use rocketpy_protocol::topic::{TRANS_CHECK_GROUP, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC};
use rocketpy_store::{Appended, GetMessageStatus, MessageStore, StoreError};

use crate::consumer_offset::ConsumerOffsetManager;

/// What the store says about the transactions, read back lazily on first use.
#[derive(Debug, Default)]
pub struct Transactions {
    state: Mutex<Option<State>>,
}

#[derive(Debug, Default)]
pub(crate) struct State {
    /// Next half offset the check looks at.
    pub half_progress: i64,
    /// First op record that may be about a half offset at or after `half_progress`.
    op_progress: i64,
    /// Op records up to here have been read into `resolved` and `checks`.
    op_read_to: i64,
    /// Resolved half offsets at or after `half_progress`.
    resolved: BTreeSet<i64>,
    /// Checks made of unresolved half offsets.
    pub checks: HashMap<i64, i32>,
    /// (op offset, half offset) of op records read at or after `op_progress`.
    ops: VecDeque<(i64, i64)>,
}

impl State {
    fn load(store: &MessageStore, offsets: &ConsumerOffsetManager) -> State {
        let start = |topic: &str| {
            let min = store.min_offset_in_queue(topic, 0);
            offsets
                .query(TRANS_CHECK_GROUP, topic, 0)
                .unwrap_or(min)
                .max(min)
        };
        let op_progress = start(TRANS_OP_HALF_TOPIC);
        let mut state = State {
            half_progress: start(TRANS_HALF_TOPIC),
            op_progress,
            op_read_to: op_progress,
            ..State::default()
        };
        state.read_ops(store);
        state
    }

    /// Reads the op records appended since the last read.
    pub fn read_ops(&mut self, store: &MessageStore) {
        loop {
            let got = store.get_message_unconfirmed(TRANS_OP_HALF_TOPIC, 0, self.op_read_to, 256);
            if got.status == GetMessageStatus::OffsetTooSmall {
                self.op_read_to = got.min_offset;
                continue;
            }
            if got.messages.is_empty() {
                return;
            }
            for (bytes, offset) in got.messages.iter().zip(&got.queue_offsets) {
                let Ok(Decoded::Message(view)) = record::decode(bytes, false) else {
                    continue;
                };
                let Some((tag, half, checks)) = messages::read_op(&view) else {
                    tracing::warn!(offset, "unreadable transaction op record skipped");
                    continue;
                };
                self.ops.push_back((*offset, half));
                self.note(&tag, half, checks);
            }
            self.op_read_to = got.next_begin_offset;
        }
    }

    fn note(&mut self, tag: &str, half: i64, checks: i32) {
        if half < self.half_progress {
            return;
        }
        match tag {
            messages::REMOVE_TAG => {
                self.resolved.insert(half);
                self.checks.remove(&half);
            }
            messages::CHECK_TAG if !self.resolved.contains(&half) => {
                let seen = self.checks.entry(half).or_default();
                *seen = (*seen).max(checks);
            }
            _ => {}
        }
    }

    /// Whether the half message at `half` has its outcome.
    pub fn is_resolved(&self, half: i64) -> bool {
        half < self.half_progress || self.resolved.contains(&half)
    }

    /// Records that `half` is resolved (its op record was just appended).
    pub fn resolve(&mut self, half: i64) {
        self.resolved.insert(half);
        self.checks.remove(&half);
    }

    /// Moves the progress to `half` (every offset before it resolved or gone) and forgets
    /// what is behind it.
    pub fn advance(&mut self, half: i64) {
        if half <= self.half_progress {
            return;
        }
        self.half_progress = half;
        self.resolved = self.resolved.split_off(&half);
        self.checks.retain(|h, _| *h >= half);
        while self.ops.front().is_some_and(|(_, h)| *h < half) {
            self.ops.pop_front();
        }
        self.op_progress = self.ops.front().map_or(self.op_read_to, |(op, _)| *op);
    }

    /// The progress as consumer offsets of CID_RMQ_SYS_TRANS (RocketMQ keeps it there too).
    pub fn save(&self, offsets: &ConsumerOffsetManager) {
        offsets.commit(TRANS_CHECK_GROUP, TRANS_HALF_TOPIC, 0, self.half_progress);
        offsets.commit(TRANS_CHECK_GROUP, TRANS_OP_HALF_TOPIC, 0, self.op_progress);
    }
}

/// The lock over [`State`], loaded from the store on first use.
pub(crate) struct Locked<'a>(MutexGuard<'a, Option<State>>);

impl std::ops::Deref for Locked<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        self.0.as_ref().expect("loaded when locked")
    }
}

impl std::ops::DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut State {
        self.0.as_mut().expect("loaded when locked")
    }
}

impl Transactions {
    /// Drops the state: the next use reads it from the store again (controller mode: the
    /// role changed, and the store may have been cut back or grown by another master).
    pub fn forget(&self) {
        *self.state.lock() = None;
    }

    /// The state, read from the store if this is the first use.
    pub(crate) fn lock(&self, store: &MessageStore, offsets: &ConsumerOffsetManager) -> Locked<'_> {
        let mut guard = self.state.lock();
        if guard.is_none() {
            *guard = Some(State::load(store, offsets));
        }
        Locked(guard)
    }
}

/// Appends `msgs` and marks the half message at `half` resolved, unless it already is:
/// `Ok(None)` then, and nothing is written. The one way a half message gets its outcome.
pub(crate) fn resolve(
    store: &MessageStore,
    state: &mut State,
    half: i64,
    msgs: &[MessageToStore],
) -> Result<Option<Appended>, StoreError> {
    if state.is_resolved(half) {
        return Ok(None);
    }
    let appended = store.put_messages_nowait(msgs)?;
    state.resolve(half);
    Ok(Some(appended))
}
