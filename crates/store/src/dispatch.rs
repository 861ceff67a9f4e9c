//! What a written record hands on to its consume queue and the index ([`DispatchRequest`]),
//! shared by the commit log's put and recovery and the consume-queue table.

use rocketpy_protocol::flag::message as sys_flag;

/// What the consume queue (and index) need from a freshly written record.
#[derive(Debug, Clone)]
pub struct DispatchRequest<'a> {
    pub topic: &'a str,
    pub queue_id: i32,
    pub commit_log_offset: i64,
    pub msg_size: i32,
    pub tags_code: i64,
    pub store_timestamp: i64,
    pub consume_queue_offset: i64,
    pub properties: &'a str,
    pub sys_flag: i32,
}

impl DispatchRequest<'_> {
    /// Whether the record belongs in a consume queue (not a prepared or rolled-back half
    /// message).
    pub fn is_consumable(&self) -> bool {
        consumable(self.sys_flag)
    }
}

/// Whether a record with `sys_flag` belongs in a consume queue.
pub(crate) fn consumable(sys_flag: i32) -> bool {
    matches!(
        sys_flag::transaction_type(sys_flag),
        sys_flag::TRANSACTION_NOT_TYPE | sys_flag::TRANSACTION_COMMIT_TYPE
    )
}

/// Consume-queue units a put will add to one queue: `(topic, queue id, first offset, count)`.
pub type QueueUnits<'a> = (&'a str, i32, i64, usize);

/// Computes a message's filter bit map at dispatch (the broker's SQL92 filters, RocketMQ's
/// `CommitLogDispatcherCalcBitMap`), stored in its consume-queue ext unit. Called under the
/// CommitLog's put lock for every message of a store with ext files: it must be cheap when
/// a topic has no filters.
pub trait BitMapCalculator: Send + Sync {
    /// The bit map of a message of `topic` with these stored properties; None when the
    /// topic has no filters.
    fn bit_map(&self, topic: &str, properties: &str) -> Option<Vec<u8>>;
}
