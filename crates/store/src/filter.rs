//! What a read keeps (RocketMQ's `MessageFilter`): a consume-queue unit is first judged by
//! what the queue holds — its tags code, and with the consume-queue ext its filter bit map —
//! and only a unit that passes is read from the CommitLog and judged by the record itself
//! (its properties, for SQL92).
//!
//! What must stay true: `matches_unit` may answer true for a message that does not match (a
//! hash collision, a bloom false positive) but never false for one that does; only
//! `matches_record` decides.

use crate::consume_queue_ext::CqExtUnit;

/// Decides which messages of a queue a read returns.
pub trait MessageFilter {
    /// Whether a unit with this tags code (and ext unit, when the queue has one: its store
    /// time and filter bit map) may match; false skips it without reading the CommitLog.
    fn matches_unit(&self, tags_code: i64, ext: Option<&CqExtUnit>) -> bool;

    /// Whether the stored record (its exact bytes) matches. Called only for units that
    /// passed [`MessageFilter::matches_unit`].
    fn matches_record(&self, _record: &[u8]) -> bool {
        true
    }
}

/// A tags-code predicate is a filter of units only (every record it lets through is kept).
impl<F: Fn(i64) -> bool> MessageFilter for F {
    fn matches_unit(&self, tags_code: i64, _ext: Option<&CqExtUnit>) -> bool {
        self(tags_code)
    }
}
