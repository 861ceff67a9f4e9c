//! JSON files under `{storePathRootDir}/config/`, written atomically.
//!
//! Write: previous `name` linked as `name.bak` -> `name.tmp` (synced) renamed over `name`.
//! Read: `name`, falling back to `name.bak` if `name` is missing or does not parse: a crash
//! in the middle of a write never loses the previous content.

use std::path::{Path, PathBuf};

use rocketpy_store::io::{FsStorage, Storage};
use rocketpy_store::StoreError;

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Serialises the writes: two writers of one file (the housekeeping task and a shutdown, say)
/// would share its `.bak.tmp` and `.tmp` names, and one's rename could find the other's file
/// gone. Config files are written seldom; one lock for all of them costs nothing.
static WRITING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Writes `content` to `path` atomically, keeping the previous version as `.bak`.
pub fn persist(path: &Path, content: &[u8]) -> Result<(), StoreError> {
    let _one_at_a_time = WRITING.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
    }
    if path.exists() {
        // The backup is a second name of the current file (no bytes copied, so nothing to
        // fail half-way on a full disk), swapped in by rename.
        let bak = with_suffix(path, ".bak");
        let bak_tmp = with_suffix(path, ".bak.tmp");
        let _ = std::fs::remove_file(&bak_tmp);
        let linked = std::fs::hard_link(path, &bak_tmp)
            .or_else(|_| std::fs::copy(path, &bak_tmp).map(drop))
            .and_then(|()| std::fs::rename(&bak_tmp, &bak));
        if let Err(e) = linked {
            let _ = std::fs::remove_file(&bak_tmp);
            return Err(StoreError::io(&bak, e));
        }
    }
    // Temporary file, fsync, rename, directory fsync: on a full disk the current file stays.
    FsStorage
        .write_atomic(path, content)
        .map_err(|e| StoreError::io(path, e))
}

/// Loads and parses `path` (or its `.bak`); `Ok(None)` when neither exists.
pub fn load<T>(
    path: &Path,
    parse: impl Fn(&[u8]) -> Result<T, String>,
) -> Result<Option<T>, StoreError> {
    let mut last_error = None;
    for candidate in [path.to_path_buf(), with_suffix(path, ".bak")] {
        match std::fs::read(&candidate) {
            Ok(bytes) if bytes.iter().all(|b| b.is_ascii_whitespace()) => return Ok(None),
            Ok(bytes) => match parse(&bytes) {
                Ok(v) => return Ok(Some(v)),
                Err(e) => {
                    tracing::warn!(file = %candidate.display(), error = %e, "config file does not parse");
                    last_error = Some(StoreError::Config {
                        path: candidate,
                        reason: e,
                    });
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(StoreError::io(&candidate, e)),
        }
    }
    match last_error {
        Some(e) => Err(e),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_writers_of_one_file_do_not_trip_over_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config").join("x.json");
        std::thread::scope(|s| {
            for t in 0..4 {
                let path = &path;
                s.spawn(move || {
                    for i in 0..50 {
                        persist(path, format!("{{\"v\":{}}}", t * 100 + i).as_bytes()).unwrap();
                    }
                });
            }
        });
        let parse =
            |b: &[u8]| serde_json::from_slice::<serde_json::Value>(b).map_err(|e| e.to_string());
        assert!(load(&path, parse).unwrap().is_some());
    }

    #[test]
    fn persist_keeps_backup_and_load_falls_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config").join("x.json");
        let parse =
            |b: &[u8]| serde_json::from_slice::<serde_json::Value>(b).map_err(|e| e.to_string());
        assert!(load(&path, parse).unwrap().is_none());
        persist(&path, br#"{"v":1}"#).unwrap();
        persist(&path, br#"{"v":2}"#).unwrap();
        assert_eq!(load(&path, parse).unwrap().unwrap()["v"], 2);
        std::fs::write(&path, b"{broken").unwrap();
        assert_eq!(load(&path, parse).unwrap().unwrap()["v"], 1);
        std::fs::write(with_suffix(&path, ".bak"), b"{broken").unwrap();
        assert!(load(&path, parse).is_err());
    }
}
