//! Delayed messages (RocketMQ's `ScheduleMessageService`).
//!
//! A put with `DELAY=n` is stored in `SCHEDULE_TOPIC_XXXX`, queue `n - 1`, with its real topic
//! and queue in `REAL_TOPIC`/`REAL_QID` and its delivery time as tags code. This service walks
//! each level's queue in order and, when a message is due, stores a copy on its real topic and
//! queue (without `DELAY`). Progress per level goes to `config/delayOffset.json`
//! (`{"offsetTable":{"1":5,...}}`, level -> next schedule offset).
//!
//! Delivered exactly once, across crashes too: each copy carries `SCHEDULE_ORIGIN=level:offset`,
//! and the file also records the CommitLog end at the time it was written; at start-up the
//! log after that point is scanned for copies, so a delivery made after the last save is
//! not repeated. (RocketMQ re-delivers up to ten seconds of delayed messages after a crash.)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use crate::commit_log::CommitLog;
use crate::consume_queue::ConsumeQueue;
use crate::error::{Result, StoreError};
use crate::io::Storage;
use rocketpy_protocol::message::java_hash;
use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::message::record::{self, Decoded, MessageToStore};
use rocketpy_protocol::topic::SCHEDULE_TOPIC;

/// Property marking a delivered copy with its origin (`level:scheduleOffset`).
pub const SCHEDULE_ORIGIN: &str = "SCHEDULE_ORIGIN";

#[derive(Debug, Default)]
struct State {
    /// level (1-based) -> next schedule queue offset to deliver.
    offsets: BTreeMap<i32, i64>,
    dirty: bool,
}

/// The delay delivery state.
#[derive(Debug)]
pub struct ScheduleService {
    path: PathBuf,
    levels: Vec<i64>,
    state: Mutex<State>,
    /// CommitLog end when the loaded file was written (`None`: unknown, e.g. a RocketMQ file).
    saved_at: Option<i64>,
}

/// Parses `{"offsetTable":{1:5,"2":7},"commitLogOffset":123}` (fastjson's unquoted integer
/// keys included) without a general JSON parser: the file holds integers only.
/// The offsets of a `delayOffset.json` text (a master's GET_ALL_DELAY_OFFSET answer).
pub fn parse_delay_offsets(text: &str) -> Option<BTreeMap<i32, i64>> {
    parse_offsets(text).map(|(offsets, _)| offsets)
}

fn parse_offsets(text: &str) -> Option<(BTreeMap<i32, i64>, Option<i64>)> {
    let table_at = text.find("\"offsetTable\"")?;
    let open = table_at + text[table_at..].find('{')?;
    let close = open + text[open..].find('}')?;
    let mut offsets = BTreeMap::new();
    for pair in text[open + 1..close]
        .split(',')
        .filter(|p| !p.trim().is_empty())
    {
        let (k, v) = pair.split_once(':')?;
        let level = k.trim().trim_matches('"').parse().ok()?;
        offsets.insert(level, v.trim().parse().ok()?);
    }
    let saved_at = text.find("\"commitLogOffset\"").and_then(|at| {
        let rest = &text[at + "\"commitLogOffset\"".len()..];
        let rest = rest.trim_start().strip_prefix(':')?.trim_start();
        let end = rest
            .find(|c: char| !c.is_ascii_digit() && c != '-')
            .unwrap_or(rest.len());
        rest[..end].parse().ok()
    });
    Some((offsets, saved_at))
}

impl ScheduleService {
    /// Loads `config/delayOffset.json` under `root` (missing: start at 0; empty or unreadable:
    /// an error).
    pub fn load(storage: &dyn Storage, root: &Path, levels: Vec<i64>) -> Result<Self> {
        let path = root.join("config").join("delayOffset.json");
        let (offsets, saved_at) = match storage.read(&path).map_err(|e| StoreError::io(&path, e))? {
            None => (BTreeMap::new(), None),
            // Written atomically, so never torn: an empty or unreadable file was damaged from
            // outside. Starting from 0 would deliver every waiting message again, so the
            // broker refuses to start and says what to do.
            Some(bytes) => parse_offsets(&String::from_utf8_lossy(&bytes)).ok_or_else(|| {
                StoreError::Config {
                    path: path.clone(),
                    reason: "expected {\"offsetTable\":{level:offset,...}}; restore the file, \
                             or remove it to deliver the delayed messages of every level again \
                             from the first"
                        .into(),
                }
            })?,
        };
        Ok(ScheduleService {
            path,
            levels,
            state: Mutex::new(State {
                offsets,
                dirty: false,
            }),
            saved_at,
        })
    }

    /// The delay of `level` in ms.
    pub fn delay_of(&self, level: i32) -> Option<i64> {
        usize::try_from(level - 1)
            .ok()
            .and_then(|i| self.levels.get(i))
            .copied()
    }

    /// Number of levels.
    pub fn max_level(&self) -> i32 {
        self.levels.len() as i32
    }

    /// Next schedule offset per level.
    pub fn offsets(&self) -> BTreeMap<i32, i64> {
        self.state.lock().offsets.clone()
    }

    /// Advances each level past copies found in the CommitLog after the last save.
    pub fn recover(&self, commit_log: &CommitLog) {
        let Some(mut offset) = self.saved_at else {
            return;
        };
        offset = offset.max(commit_log.min_offset());
        let mut state = self.state.lock();
        while offset < commit_log.max_offset() {
            let Some(data) = commit_log.read_from(offset) else {
                offset = commit_log.skip_unreadable(offset);
                continue;
            };
            let mut pos = 0usize;
            let mut jumped = false;
            while pos < data.len() {
                match record::decode(&data[pos..], false) {
                    Ok(Decoded::Message(v)) => {
                        if let Some((level, off)) = properties::find(v.properties, SCHEDULE_ORIGIN)
                            .and_then(|o| o.split_once(':'))
                            .and_then(|(l, o)| {
                                Some((l.parse::<i32>().ok()?, o.parse::<i64>().ok()?))
                            })
                        {
                            let next = state.offsets.entry(level).or_insert(0);
                            if *next <= off {
                                *next = off + 1;
                                state.dirty = true;
                            }
                        }
                        pos += v.total_size as usize;
                    }
                    _ => {
                        offset = commit_log.skip_unreadable(offset + pos as i64);
                        jumped = true;
                        break;
                    }
                }
            }
            if !jumped {
                offset += data.len() as i64;
            }
        }
    }

    /// Stores every due message of every level on its real topic (via `put`); returns the
    /// earliest time a message that is not yet due will be.
    pub fn deliver_due(
        &self,
        now: i64,
        queue: impl Fn(i32) -> Option<std::sync::Arc<ConsumeQueue>>,
        commit_log: &CommitLog,
        put: impl Fn(MessageToStore) -> Result<()>,
    ) -> Option<i64> {
        let mut state = self.state.lock();
        let mut next_due: Option<i64> = None;
        for level in 1..=self.max_level() {
            let Some(cq) = queue(level - 1) else { continue };
            let delay = self.delay_of(level).unwrap_or(0);
            let mut offset = state
                .offsets
                .get(&level)
                .copied()
                .unwrap_or(0)
                .max(cq.min_offset());
            let start = offset;
            while offset < cq.max_offset() {
                let Some(unit) = cq.get(offset) else { break };
                if unit.is_blank() {
                    offset += 1;
                    continue;
                }
                // A delivery time further away than the level's delay comes from a clock that
                // moved back: deliver now rather than hold the queue (RocketMQ does the same).
                let due = if unit.tags_code > now + delay {
                    now
                } else {
                    unit.tags_code
                };
                if due > now {
                    next_due = Some(next_due.map_or(due, |d: i64| d.min(due)));
                    break;
                }
                let Some(bytes) = commit_log.read(unit.commit_log_offset, unit.size) else {
                    offset += 1; // removed by retention or damaged: nothing to deliver
                    continue;
                };
                let msg = match record::decode(&bytes, false) {
                    Ok(Decoded::Message(v)) => copy_for_delivery(&v, level, offset),
                    _ => None,
                };
                let Some(msg) = msg else {
                    tracing::warn!(
                        level,
                        offset,
                        "schedule message without a valid REAL_TOPIC/REAL_QID skipped"
                    );
                    offset += 1;
                    continue;
                };
                if let Err(e) = put(msg) {
                    tracing::warn!(level, offset, error = %e, "delayed message not delivered yet; retrying");
                    next_due = Some(now + 1000);
                    break;
                }
                offset += 1;
            }
            if offset != start {
                state.offsets.insert(level, offset);
                state.dirty = true;
            }
        }
        next_due
    }

    /// Replaces the offsets (a slave taking its master's); saved by the next `persist`.
    pub fn replace_offsets(&self, offsets: BTreeMap<i32, i64>) {
        let mut state = self.state.lock();
        if state.offsets != offsets {
            state.offsets = offsets;
            state.dirty = true;
        }
    }

    /// Writes the offsets (if they changed) with the CommitLog end `commit_log_end`, which
    /// must be read while no delivery runs; taking the state lock guarantees that.
    pub fn persist(
        &self,
        storage: &dyn Storage,
        commit_log_end: impl Fn() -> i64,
        force: bool,
    ) -> Result<()> {
        let mut state = self.state.lock();
        if !state.dirty && !force {
            return Ok(());
        }
        let table: Vec<String> = state
            .offsets
            .iter()
            .map(|(l, o)| format!("\"{l}\":{o}"))
            .collect();
        let text = format!(
            "{{\"offsetTable\":{{{}}},\"commitLogOffset\":{}}}",
            table.join(","),
            commit_log_end()
        );
        if let Some(dir) = self.path.parent() {
            storage
                .create_dir_all(dir)
                .map_err(|e| StoreError::io(dir, e))?;
        }
        storage
            .write_atomic(&self.path, text.as_bytes())
            .map_err(|e| StoreError::io(&self.path, e))?;
        state.dirty = false;
        Ok(())
    }
}

/// The copy of a schedule message to store on its real topic.
fn copy_for_delivery(
    v: &record::RecordView<'_>,
    level: i32,
    offset: i64,
) -> Option<MessageToStore> {
    let topic = properties::find(v.properties, keys::REAL_TOPIC)?.to_owned();
    let queue_id = properties::find(v.properties, keys::REAL_QUEUE_ID)?
        .parse()
        .ok()?;
    let origin = format!("{level}:{offset}");
    let mut props: Vec<(&str, &str)> = properties::pairs(v.properties)
        .filter(|(k, _)| *k != keys::DELAY_TIME_LEVEL && *k != SCHEDULE_ORIGIN)
        .collect();
    props.push((SCHEDULE_ORIGIN, &origin));
    let properties = properties::encode(props);
    let tags_code = java_hash::tags_code(properties::find(&properties, keys::TAGS));
    Some(MessageToStore {
        topic,
        queue_id,
        flag: v.flag,
        body: bytes::Bytes::copy_from_slice(v.body),
        properties,
        tags_code,
        sys_flag: v.sys_flag,
        born_timestamp: v.born_timestamp,
        born_host: v.born_host,
        store_host: v.store_host,
        reconsume_times: v.reconsume_times,
        prepared_transaction_offset: v.prepared_transaction_offset,
    })
}

/// Whether `topic` is the schedule topic.
pub fn is_schedule_topic(topic: &str) -> bool {
    topic == SCHEDULE_TOPIC
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A damaged file would restart every level from its first message (each waiting message
    /// delivered again): refused with what to do instead.
    #[test]
    fn a_damaged_file_is_refused_not_read_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("config")).unwrap();
        for damaged in [&b""[..], b"  ", b"{\"offsetTable\":{1:"] {
            std::fs::write(dir.path().join("config").join("delayOffset.json"), damaged).unwrap();
            let e = ScheduleService::load(&crate::io::FsStorage, dir.path(), vec![1000])
                .err()
                .unwrap();
            assert!(e.to_string().contains("restore the file"), "{e}");
        }
        std::fs::remove_file(dir.path().join("config").join("delayOffset.json")).unwrap();
        assert!(ScheduleService::load(&crate::io::FsStorage, dir.path(), vec![1000]).is_ok());
    }

    #[test]
    fn parses_ours_and_fastjson() {
        let (o, at) =
            parse_offsets(r#"{"offsetTable":{"1":5,"3":7},"commitLogOffset":99}"#).unwrap();
        assert_eq!((o[&1], o[&3], at), (5, 7, Some(99)));
        let (o, at) = parse_offsets(r#"{"offsetTable":{1:12, 2 : 0}}"#).unwrap();
        assert_eq!((o[&1], o[&2], at), (12, 0, None));
        let (o, _) = parse_offsets(r#"{"offsetTable":{}}"#).unwrap();
        assert!(o.is_empty());
        assert!(parse_offsets("garbage").is_none());
        assert!(parse_offsets(r#"{"offsetTable":{"x":1}}"#).is_none());
    }
}
