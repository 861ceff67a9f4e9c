//! `checkpoint`: one 4 KiB page recording how far each structure is known to be on disk.
//!
//! ```text
//! 0 physicMsgTimestamp i64 | 8 logicsMsgTimestamp i64 | 16 indexMsgTimestamp i64   big-endian
//! ```
//! Each is the store timestamp of the newest message whose CommitLog record, consume-queue
//! unit, or index entry was flushed. Abnormal recovery restarts from the oldest of them.

use std::path::{Path, PathBuf};

use crate::error::{Result, StoreError};
use crate::io::{LockGuard, Storage};

/// Size of the file.
pub const CHECKPOINT_SIZE: usize = 4096;

/// The three timestamps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Checkpoint {
    /// Newest flushed CommitLog message.
    pub physic_msg_timestamp: i64,
    /// Newest flushed consume-queue unit.
    pub logics_msg_timestamp: i64,
    /// Newest flushed index entry.
    pub index_msg_timestamp: i64,
}

impl Checkpoint {
    /// The point abnormal recovery must re-dispatch from (RocketMQ's `getMinTimestamp`
    /// ignoring the index, minus 3 s of slack for clock and flush ordering).
    pub fn min_timestamp(&self) -> i64 {
        (self.physic_msg_timestamp.min(self.logics_msg_timestamp) - 3000).max(0)
    }

    /// Reads `path`; a missing or short file gives zeroes (recover from the earliest file).
    pub fn read(storage: &dyn Storage, path: &Path) -> Result<Checkpoint> {
        let Some(buf) = storage.read(path).map_err(|e| StoreError::io(path, e))? else {
            return Ok(Checkpoint::default());
        };
        if buf.len() < 24 {
            tracing::warn!(path = %path.display(), len = buf.len(), "checkpoint too short; treating as empty");
            return Ok(Checkpoint::default());
        }
        let at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&buf[i..i + 8]);
            i64::from_be_bytes(a)
        };
        Ok(Checkpoint {
            physic_msg_timestamp: at(0),
            logics_msg_timestamp: at(8),
            index_msg_timestamp: at(16),
        })
    }

    /// Writes `path` atomically and durably.
    pub fn write(&self, storage: &dyn Storage, path: &Path) -> Result<()> {
        let mut page = [0u8; CHECKPOINT_SIZE];
        page[0..8].copy_from_slice(&self.physic_msg_timestamp.to_be_bytes());
        page[8..16].copy_from_slice(&self.logics_msg_timestamp.to_be_bytes());
        page[16..24].copy_from_slice(&self.index_msg_timestamp.to_be_bytes());
        storage
            .write_atomic(path, &page)
            .map_err(|e| StoreError::io(path, e))
    }
}

/// The `lock` file: held for as long as the store is open, so a second process on the same
/// directory fails at once instead of corrupting it.
pub struct StoreLock {
    _guard: LockGuard,
    path: PathBuf,
}

impl std::fmt::Debug for StoreLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreLock")
            .field("path", &self.path)
            .finish()
    }
}

impl StoreLock {
    /// Takes the lock of `root`, failing with [`StoreError::Locked`] if another holder has it.
    pub fn acquire(storage: &dyn Storage, root: &Path) -> Result<StoreLock> {
        storage
            .create_dir_all(root)
            .map_err(|e| StoreError::io(root, e))?;
        match storage.lock(root) {
            Ok(guard) => Ok(StoreLock {
                _guard: guard,
                path: root.join("lock"),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                Err(StoreError::Locked(root.to_path_buf()))
            }
            Err(e) => Err(StoreError::io(root.join("lock"), e)),
        }
    }

    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::FsStorage;

    #[test]
    fn checkpoint_round_trip_and_missing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("checkpoint");
        assert_eq!(
            Checkpoint::read(&FsStorage, &path).unwrap(),
            Checkpoint::default()
        );
        let cp = Checkpoint {
            physic_msg_timestamp: 10_000,
            logics_msg_timestamp: 9_000,
            index_msg_timestamp: 8,
        };
        cp.write(&FsStorage, &path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 4096);
        assert_eq!(Checkpoint::read(&FsStorage, &path).unwrap(), cp);
        assert_eq!(cp.min_timestamp(), 6_000);
        std::fs::write(&path, b"short").unwrap();
        assert_eq!(
            Checkpoint::read(&FsStorage, &path).unwrap(),
            Checkpoint::default()
        );
    }

    #[test]
    fn second_lock_fails() {
        let dir = tempfile::tempdir().unwrap();
        let _held = StoreLock::acquire(&FsStorage, dir.path()).unwrap();
        // flock locks belong to the open file description, so a second open conflicts even in
        // the same process.
        assert!(matches!(
            StoreLock::acquire(&FsStorage, dir.path()),
            Err(StoreError::Locked(_))
        ));
    }
}
