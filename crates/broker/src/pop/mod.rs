//! Pop consumption (RocketMQ 5.x): the broker, not the client, hands out messages. A pop
//! takes messages from a group's queues and makes them invisible to the group for an
//! invisible time; an ack ends them; a message not acked in time is delivered again through
//! the group's pop retry topic (`%RETRY%<group>_<topic>`) with its reconsume times one
//! higher. Dead-lettering is the consumer's decision (the proxy's or client's), as in
//! RocketMQ. FIFO pops are in [`order`].
//!
//! What must stay true:
//! - Crash safety: every pop writes its checkpoint to the revive log (the revive topic) before
//!   the group's offset moves past the messages and before the answer; acks and revivals are
//!   written there too. At start the broker reads the log again from the revive group's
//!   offset, which never passes a checkpoint that still has live messages, so a message
//!   popped and not acked is revived after a restart as it would have been without one.
//! - At least once: a crash can revive a message twice (its revival was stored, its ack
//!   record not yet); it never loses one.

pub mod extra_info;
pub mod order;
pub mod records;
mod revive_log;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use rocketpy_protocol::flag::perm;
use rocketpy_protocol::message::java_hash;
use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::message::record::{self, Decoded, MessageToStore};
use rocketpy_protocol::topic::RETRY_GROUP_TOPIC_PREFIX;
use rocketpy_store::{Appended, GetMessageStatus, StoreError};
use tokio::sync::Notify;

use records::{AckRecord, BatchAckRecord, CheckpointRecord, ACK_TAG, BATCH_ACK_TAG, CK_TAG};

/// Queues of the revive topic (RocketMQ's `reviveQueueNum`); non-FIFO pops spread their
/// checkpoints over them.
pub const REVIVE_QUEUES: i32 = 8;
/// The system group whose offsets on the revive topic say where replay starts.
pub const REVIVE_GROUP: &str = "CID_RMQ_SYS_REVIVE_GROUP";
/// Most messages one pop returns.
pub const MAX_POP_NUMS: i32 = 32;

/// The revive topic of a cluster.
pub fn revive_topic(cluster: &str) -> String {
    format!("rmq_sys_REVIVE_LOG_{cluster}")
}

pub use rocketpy_protocol::topic::pop_retry_topic;

/// The normal topic a pop retry topic of `group` belongs to.
pub fn normal_topic<'a>(retry_topic: &'a str, group: &str) -> Option<&'a str> {
    retry_topic
        .strip_prefix(RETRY_GROUP_TOPIC_PREFIX)?
        .strip_prefix(group)?
        .strip_prefix(['_', '+'])
}

/// Identifies a checkpoint: what one pop took from one queue.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CkKey {
    /// The topic read (a pop retry topic for retried messages).
    pub topic: String,
    /// The consumer group.
    pub group: String,
    /// The queue.
    pub queue_id: i32,
    /// Its first offset.
    pub start: i64,
    /// When it was popped (ms).
    pub pop_time: i64,
}

/// A checkpoint's live state.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// Invisible time (ms): the messages are revived at `pop_time + invisible`.
    pub invisible: i64,
    /// The popped offsets.
    pub offsets: Vec<i64>,
    /// Bit i: offsets\[i\] is acked (or revived).
    pub done: u64,
    /// Its revive queue.
    pub revive_qid: i32,
    /// The checkpoint record's offset in that revive queue.
    pub log_offset: i64,
}

impl Checkpoint {
    /// Marks `offset` done; false when it is not one of the checkpoint's or was done.
    fn mark(&mut self, offset: i64) -> bool {
        match self.offsets.iter().position(|o| *o == offset) {
            Some(i) if self.done & (1 << i) == 0 => {
                self.done |= 1 << i;
                true
            }
            _ => false,
        }
    }

    fn all_done(&self) -> bool {
        self.done.count_ones() as usize >= self.offsets.len()
    }
}

/// Pop state of one broker.
#[derive(Debug)]
pub struct PopService {
    checkpoints: Mutex<HashMap<CkKey, Checkpoint>>,
    /// One lock per `topic@group@queue`: a pop skips a queue another pop is reading.
    queue_locks: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    counter: AtomicU32,
    /// FIFO pops.
    pub order: order::OrderTable,
    /// Pops waiting for messages, per topic (a pop retry topic wakes its normal topic's).
    waiters: Mutex<HashMap<String, Arc<Notify>>>,
    /// Held for a whole revive round: two rounds at once (the loop and a test's call) would
    /// both find the same due offsets and revive them twice.
    reviving: Mutex<()>,
}

/// A message about to be revived: where it is and what its checkpoint was.
struct Due {
    key: CkKey,
    offset: i64,
    revive_qid: i32,
}

impl PopService {
    /// Empty state; the FIFO table from `order_file`.
    pub fn new(order_file: std::path::PathBuf) -> Result<Self, StoreError> {
        Ok(PopService {
            checkpoints: Mutex::new(HashMap::new()),
            queue_locks: Mutex::new(HashMap::new()),
            counter: AtomicU32::new(0),
            order: order::OrderTable::load(order_file)?,
            waiters: Mutex::new(HashMap::new()),
            reviving: Mutex::new(()),
        })
    }

    /// The lock of one queue for one group.
    pub fn queue_lock(&self, topic: &str, group: &str, queue_id: i32) -> Arc<Mutex<()>> {
        self.queue_locks
            .lock()
            .entry(format!("{topic}@{group}@{queue_id}"))
            .or_default()
            .clone()
    }

    /// The revive queue of the next non-FIFO pop.
    pub fn next_revive_qid(&self) -> i32 {
        (self.counter.fetch_add(1, Ordering::Relaxed) % REVIVE_QUEUES as u32) as i32
    }

    /// The notifier pops on `topic` wait on.
    pub fn notifier(&self, topic: &str) -> Arc<Notify> {
        self.waiters
            .lock()
            .entry(topic.to_owned())
            .or_default()
            .clone()
    }

    /// Wakes every waiting pop (controller mode: the confirm offset moved).
    pub fn wake_all(&self) {
        for n in self.waiters.lock().values() {
            n.notify_waiters();
        }
    }

    /// Wakes pops waiting on `topic` (a message arrived, a FIFO queue was released).
    pub fn wake(&self, topic: &str) {
        if let Some(n) = self.waiters.lock().get(topic) {
            n.notify_waiters();
        }
    }

    /// Live checkpoints (tests, metrics).
    pub fn checkpoint_count(&self) -> usize {
        self.checkpoints.lock().len()
    }
}

/// Applies one revive-log record to the table being rebuilt.
fn replay_record(cks: &mut HashMap<CkKey, Checkpoint>, raw: &[u8], log_offset: i64) {
    let Ok(Decoded::Message(v)) = record::decode(raw, false) else {
        return;
    };
    match properties::find(v.properties, keys::TAGS) {
        Some(CK_TAG) => {
            let Ok(ck) = serde_json::from_slice::<CheckpointRecord>(v.body) else {
                tracing::warn!(
                    offset = log_offset,
                    "unreadable pop checkpoint record skipped"
                );
                return;
            };
            cks.insert(
                CkKey {
                    topic: ck.topic,
                    group: ck.group,
                    queue_id: ck.queue_id,
                    start: ck.start_offset,
                    pop_time: ck.pop_time,
                },
                Checkpoint {
                    invisible: ck.invisible_time,
                    offsets: ck.diffs.iter().map(|d| ck.start_offset + d).collect(),
                    done: 0,
                    revive_qid: v.queue_id,
                    log_offset,
                },
            );
        }
        Some(ACK_TAG) => {
            if let Ok(ack) = serde_json::from_slice::<AckRecord>(v.body) {
                let offset = ack.ack_offset;
                replay_acks(cks, ack, &[offset]);
            }
        }
        Some(BATCH_ACK_TAG) => {
            if let Ok(batch) = serde_json::from_slice::<BatchAckRecord>(v.body) {
                replay_acks(cks, batch.ack, &batch.ack_offsets);
            }
        }
        _ => {}
    }
}

/// Marks acked offsets of a checkpoint being rebuilt.
fn replay_acks(cks: &mut HashMap<CkKey, Checkpoint>, ack: AckRecord, offsets: &[i64]) {
    let key = CkKey {
        topic: ack.topic,
        group: ack.group,
        queue_id: ack.queue_id,
        start: ack.start_offset,
        pop_time: ack.pop_time,
    };
    if let Some(ck) = cks.get_mut(&key) {
        for offset in offsets {
            ck.mark(*offset);
        }
        if ck.all_done() {
            cks.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_topic_names() {
        assert_eq!(pop_retry_topic("T", "g"), "%RETRY%g_T");
        assert_eq!(normal_topic("%RETRY%g_T", "g"), Some("T"));
        assert_eq!(normal_topic("%RETRY%g+T", "g"), Some("T"));
        assert_eq!(normal_topic("%RETRY%g_a_b", "g"), Some("a_b"));
        assert_eq!(normal_topic("%RETRY%other_T", "g"), None);
    }
}
