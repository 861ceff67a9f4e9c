//! The read path result (`GetMessageResult`) and its statuses.

use bytes::Bytes;

/// Outcome of a read from a consume queue (RocketMQ's `GetMessageStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GetMessageStatus {
    /// At least one message returned.
    Found,
    /// Messages exist but none matched the filter in the scanned range.
    NoMatchedMessage,
    /// The CommitLog file was deleted under the reader.
    MessageWasRemoving,
    /// The consume queue has no file at the offset.
    OffsetFoundNull,
    /// The offset is past the end by more than one.
    OffsetOverflowBadly,
    /// The offset is exactly the end: nothing new yet.
    OffsetOverflowOne,
    /// The offset is below the minimum (retention removed it).
    OffsetTooSmall,
    /// No such topic queue.
    NoMatchedLogicQueue,
    /// The queue exists but is empty.
    NoMessageInQueue,
}

/// Messages read from one queue.
#[derive(Debug, Clone)]
pub struct GetMessageResult {
    /// What happened.
    pub status: GetMessageStatus,
    /// Where the next read should start.
    pub next_begin_offset: i64,
    /// The queue's minimum offset.
    pub min_offset: i64,
    /// The queue's maximum offset (one past the last).
    pub max_offset: i64,
    /// The records, each sharing the mapped file's memory.
    pub messages: Vec<Bytes>,
    /// Queue offsets of `messages`.
    pub queue_offsets: Vec<i64>,
    /// Sum of record sizes.
    pub total_bytes: usize,
    /// The data is so far behind that it is likely no longer in the page cache.
    pub suggest_pulling_from_slave: bool,
}

impl GetMessageResult {
    pub(crate) fn empty(
        status: GetMessageStatus,
        next_begin_offset: i64,
        min_offset: i64,
        max_offset: i64,
    ) -> Self {
        GetMessageResult {
            status,
            next_begin_offset,
            min_offset,
            max_offset,
            messages: Vec::new(),
            queue_offsets: Vec::new(),
            total_bytes: 0,
            suggest_pulling_from_slave: false,
        }
    }

    /// The records concatenated, exactly as stored (a PULL_MESSAGE body).
    pub fn concat(&self) -> Bytes {
        match self.messages.len() {
            0 => Bytes::new(),
            1 => self.messages[0].clone(),
            _ => {
                let mut out = Vec::with_capacity(self.total_bytes);
                for m in &self.messages {
                    out.extend_from_slice(m);
                }
                out.into()
            }
        }
    }
}
