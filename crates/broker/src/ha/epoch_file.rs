//! The epoch file of controller mode (RocketMQ 5.x's `CheckpointFile` of the epoch table):
//! `storePathEpochFile` (default `{storePathRootDir}/epochFileCheckpoint`) and its `.bak` (the
//! previous content). The table and its text are [`rocketpy_store::epoch_cache`].
//!
//! What must stay true:
//! - Every change is written through (temporary file, rename; the previous version as `.bak`).
//! - A damaged file falls back to `.bak` (reported); a damaged file with no usable backup is an
//!   error, never an empty table — an empty table would let a replica keep bytes of a deposed
//!   master's epoch.
//! - An empty table is written as no file at all (both names removed): RocketMQ reads an
//!   empty main file as "look in `.bak`", which would bring back removed entries.

use std::path::{Path, PathBuf};

use rocketpy_store::epoch_cache::EpochCache;
use rocketpy_store::StoreError;

use crate::config_file;

/// The table and the file it lives in: every change is written through.
#[derive(Debug)]
pub struct EpochFile {
    path: PathBuf,
    cache: EpochCache,
}

impl EpochFile {
    /// Reads `path` (or its `.bak`); a new store has neither and starts empty. Both present and
    /// unusable is an error naming what to do (the damaged bytes are kept aside).
    pub fn open(path: &Path) -> Result<EpochFile, StoreError> {
        let bak = PathBuf::from(format!("{}.bak", path.display()));
        let existed = path.exists() || bak.exists();
        let cache = match config_file::load(path, EpochCache::parse)? {
            Some(cache) => cache,
            None if existed => {
                return Err(StoreError::Config {
                    path: path.to_owned(),
                    reason: "the epoch file and its .bak are damaged (kept aside): without its \
                             epochs this broker cannot tell which of its bytes a new master \
                             agrees with; restore the file, or empty the store to rejoin as a \
                             new replica"
                        .to_owned(),
                })
            }
            None => EpochCache::default(),
        };
        Ok(EpochFile {
            path: path.to_owned(),
            cache,
        })
    }

    /// The table.
    pub fn cache(&self) -> &EpochCache {
        &self.cache
    }

    /// Appends an epoch and writes the file; false (nothing written) when refused.
    pub fn append(&mut self, epoch: i32, start_offset: i64) -> Result<bool, StoreError> {
        if !self.cache.append(epoch, start_offset) {
            return Ok(false);
        }
        self.write()?;
        Ok(true)
    }

    /// Changes the table with `change` and writes the file.
    pub fn update(&mut self, change: impl FnOnce(&mut EpochCache)) -> Result<(), StoreError> {
        change(&mut self.cache);
        self.write()
    }

    fn write(&self) -> Result<(), StoreError> {
        if self.cache.is_empty() {
            for p in [
                self.path.clone(),
                PathBuf::from(format!("{}.bak", self.path.display())),
            ] {
                match std::fs::remove_file(&p) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(StoreError::io(&p, e))
                    }
                    _ => {}
                }
            }
            return Ok(());
        }
        config_file::persist(&self.path, self.cache.encode().as_bytes())
    }
}

#[cfg(test)]
#[path = "epoch_file_tests.rs"]
mod tests;
