//! An append-only journal beside a JSON config file (`topics.json.journal`), so that a change
//! costs one appended line and one `fdatasync`, not a rewrite of the whole table: with 10,000
//! topics `topics.json` is megabytes, and rewriting it per topic creation made creation cost
//! grow with the topic count.
//!
//! Each line is `{"v":<dataVersion counter>,...}` followed by `\n`. The config file stays in
//! RocketMQ's format and is rewritten in the background ([`Journal::compact`]); it carries the
//! counter it was written at, so loading is: the file, then the journal's lines with a higher
//! counter, in order. A line torn by a crash (no `\n`, or not JSON) ends the replay: it was
//! never acknowledged. Rotation writes the lines still needed to a temporary file and renames
//! it over the journal, so the journal is never truncated in place.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use rocketpy_store::io::{FsStorage, Storage};
use rocketpy_store::StoreError;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// One journaled change: `{"put": T}` (added or replaced) or `{"delete": "name"}`.
#[derive(Debug, Clone, PartialEq)]
pub enum Change<T> {
    /// Added or replaced.
    Put(T),
    /// Removed, by name.
    Delete(String),
}

/// The journal beside the config file `config` (`<config>.journal`) and the changes it holds
/// past `counter` (the counter the config file was written at), in counter order, with the
/// last counter among them (or `counter`). Entries that do not parse are logged and skipped:
/// `what` names them.
pub fn open_changes<T: DeserializeOwned>(
    config: &Path,
    counter: i64,
    what: &str,
) -> Result<(Journal, Vec<Change<T>>, i64), StoreError> {
    let mut path = config.as_os_str().to_owned();
    path.push(".journal");
    let (journal, mut changes) = Journal::open(path.into())?;
    // Appends may land out of counter order (they happen outside the table's lock).
    changes.sort_by_key(|(v, _)| *v);
    let mut puts = Vec::new();
    let mut last = counter;
    for (v, change) in changes {
        if v <= counter {
            continue; // already in the config file
        }
        if let Some(name) = change.get("delete").and_then(Value::as_str) {
            puts.push(Change::Delete(name.to_owned()));
            last = v;
            continue;
        }
        match change.get("put").map(|c| T::deserialize(c)) {
            Some(Ok(entry)) => puts.push(Change::Put(entry)),
            Some(Err(e)) => {
                tracing::warn!(error = %e, "ignoring a {what} journal entry that does not parse")
            }
            None => tracing::warn!("ignoring an unknown {what} journal entry"),
        }
        last = v;
    }
    Ok((journal, puts, last))
}

/// `table`'s data version counter (read by `counter`) and its JSON, for
/// [`Journal::write_config`].
pub fn versioned_json<T: serde::Serialize>(
    table: &T,
    counter: impl FnOnce(&T) -> i64,
) -> serde_json::Result<(i64, Vec<u8>)> {
    Ok((counter(table), serde_json::to_vec_pretty(table)?))
}

/// The journal of one config file.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Open for appending (`None` until the first append).
    file: Option<File>,
    /// The lines in the file, with their counters (for rotation without reading it back).
    lines: Vec<(i64, Vec<u8>)>,
    /// The file ends in bytes that are not a complete line: rewrite it before appending.
    torn: bool,
}

impl Journal {
    /// The journal at `path`, and its valid lines (counter, JSON object) in order.
    pub fn open(path: PathBuf) -> Result<(Journal, Vec<(i64, Value)>), StoreError> {
        let mut lines = Vec::new();
        let mut values = Vec::new();
        let mut torn = false;
        match std::fs::read(&path) {
            Ok(bytes) => {
                for raw in bytes.split_inclusive(|b| *b == b'\n') {
                    torn = true;
                    let Some(line) = raw.strip_suffix(b"\n") else {
                        tracing::warn!(file = %path.display(), "ignoring a torn last journal line");
                        break;
                    };
                    let parsed = serde_json::from_slice::<Value>(line)
                        .ok()
                        .and_then(|v| Some((v.get("v")?.as_i64()?, v)));
                    let Some((counter, value)) = parsed else {
                        tracing::warn!(file = %path.display(), "journal line does not parse; ignoring it and the rest");
                        break;
                    };
                    lines.push((counter, line.to_vec()));
                    values.push((counter, value));
                    torn = false;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(StoreError::io(&path, e)),
        }
        let journal = Journal {
            path,
            state: Mutex::new(State {
                file: None,
                lines,
                torn,
            }),
        };
        Ok((journal, values))
    }

    /// The journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of lines in the journal.
    pub fn len(&self) -> usize {
        self.state.lock().lines.len()
    }

    /// Whether the journal has no lines.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends `entry` (an object; `"v"` is set to `counter`) and makes it durable. Callers
    /// append in counter order (under their table's write lock).
    pub fn append(&self, counter: i64, mut entry: Value) -> Result<(), StoreError> {
        if let Some(obj) = entry.as_object_mut() {
            obj.insert("v".into(), counter.into());
        }
        let mut line = serde_json::to_vec(&entry).map_err(|e| StoreError::Config {
            path: self.path.clone(),
            reason: e.to_string(),
        })?;
        line.push(b'\n');
        let mut state = self.state.lock();
        if state.torn {
            self.rewrite(&state.lines)?;
            state.torn = false;
        }
        if state.file.is_none() {
            state.file = Some(self.open_append()?);
        }
        let file = state.file.as_mut().expect("opened above");
        let written = file.write_all(&line).and_then(|()| file.sync_data());
        if let Err(e) = written {
            // A partial line (full disk) would end every later replay there: the next
            // append first rewrites the file with only the complete lines.
            state.file = None;
            state.torn = true;
            return Err(StoreError::io(&self.path, e));
        }
        line.pop();
        state.lines.push((counter, line));
        Ok(())
    }

    /// After the config file was written at `counter`: drops the lines it contains. `write`
    /// writes the config file; it runs without the journal's lock, so appends continue.
    pub fn compact(
        &self,
        counter: i64,
        write: impl FnOnce() -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        write()?;
        let mut state = self.state.lock();
        state.lines.retain(|(v, _)| *v > counter);
        state.file = None;
        self.rewrite(&state.lines)?;
        state.torn = false;
        Ok(())
    }

    /// Writes a config file to `config` and drops the journal lines it now holds; does nothing
    /// when `only_if_changed` and there are no lines. `serialize` gives the table's data
    /// version counter and its JSON (taken under the table's lock; the file is written
    /// without it).
    pub fn write_config(
        &self,
        config: &Path,
        only_if_changed: bool,
        serialize: impl FnOnce() -> serde_json::Result<(i64, Vec<u8>)>,
    ) -> Result<(), StoreError> {
        if only_if_changed && self.is_empty() {
            return Ok(());
        }
        let (counter, json) = serialize().map_err(|e| StoreError::Config {
            path: config.to_path_buf(),
            reason: e.to_string(),
        })?;
        self.compact(counter, || crate::config_file::persist(config, &json))
    }

    fn open_append(&self) -> Result<File, StoreError> {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| StoreError::io(&self.path, e))
    }

    /// Replaces the journal with `lines` (temporary file, fsync, rename, directory fsync).
    fn rewrite(&self, lines: &[(i64, Vec<u8>)]) -> Result<(), StoreError> {
        if lines.is_empty() {
            return match std::fs::remove_file(&self.path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(StoreError::io(&self.path, e))
                }
                _ => Ok(()),
            };
        }
        let mut bytes = Vec::with_capacity(lines.iter().map(|(_, l)| l.len() + 1).sum());
        for (_, line) in lines {
            bytes.extend_from_slice(line);
            bytes.push(b'\n');
        }
        FsStorage
            .write_atomic(&self.path, &bytes)
            .map_err(|e| StoreError::io(&self.path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn append_reopen_compact_and_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json.journal");
        let (j, lines) = Journal::open(path.clone()).unwrap();
        assert!(lines.is_empty());
        j.append(5, json!({"put": "a"})).unwrap();
        j.append(6, json!({"put": "b"})).unwrap();
        j.append(7, json!({"del": "a"})).unwrap();
        drop(j);

        // A crash mid-append leaves a torn line: replay stops before it.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"v":8,"put":"#).unwrap();
        let (j, lines) = Journal::open(path.clone()).unwrap();
        let counters: Vec<i64> = lines.iter().map(|(v, _)| *v).collect();
        assert_eq!(counters, [5, 6, 7]);
        assert_eq!(lines[2].1["del"], "a");
        j.append(8, json!({"put": "d"})).unwrap();
        let (_, lines) = Journal::open(path.clone()).unwrap();
        assert_eq!(
            lines.len(),
            4,
            "the torn bytes were dropped before appending"
        );

        // Compaction keeps what the config file does not hold yet.
        let mut wrote = false;
        j.compact(6, || {
            wrote = true;
            Ok(())
        })
        .unwrap();
        assert!(wrote);
        let (_, lines) = Journal::open(path.clone()).unwrap();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].0, 7);
        j.compact(8, || Ok(())).unwrap();
        assert!(!path.exists(), "an empty journal is no file");
        j.append(9, json!({"put": "c"})).unwrap();
        let (_, lines) = Journal::open(path).unwrap();
        assert_eq!(lines.len(), 1);
    }
}
