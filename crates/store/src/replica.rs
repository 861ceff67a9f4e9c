//! Replication, the store's side: what a master reads for its slaves and how a slave writes
//! what its master sends (RocketMQ 4.x HA). The network side is the broker's.
//!
//! A slave's CommitLog is byte-for-byte the master's: records are written verbatim at the
//! offsets the master gave them, and the slave builds its consume queues (and index, which
//! follows the CommitLog by itself) from them as a put would. What must stay true:
//! - only complete, checked records are written (a record split across two frames waits in
//!   [`ReplicaWriter`] for its end), so readers and recovery never meet a partial record;
//! - the offset a slave reports is the end of its complete records, so after a reconnect or a
//!   crash the master resends exactly what is missing.

use bytes::Bytes;

use crate::error::{Result, StoreError};
use crate::message_store::MessageStore;
use crate::recovery::dispatch_request;

impl MessageStore {
    /// Master: up to `max` CommitLog bytes from `offset`, never past the end of the file that
    /// holds it (RocketMQ's HA frames never span two files). `None` when nothing is written
    /// there (yet, or any more).
    pub fn commit_log_data(&self, offset: i64, max: usize) -> Option<Bytes> {
        let data = self.commit_log.read_from(offset)?;
        Some(data.slice(..data.len().min(max)))
    }

    /// Master: where a slave with an empty CommitLog starts: the first byte of the newest
    /// CommitLog file (RocketMQ's choice: an empty slave does not copy the whole history).
    pub fn replica_start_offset(&self) -> i64 {
        let end = self.commit_log.max_offset();
        let size = self.config().mapped_file_size_commit_log as i64;
        end - end % size
    }

    /// Slave: writes records received from the master (see [`crate::commit_log::CommitLog::append_verbatim`]).
    fn append_replica(&self, offset: i64, data: &[u8]) -> Result<(usize, i64)> {
        if self.shut_down.load(std::sync::atomic::Ordering::Acquire) {
            return Err(StoreError::ShutDown);
        }
        self.clean.check_space()?;
        let mut arrived = Vec::new();
        let written = self
            .commit_log
            .append_verbatim(
                offset,
                data,
                |units| self.queues.reserve(units),
                |view| {
                    let req = dispatch_request(view, &self.delay_levels);
                    if req.is_consumable() {
                        arrived.push((
                            view.topic.to_owned(),
                            view.queue_id,
                            view.queue_offset + 1,
                            req.tags_code,
                        ));
                    }
                    self.queues.dispatch(&req)
                },
            )
            .map_err(|e| self.clean.on_write_error(e));
        // Long-polling pulls on the slave wake for what was written, even if a later record
        // of the frame failed.
        if let Some(listener) = self.listener.get() {
            for (topic, queue_id, next, tags_code) in &arrived {
                listener.arriving(topic, *queue_id, *next, *tags_code);
            }
        }
        written
    }

    /// Slave: cuts the CommitLog and the consume queues back to `offset` — a master restarted
    /// with a shorter log than its slave got (its tail was never flushed) must not leave the
    /// slave serving messages the master lost, nor numbering new ones differently.
    pub fn truncate_replica(&self, offset: i64) -> Result<()> {
        let (min, max) = (self.commit_log.min_offset(), self.commit_log.max_offset());
        if offset >= max {
            return Ok(());
        }
        if offset < min {
            return Err(StoreError::InvalidArgument(format!(
                "cannot cut the CommitLog back to {offset}: it starts at {min}"
            )));
        }
        tracing::warn!(
            from = max,
            to = offset,
            "CommitLog cut back to the master's end: the master lost these bytes"
        );
        self.commit_log
            .truncate_to(offset, || {
                let mut table: std::collections::HashMap<
                    String,
                    std::collections::HashMap<i32, i64>,
                > = std::collections::HashMap::new();
                for cq in self.queues.all() {
                    cq.truncate_dirty(offset)?;
                    table
                        .entry(cq.topic().to_owned())
                        .or_default()
                        .insert(cq.queue_id(), cq.max_offset());
                }
                Ok(table)
            })
            .map(|table| self.commit_log.set_queue_offsets(table))
    }
}

/// A slave's writer for one connection to its master: takes the master's frames in order,
/// holds a record split across frames until it is complete, and writes complete records.
pub struct ReplicaWriter<'a> {
    store: &'a MessageStore,
    /// The CommitLog's end: where `pending` starts.
    end: i64,
    /// Bytes received after the last complete record.
    pending: Vec<u8>,
    /// The offset the master's next frame must start at.
    received: i64,
}

impl<'a> ReplicaWriter<'a> {
    /// A writer continuing `store`'s CommitLog.
    pub fn new(store: &'a MessageStore) -> Self {
        let end = store.commit_log.max_offset();
        ReplicaWriter {
            store,
            end,
            pending: Vec::new(),
            received: end,
        }
    }

    /// The end of the complete records written: the offset to report to the master.
    pub fn offset(&self) -> i64 {
        self.end
    }

    /// Writes what of `data` (the master's bytes from `offset`) completes records. A frame
    /// that does not continue where the last ended is [`StoreError::ReplicaOffset`], with
    /// nothing written; the caller decides (reconnect, or cut back when the master is behind).
    pub fn push(&mut self, offset: i64, data: &[u8]) -> Result<()> {
        if offset != self.received {
            // An empty slave starts wherever the master does.
            let empty = self.store.commit_log.files().is_empty() && self.pending.is_empty();
            if !empty {
                return Err(StoreError::ReplicaOffset {
                    expected: self.received,
                    got: offset,
                });
            }
            self.end = offset;
            self.received = offset;
        }
        self.received += data.len() as i64;
        // Bytes inside a file's end filler (already written as its header) are dropped.
        let skip = usize::try_from(self.end + self.pending.len() as i64 - offset)
            .unwrap_or(0)
            .min(data.len());
        let data = &data[skip..];
        if data.is_empty() {
            return Ok(());
        }
        let (used, end) = if self.pending.is_empty() {
            let (used, end) = self.store.append_replica(self.end, data)?;
            self.pending.extend_from_slice(&data[used..]);
            (0, end)
        } else {
            self.pending.extend_from_slice(data);
            self.store.append_replica(self.end, &self.pending)?
        };
        self.pending.drain(..used.min(self.pending.len()));
        self.end = end;
        // A record can be no larger than a CommitLog file: more pending means a broken stream.
        if self.pending.len() > self.store.config().mapped_file_size_commit_log {
            return Err(StoreError::corrupt(
                "replicated CommitLog",
                format!(
                    "{} bytes from {} hold no complete record",
                    self.pending.len(),
                    self.end
                ),
            ));
        }
        Ok(())
    }
}
