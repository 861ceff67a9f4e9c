//! The pop service's side in the store: checkpoints, acks and revivals written to the revive
//! log (the revive topic), and the log read again at start (see the crash-safety rules in
//! [`super`]).

use super::*;
use crate::state::BrokerInner;

impl PopService {
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
    /// Only a master revives: a slave's revive log is its master's copy.
    pub fn revive_due(&self, broker: &BrokerInner, now: i64) -> usize {
        let _round = self.reviving.lock();
        if !broker.store.role().is_master() {
            return 0;
        }
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

    /// Rebuilds the checkpoints from the revive log (at start, and when a broker becomes its
    /// group's master): every checkpoint record from the revive group's offsets on, less the
    /// messages acked or revived since. What the table held before is dropped.
    pub fn replay(&self, broker: &BrokerInner) -> Result<usize, StoreError> {
        let _round = self.reviving.lock();
        let topic = revive_topic(&broker.config().broker_cluster_name);
        let mut cks = self.checkpoints.lock();
        cks.clear();
        for q in 0..REVIVE_QUEUES {
            let mut at = broker
                .offsets
                .query(REVIVE_GROUP, &topic, q)
                .unwrap_or(0)
                .max(broker.store.min_offset_in_queue(&topic, q));
            let end = broker.store.max_offset_in_queue(&topic, q);
            while at < end {
                let got = broker
                    .store
                    .get_message_unconfirmed(&topic, q, at, MAX_POP_NUMS);
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

/// The revive topic, created with [`REVIVE_QUEUES`] queues when first needed.
fn ensure_revive_topic(broker: &BrokerInner) -> Result<String, StoreError> {
    let topic = revive_topic(&broker.config().broker_cluster_name);
    let created = broker
        .topics
        .ensure_system_topic(&topic, REVIVE_QUEUES, perm::READ_WRITE)?;
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
    let uniq = batch_ack_uniq(key, offsets);
    put_record(broker, revive_qid, BATCH_ACK_TAG, &record, &uniq)
}

/// A batch ack record's unique key, `topic@queue@[o1, o2]@group@popTime@tag` (the offsets
/// as Java prints a list), written piece by piece: one per ack of a received batch, so no
/// string per offset.
fn batch_ack_uniq(key: &CkKey, offsets: &[i64]) -> String {
    let mut uniq =
        String::with_capacity(64 + key.topic.len() + key.group.len() + 8 * offsets.len());
    let mut digits = itoa::Buffer::new();
    uniq.push_str(&key.topic);
    uniq.push('@');
    uniq.push_str(digits.format(key.queue_id));
    uniq.push_str("@[");
    super::extra_info::push_offsets(&mut uniq, offsets, ", ");
    uniq.push_str("]@");
    uniq.push_str(&key.group);
    uniq.push('@');
    uniq.push_str(digits.format(key.pop_time));
    uniq.push('@');
    uniq.push_str(BATCH_ACK_TAG);
    uniq
}

/// Puts a copy of the message at `offset` of `key`'s queue into the group's pop retry topic
/// (queue 0) with its reconsume times one higher and `1ST_POP_TIME` set on its first revival.
/// A message that is gone (retention, a deleted topic) counts as revived.
fn revive_one(broker: &BrokerInner, key: &CkKey, offset: i64) -> Result<(), StoreError> {
    let got = broker
        .store
        .get_message_unconfirmed(&key.topic, key.queue_id, offset, 1);
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
    let created = broker
        .topics
        .ensure_system_topic(&retry, 1, perm::READ_WRITE)?;
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
    fn a_batch_acks_key_lists_its_offsets_as_java_prints_a_list() {
        let key = CkKey {
            topic: "T".into(),
            group: "g".into(),
            queue_id: 2,
            start: 5,
            pop_time: 1000,
        };
        assert_eq!(
            batch_ack_uniq(&key, &[5, 6, 9]),
            "T@2@[5, 6, 9]@g@1000@bAck"
        );
        assert_eq!(batch_ack_uniq(&key, &[7]), "T@2@[7]@g@1000@bAck");
    }
}
