//! The Raft log, vote and commit position of one controller, durable under its store
//! directory (`controllerStorePath`):
//!
//! - `raft-log`: append-only framed records ([`super::files`]), each the JSON of a
//!   [`LogRecord`]: log entries, and at most one leading "purged up to" marker.
//! - `vote`, `committed`: one framed record each, replaced atomically.
//!
//! Every entry is also held in memory (the controller's log is small and openraft purges it
//! after each snapshot), so reads never touch the disk.
//!
//! What must stay true:
//! - `append` reports an entry flushed only after `fdatasync` of the log file; `save_vote`
//!   returns only after the vote file is durable (a node must never vote twice in a term).
//! - Entries in the file are consecutive; `truncate` cuts the file at the first removed
//!   entry; `purge` rewrites the file atomically with the marker first, so a crash leaves the
//!   old or the new file, never a hole.
//! - Opening never panics: a torn last record is cut off and reported in [`LogOpenReport`];
//!   damage anywhere else refuses to open ([`StoreError`]), because cutting there could drop
//!   entries this node acknowledged to a leader.
//! - The committed position is only a hint that lets a restarted node apply sooner: a damaged
//!   `committed` file is reported and read as unknown.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::fs::{File, OpenOptions};
use std::io::{self, Seek, Write};
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{OptionalSend, RaftLogReader, StorageIOError};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::files::{self, Tail};
use super::types::{Entry, LogId, StorageError, TypeConfig, Vote};

const LOG_FILE: &str = "raft-log";
const VOTE_FILE: &str = "vote";
const COMMITTED_FILE: &str = "committed";

/// Why a store directory could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("I/O error on {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path} is damaged: {reason}")]
    Corrupt { path: PathBuf, reason: String },
}

impl StoreError {
    fn io(path: &Path, source: io::Error) -> Self {
        Self::Io {
            path: path.to_owned(),
            source,
        }
    }

    fn corrupt(path: &Path, reason: impl Into<String>) -> Self {
        Self::Corrupt {
            path: path.to_owned(),
            reason: reason.into(),
        }
    }
}

/// What opening the log found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogOpenReport {
    /// Entries read.
    pub entries: usize,
    /// Bytes of a torn last record that were cut off, if any.
    pub torn_tail_bytes: Option<u64>,
    /// The `committed` file was damaged and is ignored.
    pub committed_ignored: bool,
}

/// One record of the log file.
#[derive(Serialize, Deserialize)]
enum LogRecord {
    /// Everything up to this log id is in a snapshot and was dropped from the file.
    Purged(LogId),
    Entry(Entry),
}

/// The record of an entry without cloning it (serialized exactly as [`LogRecord::Entry`]).
#[derive(Serialize)]
enum LogRecordRef<'a> {
    Entry(&'a Entry),
}

struct LogInner {
    dir: PathBuf,
    file: File,
    /// The file's length: where the next record goes.
    file_len: u64,
    /// index → (offset of its record, entry).
    entries: BTreeMap<u64, (u64, Entry)>,
    last_purged: Option<LogId>,
    vote: Option<Vote>,
    committed: Option<LogId>,
}

/// The log store; clones share it (a clone is also the log reader openraft asks for).
#[derive(Clone)]
pub struct LogStore {
    inner: Arc<Mutex<LogInner>>,
}

fn json<T: Serialize>(value: &T) -> io::Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(io::Error::other)
}

fn io_err(e: &io::Error) -> StorageError {
    StorageIOError::write_logs(e).into()
}

impl LogStore {
    /// Opens (or creates) the log under `dir`, cutting a torn tail.
    pub fn open(dir: &Path) -> Result<(Self, LogOpenReport), StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
        let mut report = LogOpenReport::default();

        let vote_path = dir.join(VOTE_FILE);
        let vote = files::read_single_record(&vote_path)
            .map_err(|e| StoreError::corrupt(&vote_path, e.to_string()))?
            .map(|bytes| serde_json::from_slice::<Vote>(&bytes))
            .transpose()
            .map_err(|e| StoreError::corrupt(&vote_path, e.to_string()))?;

        let committed_path = dir.join(COMMITTED_FILE);
        let committed = match files::read_single_record(&committed_path)
            .map_err(|e| e.to_string())
            .and_then(|b| {
                b.map(|b| serde_json::from_slice::<LogId>(&b))
                    .transpose()
                    .map_err(|e| e.to_string())
            }) {
            Ok(c) => c,
            Err(reason) => {
                tracing::warn!(path = %committed_path.display(), %reason, "ignoring a damaged commit position");
                report.committed_ignored = true;
                None
            }
        };

        let log_path = dir.join(LOG_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&log_path)
            .map_err(|e| StoreError::io(&log_path, e))?;
        // The whole log is read into memory anyway; bound it by what memory should hold.
        let data = files::read_bounded(&log_path, 1 << 30)
            .map_err(|e| StoreError::io(&log_path, e))?
            .unwrap_or_default();
        let (records, tail) = files::parse_records(&data);
        let mut entries = BTreeMap::new();
        let mut last_purged: Option<LogId> = None;
        for (offset, payload) in records {
            let record: LogRecord = serde_json::from_slice(payload)
                .map_err(|e| StoreError::corrupt(&log_path, format!("record at {offset}: {e}")))?;
            match record {
                LogRecord::Purged(id) if entries.is_empty() && last_purged.is_none() => {
                    last_purged = Some(id);
                }
                LogRecord::Purged(_) => {
                    return Err(StoreError::corrupt(
                        &log_path,
                        format!("purge marker at {offset} is not the first record"),
                    ))
                }
                LogRecord::Entry(entry) => {
                    // `None` inside: nothing follows index u64::MAX (damage, never a real log).
                    let expected = entries
                        .keys()
                        .next_back()
                        .copied()
                        .or(last_purged.map(|p| p.index))
                        .map(|i| i.checked_add(1));
                    if expected.is_some_and(|e| e != Some(entry.log_id.index)) {
                        return Err(StoreError::corrupt(
                            &log_path,
                            format!(
                                "entry {} at {offset} does not follow {expected:?}",
                                entry.log_id.index
                            ),
                        ));
                    }
                    entries.insert(entry.log_id.index, (offset, entry));
                }
            }
        }
        let mut file_len = data.len() as u64;
        match tail {
            Tail::Clean => {}
            Tail::Torn { offset, bytes } => {
                tracing::warn!(path = %log_path.display(), offset, bytes, "cutting a torn record off the raft log");
                file.set_len(offset)
                    .and_then(|()| file.sync_all())
                    .map_err(|e| StoreError::io(&log_path, e))?;
                file_len = offset;
                report.torn_tail_bytes = Some(bytes);
            }
            Tail::Corrupt { offset, reason } => {
                return Err(StoreError::corrupt(
                    &log_path,
                    format!("record at {offset}: {reason}"),
                ))
            }
        }
        file.seek(io::SeekFrom::Start(file_len))
            .map_err(|e| StoreError::io(&log_path, e))?;
        report.entries = entries.len();
        let inner = LogInner {
            dir: dir.to_owned(),
            file,
            file_len,
            entries,
            last_purged,
            vote,
            committed,
        };
        Ok((
            Self {
                inner: Arc::new(Mutex::new(inner)),
            },
            report,
        ))
    }
}

impl LogInner {
    /// Cuts every entry from `index` on, in memory and in the file.
    fn cut_from(&mut self, index: u64) -> io::Result<()> {
        let Some((offset, _)) = self.entries.range(index..).next().map(|(_, v)| v) else {
            return Ok(());
        };
        let offset = *offset;
        self.file.set_len(offset)?;
        self.file.sync_data()?;
        self.file.seek(io::SeekFrom::Start(offset))?;
        self.file_len = offset;
        self.entries.split_off(&index);
        Ok(())
    }

    /// Appends entries, fdatasynced before it returns.
    fn append(&mut self, new: Vec<Entry>) -> io::Result<()> {
        if let Some(first) = new.first() {
            // openraft truncates conflicts first; this keeps the file consecutive regardless.
            self.cut_from(first.log_id.index)?;
        }
        let mut buf = Vec::new();
        let mut placed = Vec::with_capacity(new.len());
        for entry in new {
            let offset = self.file_len + buf.len() as u64;
            buf.extend_from_slice(&files::frame(&json(&LogRecordRef::Entry(&entry))?)?);
            placed.push((offset, entry));
        }
        let written = self
            .file
            .write_all(&buf)
            .and_then(|()| self.file.sync_data());
        if let Err(e) = written {
            // Leave no partial record behind for the next append to follow.
            let _ = self.file.set_len(self.file_len);
            let _ = self.file.seek(io::SeekFrom::Start(self.file_len));
            return Err(e);
        }
        self.file_len += buf.len() as u64;
        for (offset, entry) in placed {
            self.entries.insert(entry.log_id.index, (offset, entry));
        }
        Ok(())
    }

    /// Drops entries up to `log_id` and rewrites the file with the marker first.
    fn purge(&mut self, log_id: LogId) -> io::Result<()> {
        if self.last_purged.is_some_and(|p| p.index >= log_id.index) {
            return Ok(());
        }
        // Nothing in memory changes until the new file is in place.
        let mut buf = files::frame(&json(&LogRecord::Purged(log_id))?)?;
        let mut offsets = Vec::new();
        for (index, (_, entry)) in self.entries.range(log_id.index + 1..) {
            offsets.push((*index, buf.len() as u64));
            buf.extend_from_slice(&files::frame(&json(&LogRecordRef::Entry(entry))?)?);
        }
        files::write_atomic(&self.dir, LOG_FILE, &buf)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(self.dir.join(LOG_FILE))?;
        file.seek(io::SeekFrom::Start(buf.len() as u64))?;
        self.file = file;
        self.file_len = buf.len() as u64;
        let mut kept = self.entries.split_off(&(log_id.index + 1));
        for (index, offset) in offsets {
            if let Some(slot) = kept.get_mut(&index) {
                slot.0 = offset;
            }
        }
        self.entries = kept;
        self.last_purged = Some(log_id);
        Ok(())
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        let inner = self.inner.lock();
        Ok(inner
            .entries
            .range(range)
            .map(|(_, (_, e))| e.clone())
            .collect())
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError> {
        let inner = self.inner.lock();
        let last = inner
            .entries
            .values()
            .next_back()
            .map(|(_, e)| e.log_id)
            .or(inner.last_purged);
        Ok(LogState {
            last_purged_log_id: inner.last_purged,
            last_log_id: last,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), StorageError> {
        let mut inner = self.inner.lock();
        json(vote)
            .and_then(|b| files::frame(&b))
            .and_then(|b| files::write_atomic(&inner.dir, VOTE_FILE, &b))
            .map_err(|e| StorageError::from(StorageIOError::write_vote(&e)))?;
        inner.vote = Some(*vote);
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, StorageError> {
        Ok(self.inner.lock().vote)
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        let mut inner = self.inner.lock();
        if let Some(c) = committed {
            json(&c)
                .and_then(|b| files::frame(&b))
                .and_then(|b| files::write_atomic(&inner.dir, COMMITTED_FILE, &b))
                .map_err(|e| io_err(&e))?;
        }
        inner.committed = committed;
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        Ok(self.inner.lock().committed)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let result = self.inner.lock().append(entries.into_iter().collect());
        match result {
            Ok(()) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                let err = io_err(&e);
                callback.log_io_completed(Err(e));
                Err(err)
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        self.inner
            .lock()
            .cut_from(log_id.index)
            .map_err(|e| io_err(&e))
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        self.inner.lock().purge(log_id).map_err(|e| io_err(&e))
    }
}

#[cfg(test)]
mod tests {
    use openraft::{CommittedLeaderId, EntryPayload};

    use super::*;

    fn entry(index: u64) -> Entry {
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Blank,
        }
    }

    fn record(r: &LogRecord) -> Vec<u8> {
        files::frame(&json(r).unwrap()).unwrap()
    }

    fn write_log(dir: &Path, records: &[LogRecord]) -> Vec<u8> {
        let bytes: Vec<u8> = records.iter().flat_map(record).collect();
        std::fs::write(dir.join(LOG_FILE), &bytes).unwrap();
        bytes
    }

    #[tokio::test]
    async fn opens_an_empty_directory() {
        let dir = tempfile::tempdir().unwrap();
        let (mut store, report) = LogStore::open(&dir.path().join("new")).unwrap();
        assert_eq!(report, LogOpenReport::default());
        let state = store.get_log_state().await.unwrap();
        assert_eq!((state.last_purged_log_id, state.last_log_id), (None, None));
        assert_eq!(store.read_vote().await.unwrap(), None);
    }

    #[tokio::test]
    async fn cuts_a_torn_tail_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let good = write_log(
            dir.path(),
            &[
                LogRecord::Purged(entry(4).log_id),
                LogRecord::Entry(entry(5)),
                LogRecord::Entry(entry(6)),
            ],
        );
        let torn = record(&LogRecord::Entry(entry(7)));
        let mut bytes = good.clone();
        bytes.extend_from_slice(&torn[..torn.len() - 3]);
        std::fs::write(dir.path().join(LOG_FILE), &bytes).unwrap();

        let (mut store, report) = LogStore::open(dir.path()).unwrap();
        assert_eq!(report.entries, 2);
        assert_eq!(report.torn_tail_bytes, Some(torn.len() as u64 - 3));
        assert_eq!(
            std::fs::metadata(dir.path().join(LOG_FILE)).unwrap().len(),
            good.len() as u64
        );
        let state = store.get_log_state().await.unwrap();
        assert_eq!(state.last_purged_log_id, Some(entry(4).log_id));
        assert_eq!(state.last_log_id, Some(entry(6).log_id));
        let read = store.try_get_log_entries(5..7).await.unwrap();
        assert_eq!(read.len(), 2);
        drop(store);
        let (_, again) = LogStore::open(dir.path()).unwrap();
        assert_eq!(again.torn_tail_bytes, None);
    }

    #[test]
    fn refuses_logs_that_are_not_consecutive() {
        let dir = tempfile::tempdir().unwrap();
        write_log(
            dir.path(),
            &[LogRecord::Entry(entry(1)), LogRecord::Entry(entry(3))],
        );
        assert!(matches!(
            LogStore::open(dir.path()),
            Err(StoreError::Corrupt { .. })
        ));
        write_log(
            dir.path(),
            &[
                LogRecord::Entry(entry(1)),
                LogRecord::Purged(entry(1).log_id),
            ],
        );
        assert!(matches!(
            LogStore::open(dir.path()),
            Err(StoreError::Corrupt { .. })
        ));
        std::fs::write(
            dir.path().join(LOG_FILE),
            files::frame(b"{not json").unwrap(),
        )
        .unwrap();
        assert!(matches!(
            LogStore::open(dir.path()),
            Err(StoreError::Corrupt { .. })
        ));
    }

    #[test]
    fn refuses_an_entry_after_the_last_index() {
        // Overflowed computing the next index (a panic in debug builds, and index 0 taken as
        // following u64::MAX in release builds).
        let dir = tempfile::tempdir().unwrap();
        for first in [
            LogRecord::Entry(entry(u64::MAX)),
            LogRecord::Purged(entry(u64::MAX).log_id),
        ] {
            write_log(dir.path(), &[first, LogRecord::Entry(entry(0))]);
            assert!(matches!(
                LogStore::open(dir.path()),
                Err(StoreError::Corrupt { .. })
            ));
        }
    }

    #[test]
    fn a_damaged_vote_refuses_to_open_a_damaged_commit_position_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(COMMITTED_FILE), b"garbage").unwrap();
        let (_, report) = LogStore::open(dir.path()).unwrap();
        assert!(report.committed_ignored);
        std::fs::write(dir.path().join(VOTE_FILE), b"garbage").unwrap();
        assert!(matches!(
            LogStore::open(dir.path()),
            Err(StoreError::Corrupt { .. })
        ));
    }
}
