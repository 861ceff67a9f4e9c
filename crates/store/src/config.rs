//! Store settings, under RocketMQ's `MessageStoreConfig` key names (a compatibility surface:
//! broker.conf files written for RocketMQ work unchanged, misspellings like `maped` included).

use std::path::PathBuf;
use std::str::FromStr;

use crate::error::{Result, StoreError};

/// When the CommitLog reaches the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushDiskType {
    /// Acknowledge after writing to the page cache; a background thread flushes.
    AsyncFlush,
    /// Acknowledge after the record is on disk (group commit).
    SyncFlush,
}

impl FromStr for FlushDiskType {
    type Err = StoreError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "ASYNC_FLUSH" => Ok(FlushDiskType::AsyncFlush),
            "SYNC_FLUSH" => Ok(FlushDiskType::SyncFlush),
            other => Err(StoreError::InvalidArgument(format!(
                "flushDiskType must be ASYNC_FLUSH or SYNC_FLUSH, not {other:?}"
            ))),
        }
    }
}

/// Default delay levels (`messageDelayLevel`).
pub const DEFAULT_DELAY_LEVELS: &str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h";

/// Settings of a [`crate::MessageStore`].
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// `storePathRootDir`.
    pub store_path_root_dir: PathBuf,
    /// `storePathCommitLog` (default `{root}/commitlog`).
    pub store_path_commit_log: Option<PathBuf>,
    /// `mapedFileSizeCommitLog`: bytes per CommitLog file (1 GiB).
    pub mapped_file_size_commit_log: usize,
    /// `mapedFileSizeConsumeQueue`: bytes per ConsumeQueue file (300,000 units of 20 bytes).
    pub mapped_file_size_consume_queue: usize,
    /// `flushDiskType`.
    pub flush_disk_type: FlushDiskType,
    /// `flushIntervalCommitLog` (ms).
    pub flush_interval_commit_log: u64,
    /// `flushCommitLogLeastPages`: flush only when this many 4 KiB pages are dirty...
    pub flush_commit_log_least_pages: usize,
    /// `flushCommitLogThoroughInterval` (ms): ...or when this long passed since a full flush.
    pub flush_commit_log_thorough_interval: u64,
    /// `flushIntervalConsumeQueue` (ms).
    pub flush_interval_consume_queue: u64,
    /// `syncFlushTimeout` (ms): SYNC_FLUSH puts waiting longer answer FLUSH_DISK_TIMEOUT.
    pub sync_flush_timeout: u64,
    /// `maxMessageSize` (bytes of body).
    pub max_message_size: usize,
    /// `maxTransferBytesOnMessageInMemory`.
    pub max_transfer_bytes_on_message_in_memory: usize,
    /// `maxTransferCountOnMessageInMemory`.
    pub max_transfer_count_on_message_in_memory: usize,
    /// `maxTransferBytesOnMessageInDisk`.
    pub max_transfer_bytes_on_message_in_disk: usize,
    /// `maxTransferCountOnMessageInDisk`.
    pub max_transfer_count_on_message_in_disk: usize,
    /// `accessMessageInMemoryMaxRatio` (% of RAM regarded as page cache).
    pub access_message_in_memory_max_ratio: u64,
    /// `messageDelayLevel`.
    pub message_delay_level: String,
    /// `fileReservedTime` (hours).
    pub file_reserved_time: u64,
    /// `deleteWhen` (hours of day, `;`-separated).
    pub delete_when: String,
    /// `diskMaxUsedSpaceRatio` (%): above it, expired files are deleted at once.
    pub disk_max_used_space_ratio: u64,
    /// `diskSpaceCleanForciblyRatio` (%): above it, files are deleted even before they expire.
    pub disk_space_clean_forcibly_ratio: u64,
    /// `diskSpaceWarningLevelRatio` (%): above it, puts are refused until space is freed.
    pub disk_space_warning_level_ratio: u64,
    /// `cleanFileForciblyEnable`.
    pub clean_file_forcibly_enable: bool,
    /// `cleanResourceInterval` (ms) between retention checks.
    pub clean_resource_interval: u64,
    /// `messageIndexEnable`.
    pub message_index_enable: bool,
    /// `maxHashSlotNum` of an index file.
    pub max_hash_slot_num: usize,
    /// `maxIndexNum`: entries of an index file.
    pub max_index_num: usize,
    /// `flushDelayOffsetInterval` (ms) between saves of `delayOffset.json`.
    pub flush_delay_offset_interval: u64,
}

impl StoreConfig {
    /// Defaults rooted at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        StoreConfig {
            store_path_root_dir: root.into(),
            store_path_commit_log: None,
            mapped_file_size_commit_log: 1024 * 1024 * 1024,
            mapped_file_size_consume_queue: 300_000 * 20,
            flush_disk_type: FlushDiskType::AsyncFlush,
            flush_interval_commit_log: 500,
            flush_commit_log_least_pages: 4,
            flush_commit_log_thorough_interval: 10_000,
            flush_interval_consume_queue: 1000,
            sync_flush_timeout: 5000,
            max_message_size: 4 * 1024 * 1024,
            max_transfer_bytes_on_message_in_memory: 256 * 1024,
            max_transfer_count_on_message_in_memory: 32,
            max_transfer_bytes_on_message_in_disk: 64 * 1024,
            max_transfer_count_on_message_in_disk: 8,
            access_message_in_memory_max_ratio: 40,
            message_delay_level: DEFAULT_DELAY_LEVELS.to_owned(),
            file_reserved_time: 72,
            delete_when: "04".to_owned(),
            disk_max_used_space_ratio: 75,
            disk_space_clean_forcibly_ratio: 85,
            disk_space_warning_level_ratio: 90,
            clean_file_forcibly_enable: true,
            clean_resource_interval: 10_000,
            message_index_enable: true,
            max_hash_slot_num: 5_000_000,
            max_index_num: 5_000_000 * 4,
            flush_delay_offset_interval: 10_000,
        }
    }

    /// The CommitLog directory.
    pub fn commit_log_dir(&self) -> PathBuf {
        self.store_path_commit_log
            .clone()
            .unwrap_or_else(|| self.store_path_root_dir.join("commitlog"))
    }

    /// The index directory.
    pub fn index_dir(&self) -> PathBuf {
        self.store_path_root_dir.join("index")
    }

    /// Hours of the day when expired files are deleted (`deleteWhen`, e.g. `04` or `04;05`).
    pub fn delete_hours(&self) -> Vec<u32> {
        self.delete_when
            .split(';')
            .filter_map(|h| h.trim().parse().ok())
            .collect()
    }

    /// The ConsumeQueue root directory.
    pub fn consume_queue_dir(&self) -> PathBuf {
        self.store_path_root_dir.join("consumequeue")
    }

    /// Sets one key; `Ok(false)` when the key is not a store key.
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool> {
        fn boolean(key: &str, value: &str) -> Result<bool> {
            match value.trim() {
                "true" => Ok(true),
                "false" => Ok(false),
                other => Err(StoreError::InvalidArgument(format!(
                    "{key} must be true or false, not {other:?}"
                ))),
            }
        }
        fn num<T: FromStr>(key: &str, value: &str) -> Result<T> {
            value.trim().parse().map_err(|_| {
                StoreError::InvalidArgument(format!("{key} must be a number, not {value:?}"))
            })
        }
        match key {
            "storePathRootDir" => self.store_path_root_dir = PathBuf::from(value),
            "storePathCommitLog" => self.store_path_commit_log = Some(PathBuf::from(value)),
            "mapedFileSizeCommitLog" | "mappedFileSizeCommitLog" => {
                self.mapped_file_size_commit_log = num(key, value)?
            }
            "mapedFileSizeConsumeQueue" | "mappedFileSizeConsumeQueue" => {
                self.mapped_file_size_consume_queue = num(key, value)?
            }
            "flushDiskType" => self.flush_disk_type = value.trim().parse()?,
            "flushIntervalCommitLog" => self.flush_interval_commit_log = num(key, value)?,
            "flushCommitLogLeastPages" => self.flush_commit_log_least_pages = num(key, value)?,
            "flushCommitLogThoroughInterval" => {
                self.flush_commit_log_thorough_interval = num(key, value)?
            }
            "flushIntervalConsumeQueue" => self.flush_interval_consume_queue = num(key, value)?,
            "syncFlushTimeout" => self.sync_flush_timeout = num(key, value)?,
            "maxMessageSize" => self.max_message_size = num(key, value)?,
            "maxTransferBytesOnMessageInMemory" => {
                self.max_transfer_bytes_on_message_in_memory = num(key, value)?
            }
            "maxTransferCountOnMessageInMemory" => {
                self.max_transfer_count_on_message_in_memory = num(key, value)?
            }
            "maxTransferBytesOnMessageInDisk" => {
                self.max_transfer_bytes_on_message_in_disk = num(key, value)?
            }
            "maxTransferCountOnMessageInDisk" => {
                self.max_transfer_count_on_message_in_disk = num(key, value)?
            }
            "accessMessageInMemoryMaxRatio" => {
                self.access_message_in_memory_max_ratio = num(key, value)?
            }
            "messageDelayLevel" => self.message_delay_level = value.trim().to_owned(),
            "fileReservedTime" => self.file_reserved_time = num(key, value)?,
            "deleteWhen" => self.delete_when = value.trim().to_owned(),
            "diskMaxUsedSpaceRatio" => self.disk_max_used_space_ratio = num(key, value)?,
            "diskSpaceCleanForciblyRatio" => {
                self.disk_space_clean_forcibly_ratio = num(key, value)?
            }
            "diskSpaceWarningLevelRatio" => self.disk_space_warning_level_ratio = num(key, value)?,
            "cleanFileForciblyEnable" => self.clean_file_forcibly_enable = boolean(key, value)?,
            "cleanResourceInterval" => self.clean_resource_interval = num(key, value)?,
            "messageIndexEnable" => self.message_index_enable = boolean(key, value)?,
            "maxHashSlotNum" => self.max_hash_slot_num = num(key, value)?,
            "maxIndexNum" => self.max_index_num = num(key, value)?,
            "flushDelayOffsetInterval" => self.flush_delay_offset_interval = num(key, value)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Checks values that would break the store.
    pub fn validate(&self) -> Result<()> {
        if self.mapped_file_size_commit_log < 4096 {
            return Err(StoreError::InvalidArgument(
                "mapedFileSizeCommitLog must be at least 4096".into(),
            ));
        }
        if self.mapped_file_size_consume_queue < 20 * 16 {
            return Err(StoreError::InvalidArgument(
                "mapedFileSizeConsumeQueue must hold at least 16 units".into(),
            ));
        }
        if self.max_hash_slot_num == 0 || self.max_index_num < 2 {
            return Err(StoreError::InvalidArgument(
                "maxHashSlotNum must be positive and maxIndexNum at least 2".into(),
            ));
        }
        if self.max_message_size == 0 {
            return Err(StoreError::InvalidArgument(
                "maxMessageSize must be positive".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rocketmq_keys() {
        let mut c = StoreConfig::new("/tmp/x");
        assert!(c.set("mapedFileSizeCommitLog", "65536").unwrap());
        assert!(c.set("flushDiskType", "SYNC_FLUSH").unwrap());
        assert!(!c.set("brokerName", "b").unwrap());
        assert!(c.set("maxMessageSize", "abc").is_err());
        assert!(c.set("flushDiskType", "SOMETIMES").is_err());
        assert_eq!(c.mapped_file_size_commit_log, 65536);
        assert_eq!(c.flush_disk_type, FlushDiskType::SyncFlush);
        assert_eq!(c.commit_log_dir(), PathBuf::from("/tmp/x/commitlog"));
    }
}
