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

use crate::state::BrokerInner;
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

    /// Records a pop of `offsets` (from `key.start` on) in the revive log and the table;
    /// returns the record's append (for the flush wait).
    pub fn checkpoint(
        &self,
        broker: &BrokerInner,
        key: CkKey,
        offsets: Vec<i64>,
        invisible: i64,
        revive_qid: i32,
    ) -> Result<Appended, StoreError> {
        let record = CheckpointRecord {
            start_offset: key.start,
            pop_time: key.pop_time,
            invisible_time: invisible,
            bit_map: 0,
            num: offsets.len() as i32,
            queue_id: key.queue_id,
            topic: key.topic.clone(),
            group: key.group.clone(),
            revive_offset: 0,
            diffs: offsets.iter().map(|o| o - key.start).collect(),
            broker_name: broker.config().broker_name.clone(),
            re_put_times: None,
        };
        let uniq = format!(
            "{}@{}@{}@{}@{}@{}@{CK_TAG}",
            key.topic, key.queue_id, key.start, key.group, key.pop_time, record.broker_name
        );
        let appended = put_record(broker, revive_qid, CK_TAG, &record, &uniq)?;
        let log_offset = appended.results.first().map_or(0, |r| r.logics_offset);
        self.checkpoints.lock().insert(
            key,
            Checkpoint {
                invisible,
                offsets,
                done: 0,
                revive_qid,
                log_offset,
            },
        );
        Ok(appended)
    }

    /// Marks `offset` of checkpoint `key` done and writes the ack record; `None` when the
    /// checkpoint is unknown (revived already, or never made) or the offset was done.
    pub fn ack(
        &self,
        broker: &BrokerInner,
        key: &CkKey,
        offset: i64,
    ) -> Result<Option<Appended>, StoreError> {
        self.ack_many(broker, key, &[offset])
    }

    /// Marks `offsets` of checkpoint `key` done and writes one record for those that were
    /// live (an ack record for one, a batch ack record for more); `None` when none was.
    pub fn ack_many(
        &self,
        broker: &BrokerInner,
        key: &CkKey,
        offsets: &[i64],
    ) -> Result<Option<Appended>, StoreError> {
        let (revive_qid, fresh) = {
            let mut cks = self.checkpoints.lock();
            let Some(ck) = cks.get_mut(key) else {
                return Ok(None);
            };
            let fresh: Vec<i64> = offsets.iter().copied().filter(|o| ck.mark(*o)).collect();
            let revive_qid = ck.revive_qid;
            if ck.all_done() {
                cks.remove(key);
            }
            (revive_qid, fresh)
        };
        match fresh.as_slice() {
            [] => Ok(None),
            [one] => write_ack(broker, key, *one, revive_qid).map(Some),
            many => write_batch_ack(broker, key, many, revive_qid).map(Some),
        }
    }

    /// Revives every message whose invisible time ended by `now`: each goes to its group's
    /// pop retry topic with reconsume times + 1, then its checkpoint is marked done in the
    /// log. Returns how many were revived.
    pub fn revive_due(&self, broker: &BrokerInner, now: i64) -> usize {
        let _round = self.reviving.lock();
        let due: Vec<Due> = {
            let cks = self.checkpoints.lock();
            cks.iter()
                .filter(|(k, ck)| k.pop_time + ck.invisible <= now)
                .flat_map(|(k, ck)| {
                    ck.offsets
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| ck.done & (1 << i) == 0)
                        .map(|(_, o)| Due {
                            key: k.clone(),
                            offset: *o,
                            revive_qid: ck.revive_qid,
                        })
                        .collect::<Vec<_>>()
                })
                .collect()
        };
        let mut revived = 0;
        for d in due {
            match revive_one(broker, &d.key, d.offset) {
                Ok(()) => {}
                Err(e) => {
                    // Left live: tried again on the next round.
                    tracing::warn!(topic = %d.key.topic, group = %d.key.group, offset = d.offset, error = %e, "reviving a popped message failed");
                    continue;
                }
            }
            let mut cks = self.checkpoints.lock();
            if let Some(ck) = cks.get_mut(&d.key) {
                if ck.offsets.contains(&d.offset) && !ck.mark(d.offset) {
                    continue; // acked meanwhile: the copy is a harmless duplicate
                }
                if ck.all_done() {
                    cks.remove(&d.key);
                }
            }
            drop(cks);
            if let Err(e) = write_ack(broker, &d.key, d.offset, d.revive_qid) {
                tracing::warn!(error = %e, "recording a revival failed (it may happen again after a restart)");
            }
            revived += 1;
        }
        self.commit_revive_offsets(broker);
        revived
    }

    /// Moves the revive group's offset of each revive queue up to its oldest live
    /// checkpoint (or the queue's end): where replay starts after a restart.
    pub fn commit_revive_offsets(&self, broker: &BrokerInner) {
        let topic = revive_topic(&broker.config().broker_cluster_name);
        let mut oldest = [i64::MAX; REVIVE_QUEUES as usize];
        for ck in self.checkpoints.lock().values() {
            if let Some(slot) = oldest.get_mut(ck.revive_qid as usize) {
                *slot = (*slot).min(ck.log_offset);
            }
        }
        for (q, oldest) in oldest.iter().enumerate() {
            let q = q as i32;
            let end = broker.store.max_offset_in_queue(&topic, q);
            let to = (*oldest).min(end);
            if broker.offsets.query(REVIVE_GROUP, &topic, q) != Some(to) {
                broker.offsets.commit(REVIVE_GROUP, &topic, q, to);
            }
        }
    }

    /// Rebuilds the checkpoints from the revive log (at start): every checkpoint record from
    /// the revive group's offsets on, less the messages acked or revived since.
    pub fn replay(&self, broker: &BrokerInner) -> Result<usize, StoreError> {
        let topic = revive_topic(&broker.config().broker_cluster_name);
        let mut cks = self.checkpoints.lock();
        for q in 0..REVIVE_QUEUES {
            let mut at = broker
                .offsets
                .query(REVIVE_GROUP, &topic, q)
                .unwrap_or(0)
                .max(broker.store.min_offset_in_queue(&topic, q));
            let end = broker.store.max_offset_in_queue(&topic, q);
            while at < end {
                let got = broker.store.get_message(&topic, q, at, MAX_POP_NUMS, None);
                if got.messages.is_empty() {
                    at = got.next_begin_offset.max(at + 1);
                    continue;
                }
                for (raw, offset) in got.messages.iter().zip(&got.queue_offsets) {
                    replay_record(&mut cks, raw, *offset);
                }
                at = got.next_begin_offset;
            }
        }
        Ok(cks.len())
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

/// The revive topic, created with [`REVIVE_QUEUES`] queues when first needed.
fn ensure_revive_topic(broker: &BrokerInner) -> Result<String, StoreError> {
    let topic = revive_topic(&broker.config().broker_cluster_name);
    let (_, created) =
        broker
            .topics
            .create_system_topic(&topic, REVIVE_QUEUES, perm::READ_WRITE)?;
    if created {
        broker.register_now.notify_one();
    }
    Ok(topic)
}

/// Appends one revive-log record.
fn put_record<T: serde::Serialize>(
    broker: &BrokerInner,
    revive_qid: i32,
    tag: &str,
    body: &T,
    uniq: &str,
) -> Result<Appended, StoreError> {
    let topic = ensure_revive_topic(broker)?;
    let body = serde_json::to_vec(body)
        .map_err(|e| StoreError::InvalidArgument(format!("pop record: {e}")))?;
    let msg = MessageToStore {
        tags_code: java_hash::tags_code(Some(tag)),
        properties: properties::encode([(keys::TAGS, tag), (keys::UNIQ_KEY, uniq)]),
        topic,
        queue_id: revive_qid,
        flag: 0,
        body: Bytes::from(body),
        sys_flag: 0,
        born_timestamp: broker.now_millis(),
        born_host: broker.store_host,
        store_host: broker.store_host,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    };
    broker.store.put_messages_nowait(std::slice::from_ref(&msg))
}

fn ack_record(broker: &BrokerInner, key: &CkKey, offset: i64) -> AckRecord {
    AckRecord {
        ack_offset: offset,
        start_offset: key.start,
        group: key.group.clone(),
        topic: key.topic.clone(),
        queue_id: key.queue_id,
        pop_time: key.pop_time,
        broker_name: broker.config().broker_name.clone(),
    }
}

fn write_ack(
    broker: &BrokerInner,
    key: &CkKey,
    offset: i64,
    revive_qid: i32,
) -> Result<Appended, StoreError> {
    let record = ack_record(broker, key, offset);
    let uniq = format!(
        "{}@{}@{offset}@{}@{}@{}@{ACK_TAG}",
        key.topic, key.queue_id, key.group, key.pop_time, record.broker_name
    );
    put_record(broker, revive_qid, ACK_TAG, &record, &uniq)
}

/// One record for several offsets of a checkpoint (RocketMQ's `BatchAckMsg`, whose unique
/// key lists the offsets as Java prints a list).
fn write_batch_ack(
    broker: &BrokerInner,
    key: &CkKey,
    offsets: &[i64],
    revive_qid: i32,
) -> Result<Appended, StoreError> {
    let record = BatchAckRecord {
        ack: ack_record(broker, key, -1),
        ack_offsets: offsets.to_vec(),
    };
    let list: Vec<String> = offsets.iter().map(i64::to_string).collect();
    let uniq = format!(
        "{}@{}@[{}]@{}@{}@{BATCH_ACK_TAG}",
        key.topic,
        key.queue_id,
        list.join(", "),
        key.group,
        key.pop_time
    );
    put_record(broker, revive_qid, BATCH_ACK_TAG, &record, &uniq)
}

/// Puts a copy of the message at `offset` of `key`'s queue into the group's pop retry topic
/// (queue 0) with its reconsume times one higher and `1ST_POP_TIME` set on its first revival.
/// A message that is gone (retention, a deleted topic) counts as revived.
fn revive_one(broker: &BrokerInner, key: &CkKey, offset: i64) -> Result<(), StoreError> {
    let got = broker
        .store
        .get_message(&key.topic, key.queue_id, offset, 1, None);
    let (Some(raw), GetMessageStatus::Found) = (got.messages.first(), got.status) else {
        tracing::debug!(topic = %key.topic, offset, "popped message gone before its revival");
        return Ok(());
    };
    let Ok(Decoded::Message(v)) = record::decode(raw, false) else {
        return Ok(());
    };
    let retry = if key.topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) {
        key.topic.clone()
    } else {
        pop_retry_topic(&key.topic, &key.group)
    };
    let (_, created) = broker
        .topics
        .create_system_topic(&retry, 1, perm::READ_WRITE)?;
    if created {
        broker.register_now.notify_one();
    }
    let mut props: Vec<(&str, String)> = properties::pairs(v.properties)
        .map(|(k, val)| (k, val.to_owned()))
        .collect();
    if v.reconsume_times == 0 || !props.iter().any(|(k, _)| *k == keys::FIRST_POP_TIME) {
        props.retain(|(k, _)| *k != keys::FIRST_POP_TIME);
        props.push((keys::FIRST_POP_TIME, key.pop_time.to_string()));
    }
    let properties = properties::encode(props.iter().map(|(k, val)| (*k, val.as_str())));
    let msg = MessageToStore {
        tags_code: java_hash::tags_code(properties::find(&properties, keys::TAGS)),
        topic: retry,
        queue_id: 0,
        flag: v.flag,
        body: Bytes::copy_from_slice(v.body),
        properties,
        sys_flag: v.sys_flag,
        born_timestamp: v.born_timestamp,
        born_host: broker.store_host,
        store_host: broker.store_host,
        reconsume_times: v.reconsume_times + 1,
        prepared_transaction_offset: 0,
    };
    broker
        .store
        .put_messages_nowait(std::slice::from_ref(&msg))
        .map(drop)
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
