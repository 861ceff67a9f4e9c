//! The epoch table of controller mode (RocketMQ 5.x's `EpochFileCache`): for each master epoch
//! this broker's CommitLog has seen, the offset where that epoch's bytes start. Replicas compare
//! these tables at the HA handshake to find the last offset both sides agree on, and cut what
//! lies past it. The file that keeps it (and its `.bak`) is the broker's
//! (`rocketpy_broker::ha::epoch_file`); this is the table and its text.
//!
//! The text (`storePathEpochFile`), with `\n` line ends:
//!
//! ```text
//! <number of entries>
//! <crc32 of the entry lines, each with its "\n", masked with 0x7FFFFFFF; 0 = not checked>
//! <epoch>-<startOffset>
//! ...
//! ```
//!
//! An entry's end is the next entry's start; the last one's is `i64::MAX`.
//!
//! What must stay true: epochs and start offsets strictly increase (an append that does not is
//! refused), and reading is linear and bounded ([`MAX_FILE_BYTES`], [`MAX_ENTRIES`]).

use std::collections::BTreeMap;

/// The largest epoch file read (an entry is at most ~31 bytes: 100 000 entries fit).
pub const MAX_FILE_BYTES: usize = 4 << 20;

/// The most entries a table holds: one per master change of the broker group's life.
pub const MAX_ENTRIES: usize = 100_000;

/// One epoch: its number and the CommitLog range its master wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEntry {
    /// The master epoch (from the controller).
    pub epoch: i32,
    /// The CommitLog offset of the epoch's first byte.
    pub start_offset: i64,
    /// The first offset past the epoch (the next epoch's start; `i64::MAX` for the last).
    pub end_offset: i64,
}

/// The table in memory, epochs in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EpochCache {
    entries: BTreeMap<i32, EpochEntry>,
}

impl EpochCache {
    /// A table of `(epoch, start offset)` pairs, ends derived from the next start. Refuses
    /// pairs that do not strictly increase in both.
    pub fn from_pairs(pairs: &[(i32, i64)]) -> Result<EpochCache, String> {
        let mut cache = EpochCache::default();
        for &(epoch, start) in pairs {
            if !cache.append(epoch, start) {
                return Err(format!(
                    "entry {epoch}-{start} does not follow the one before"
                ));
            }
        }
        Ok(cache)
    }

    /// Adds an epoch starting at `start_offset`; false (nothing changed) unless both the
    /// epoch and the offset are greater than the last entry's.
    pub fn append(&mut self, epoch: i32, start_offset: i64) -> bool {
        if let Some(last) = self.entries.values_mut().next_back() {
            if last.epoch >= epoch || last.start_offset >= start_offset {
                return false;
            }
            last.end_offset = start_offset;
        }
        let entry = EpochEntry {
            epoch,
            start_offset,
            end_offset: i64::MAX,
        };
        self.entries.insert(epoch, entry);
        true
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> Vec<EpochEntry> {
        self.entries.values().copied().collect()
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The newest epoch, -1 when there is none (RocketMQ's `lastEpoch`).
    pub fn last_epoch(&self) -> i32 {
        self.entries.keys().next_back().copied().unwrap_or(-1)
    }

    /// The entry of `epoch`.
    pub fn entry(&self, epoch: i32) -> Option<EpochEntry> {
        self.entries.get(&epoch).copied()
    }

    /// The entry whose range holds `offset`.
    pub fn entry_at(&self, offset: i64) -> Option<EpochEntry> {
        self.entries
            .values()
            .find(|e| e.start_offset <= offset && offset < e.end_offset)
            .copied()
    }

    /// The first entry after `epoch`.
    pub fn next_entry(&self, epoch: i32) -> Option<EpochEntry> {
        let after = epoch.checked_add(1)?;
        self.entries.range(after..).next().map(|(_, e)| *e)
    }

    /// The last offset this table and `other` (the master's) agree on: from the newest local
    /// epoch down, the first epoch both have with the same start, cut at the smaller of the two
    /// ends; -1 when they share no epoch (RocketMQ's `findConsistentPoint`).
    pub fn consistent_point(&self, other: &EpochCache) -> i64 {
        for local in self.entries.values().rev() {
            if let Some(theirs) = other.entry(local.epoch) {
                if theirs.start_offset == local.start_offset {
                    return local.end_offset.min(theirs.end_offset);
                }
            }
        }
        -1
    }

    /// Ends the last entry at `end_offset` (where this broker's CommitLog ends while it follows
    /// another master), when that is not before its start.
    pub fn set_last_end_offset(&mut self, end_offset: i64) {
        if let Some(last) = self.entries.values_mut().next_back() {
            if last.start_offset <= end_offset {
                last.end_offset = end_offset;
            }
        }
    }

    /// Removes the entries of epochs `>= epoch`; the new last entry ends at `i64::MAX`.
    pub fn truncate_suffix_by_epoch(&mut self, epoch: i32) {
        self.entries.retain(|_, e| e.epoch < epoch);
        self.reopen_last();
    }

    /// Removes the entries starting at or past `offset` (the CommitLog was cut there).
    pub fn truncate_suffix_by_offset(&mut self, offset: i64) {
        self.entries.retain(|_, e| e.start_offset < offset);
        self.reopen_last();
    }

    /// Removes the entries ending at or before `offset` (the CommitLog's head was deleted).
    pub fn truncate_prefix_by_offset(&mut self, offset: i64) {
        self.entries.retain(|_, e| e.end_offset > offset);
    }

    fn reopen_last(&mut self) {
        if let Some(last) = self.entries.values_mut().next_back() {
            last.end_offset = i64::MAX;
        }
    }

    /// The file's text.
    pub fn encode(&self) -> String {
        let lines: String = self
            .entries
            .values()
            .map(|e| format!("{}-{}\n", e.epoch, e.start_offset))
            .collect();
        format!(
            "{}\n{}\n{lines}",
            self.entries.len(),
            masked_crc(lines.as_bytes())
        )
    }

    /// Reads the file's text: the count and the checksum must match the entry lines (a
    /// checksum of 0 is not checked, as in RocketMQ).
    pub fn parse(bytes: &[u8]) -> Result<EpochCache, String> {
        if bytes.len() > MAX_FILE_BYTES {
            return Err(format!(
                "{} bytes, over the {MAX_FILE_BYTES} read",
                bytes.len()
            ));
        }
        let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_owned())?;
        let mut lines = text.lines();
        let mut header = |what: &str| -> Result<i64, String> {
            let line = lines.next().ok_or(format!("no {what} line"))?;
            line.trim()
                .parse::<i64>()
                .map_err(|_| format!("bad {what} line {line:?}"))
        };
        let count = header("count")?;
        let crc = header("checksum")?;
        if !(0..=MAX_ENTRIES as i64).contains(&count) {
            return Err(format!("entry count {count} outside 0..={MAX_ENTRIES}"));
        }
        let mut checked = String::new();
        let mut pairs = Vec::with_capacity(count as usize);
        for line in lines {
            if pairs.len() > MAX_ENTRIES {
                return Err(format!("more than {MAX_ENTRIES} entries"));
            }
            checked.push_str(line);
            checked.push('\n');
            let (epoch, start) = line
                .split_once('-')
                .and_then(|(e, s)| Some((e.parse::<i32>().ok()?, s.parse::<i64>().ok()?)))
                .ok_or(format!("bad entry line {line:?}"))?;
            pairs.push((epoch, start));
        }
        if pairs.len() as i64 != count {
            return Err(format!("{count} entries announced, {} found", pairs.len()));
        }
        if crc != 0 && crc != i64::from(masked_crc(checked.as_bytes())) {
            return Err("the entries' checksum does not match".to_owned());
        }
        EpochCache::from_pairs(&pairs)
    }
}

/// Java's `UtilAll.crc32`: CRC-32 (IEEE) masked to 31 bits.
fn masked_crc(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes) & 0x7FFF_FFFF
}

#[cfg(test)]
#[path = "epoch_cache_tests.rs"]
mod tests;
