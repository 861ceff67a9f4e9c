//! Consume-queue units: their 20-byte encoding, a file's run of them as read, and their
//! ext units resolved (see [`crate::consume_queue_ext`]).

use std::sync::Arc;

use bytes::Bytes;

use crate::consume_queue_ext::{is_ext_addr, ConsumeQueueExt, CqExtUnit};

/// Bytes per unit.
pub const CQ_UNIT_SIZE: usize = 20;

/// One consume-queue unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CqUnit {
    /// Where the record starts in the CommitLog.
    pub commit_log_offset: i64,
    /// The record's total size.
    pub size: i32,
    /// Tags hash (or delivery time for delayed messages).
    pub tags_code: i64,
}

impl CqUnit {
    /// Where the record ends in the CommitLog (saturating: a unit read from a damaged file may
    /// hold any numbers).
    pub fn end(&self) -> i64 {
        self.commit_log_offset.saturating_add(i64::from(self.size))
    }

    /// The gap filler.
    pub const BLANK: CqUnit = CqUnit {
        commit_log_offset: 0,
        size: i32::MAX,
        tags_code: 0,
    };

    /// The 20 bytes of this unit.
    pub fn encode(&self) -> [u8; CQ_UNIT_SIZE] {
        let mut out = [0u8; CQ_UNIT_SIZE];
        out[0..8].copy_from_slice(&self.commit_log_offset.to_be_bytes());
        out[8..12].copy_from_slice(&self.size.to_be_bytes());
        out[12..20].copy_from_slice(&self.tags_code.to_be_bytes());
        out
    }

    /// Parses 20 bytes (`buf` must hold at least 20).
    pub fn decode(buf: &[u8]) -> CqUnit {
        let mut o = [0u8; 8];
        o.copy_from_slice(&buf[0..8]);
        let mut t = [0u8; 8];
        t.copy_from_slice(&buf[12..20]);
        CqUnit {
            commit_log_offset: i64::from_be_bytes(o),
            size: i32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]),
            tags_code: i64::from_be_bytes(t),
        }
    }

    /// Whether this is a gap filler.
    pub fn is_blank(&self) -> bool {
        *self == CqUnit::BLANK
    }

    /// Whether recovery accepts this unit as written (RocketMQ's test: offset >= 0, size > 0).
    pub fn is_valid(&self) -> bool {
        self.commit_log_offset >= 0 && self.size > 0
    }
}

/// Units read from one file, starting at a queue offset; shares the file's memory.
#[derive(Debug, Clone)]
pub struct UnitBuffer {
    /// Queue offset of the first unit.
    pub start_offset: i64,
    pub(super) bytes: Bytes,
    pub(super) ext: Option<Arc<ConsumeQueueExt>>,
}

impl UnitBuffer {
    /// Number of units.
    pub fn len(&self) -> usize {
        self.bytes.len() / CQ_UNIT_SIZE
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Unit `i` of the buffer, with its real tags code.
    pub fn get(&self, i: usize) -> CqUnit {
        self.get_ext(i).0
    }

    /// Unit `i` as stored: its tags code may be an ext address (for readers that use only
    /// the offset and size, saving the ext look-up).
    pub fn get_raw(&self, i: usize) -> CqUnit {
        CqUnit::decode(&self.bytes[i * CQ_UNIT_SIZE..])
    }

    /// Unit `i` of the buffer with its ext unit, if it has one (its tags code is then the
    /// ext unit's; an address that does not resolve stays in the unit, as RocketMQ leaves it,
    /// and matches no tag but passes filters that cannot tell).
    pub fn get_ext(&self, i: usize) -> (CqUnit, Option<CqExtUnit>) {
        resolve(
            CqUnit::decode(&self.bytes[i * CQ_UNIT_SIZE..]),
            self.ext.as_deref(),
        )
    }
}

/// A unit with its ext unit looked up (see [`UnitBuffer::get_ext`]).
pub(super) fn resolve(
    mut unit: CqUnit,
    ext: Option<&ConsumeQueueExt>,
) -> (CqUnit, Option<CqExtUnit>) {
    if !is_ext_addr(unit.tags_code) {
        return (unit, None);
    }
    let found = ext.and_then(|e| e.get(unit.tags_code));
    if let Some(e) = &found {
        unit.tags_code = e.tags_code;
    }
    (unit, found)
}

/// What dispatch puts into a message's ext unit besides its tags code.
#[derive(Debug, Clone, Default)]
pub struct ExtInfo {
    /// The message's store time (ms).
    pub store_time: i64,
    /// Its filter bit map (empty: none).
    pub bit_map: Bytes,
}
