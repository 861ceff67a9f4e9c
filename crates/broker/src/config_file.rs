//! JSON files under `{storePathRootDir}/config/`, written atomically.
//!
//! Write: previous `name` linked as `name.bak` -> `name.tmp` (synced) renamed over `name`.
//! Read: `name`, falling back to `name.bak` when `name` is missing, empty or does not parse
//! (RocketMQ's `ConfigManager.load`), with an error naming both files: a crash in the middle
//! of a write, or a damaged file, never loses the previous content.
//!
//! What must stay true: a damaged file is renamed aside (`name.damaged-<ms>`) before anything
//! is written, so the next write cannot link it over a good `.bak`; and the broker starts
//! with an empty table only when neither file is usable, saying so and keeping the damaged
//! bytes.

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

/// What one candidate file held.
enum Read<T> {
    Missing,
    Damaged(String),
    Loaded(T),
}

fn read_one<T>(
    path: &Path,
    parse: &impl Fn(&[u8]) -> Result<T, String>,
) -> Result<Read<T>, StoreError> {
    match std::fs::read(path) {
        Ok(bytes) if bytes.iter().all(|b| b.is_ascii_whitespace()) => {
            Ok(Read::Damaged("the file is empty".into()))
        }
        Ok(bytes) => Ok(match parse(&bytes) {
            Ok(v) => Read::Loaded(v),
            Err(e) => Read::Damaged(e),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Read::Missing),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

/// Renames a damaged file aside (`name.damaged-<ms>`), so its bytes stay for a person to look
/// at and no later write links it over a good backup.
fn keep_aside(path: &Path) -> Result<PathBuf, StoreError> {
    let ms = rocketpy_protocol::clock::now_millis();
    let aside = with_suffix(path, &format!(".damaged-{ms}"));
    std::fs::rename(path, &aside).map_err(|e| StoreError::io(path, e))?;
    Ok(aside)
}

/// Loads and parses `path`, or its `.bak` when `path` is missing, empty or damaged;
/// `Ok(None)` when neither holds a table (a new store, or both damaged: see the module
/// documentation). Every fallback is logged as an error naming the files.
pub fn load<T>(
    path: &Path,
    parse: impl Fn(&[u8]) -> Result<T, String>,
) -> Result<Option<T>, StoreError> {
    let main = read_one(path, &parse)?;
    let reason = match main {
        Read::Loaded(v) => return Ok(Some(v)),
        Read::Missing => None,
        Read::Damaged(reason) => Some(reason),
    };
    let bak = with_suffix(path, ".bak");
    let backup = read_one(&bak, &parse)?;
    let file = path.display();
    match (reason, backup) {
        (None, Read::Missing) => Ok(None),
        (None, Read::Loaded(v)) => {
            tracing::error!(%file, backup = %bak.display(), "config file missing; loaded its backup (changes after that backup are lost)");
            Ok(Some(v))
        }
        (Some(reason), Read::Loaded(v)) => {
            let aside = keep_aside(path)?;
            tracing::error!(%file, %reason, backup = %bak.display(), kept = %aside.display(), "config file damaged; loaded its backup instead (changes after that backup are lost)");
            Ok(Some(v))
        }
        (Some(reason), backup) => {
            let aside = keep_aside(path)?;
            let bak_state = match backup {
                Read::Damaged(e) => {
                    let bak_aside = keep_aside(&bak)?;
                    format!("damaged too ({e}), kept as {}", bak_aside.display())
                }
                _ => "missing".to_owned(),
            };
            tracing::error!(%file, %reason, kept = %aside.display(), backup = %bak.display(), backup_state = %bak_state, "config file damaged and no usable backup: starting with an empty table; the damaged bytes are kept");
            Ok(None)
        }
        (None, Read::Damaged(reason)) => {
            let aside = keep_aside(&bak)?;
            tracing::error!(%file, backup = %bak.display(), %reason, kept = %aside.display(), "config file missing and its backup damaged: starting with an empty table; the damaged bytes are kept");
            Ok(None)
        }
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
        assert!(load(&path, json).unwrap().is_some());
    }

    fn json(b: &[u8]) -> Result<serde_json::Value, String> {
        serde_json::from_slice::<serde_json::Value>(b).map_err(|e| e.to_string())
    }

    fn damaged(dir: &Path, name: &str) -> Vec<Vec<u8>> {
        let mut kept: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&format!("{name}.damaged-"))
            })
            .collect();
        kept.sort();
        kept.iter().map(|p| std::fs::read(p).unwrap()).collect()
    }

    #[test]
    fn persist_keeps_backup_and_load_falls_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config").join("x.json");
        assert!(load(&path, json).unwrap().is_none());
        persist(&path, br#"{"v":1}"#).unwrap();
        persist(&path, br#"{"v":2}"#).unwrap();
        assert_eq!(load(&path, json).unwrap().unwrap()["v"], 2);
        std::fs::write(&path, b"{broken").unwrap();
        assert_eq!(load(&path, json).unwrap().unwrap()["v"], 1);
        assert_eq!(
            damaged(path.parent().unwrap(), "x.json"),
            vec![b"{broken".to_vec()]
        );
    }

    /// RocketMQ loads the `.bak` of an empty file; the empty file must not then become the
    /// backup at the next write.
    #[test]
    fn an_empty_file_falls_back_and_never_replaces_the_backup() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.json");
        persist(&path, br#"{"v":1}"#).unwrap();
        persist(&path, br#"{"v":2}"#).unwrap();
        for broken in [&b""[..], b"  \n", b"{\"v\":", b"\x00\x00\x00"] {
            std::fs::write(&path, broken).unwrap();
            assert_eq!(load(&path, json).unwrap().unwrap()["v"], 1, "{broken:?}");
            assert!(!path.exists(), "the damaged file is moved aside");
            persist(&path, br#"{"v":3}"#).unwrap();
            assert_eq!(
                json(&std::fs::read(with_suffix(&path, ".bak")).unwrap()).unwrap()["v"],
                1,
                "the good backup stays"
            );
            std::fs::rename(with_suffix(&path, ".bak"), dir.path().join("keep")).unwrap();
            std::fs::copy(dir.path().join("keep"), with_suffix(&path, ".bak")).unwrap();
        }
        // A missing file with a backup: the backup.
        std::fs::remove_file(&path).unwrap();
        assert_eq!(load(&path, json).unwrap().unwrap()["v"], 1);
    }

    /// Neither usable: the broker starts with an empty table, and both damaged files are kept.
    #[test]
    fn nothing_usable_keeps_the_damaged_bytes_and_starts_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.json");
        std::fs::write(&path, b"{\"offsetTable\":{\"t@g\":{0:1}").unwrap();
        assert!(load(&path, json).unwrap().is_none(), "no backup yet");
        assert_eq!(damaged(dir.path(), "x.json").len(), 1);
        std::fs::write(&path, b"{bad").unwrap();
        std::fs::write(with_suffix(&path, ".bak"), b"{worse").unwrap();
        assert!(load(&path, json).unwrap().is_none());
        assert_eq!(damaged(dir.path(), "x.json.bak"), vec![b"{worse".to_vec()]);
        assert!(!path.exists() && !with_suffix(&path, ".bak").exists());
    }
}
