//! Store settings, under RocketMQ's `MessageStoreConfig` key names (a compatibility surface:
//! broker.conf files written for RocketMQ work unchanged, misspellings like `maped` included),
//! declared as one table (see `rocketpy_protocol::config`).

use std::path::PathBuf;

use rocketpy_protocol::config::ConfigValue;

use crate::error::{Result, StoreError};

/// When the CommitLog reaches the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushDiskType {
    /// Acknowledge after writing to the page cache; a background thread flushes.
    AsyncFlush,
    /// Acknowledge after the record is on disk (group commit).
    SyncFlush,
}

impl ConfigValue for FlushDiskType {
    fn parse_value(raw: &str) -> std::result::Result<Self, String> {
        match raw.trim() {
            "ASYNC_FLUSH" => Ok(FlushDiskType::AsyncFlush),
            "SYNC_FLUSH" => Ok(FlushDiskType::SyncFlush),
            other => Err(format!("expected ASYNC_FLUSH or SYNC_FLUSH, not {other:?}")),
        }
    }
    fn render(&self) -> String {
        match self {
            FlushDiskType::AsyncFlush => "ASYNC_FLUSH",
            FlushDiskType::SyncFlush => "SYNC_FLUSH",
        }
        .to_owned()
    }
}

/// A broker's part in replication (RocketMQ's `BrokerRole`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerRole {
    /// Acknowledges writes before slaves have them.
    AsyncMaster,
    /// Acknowledges writes once a slave has them (or answers that it could not).
    SyncMaster,
    /// Copies a master's CommitLog; refuses writes.
    Slave,
}

impl BrokerRole {
    /// Whether this broker takes writes.
    pub fn is_master(self) -> bool {
        self != BrokerRole::Slave
    }
}

impl ConfigValue for BrokerRole {
    fn parse_value(raw: &str) -> std::result::Result<Self, String> {
        match raw.trim() {
            "ASYNC_MASTER" => Ok(BrokerRole::AsyncMaster),
            "SYNC_MASTER" => Ok(BrokerRole::SyncMaster),
            "SLAVE" => Ok(BrokerRole::Slave),
            other => Err(format!(
                "expected ASYNC_MASTER, SYNC_MASTER or SLAVE, not {other:?}"
            )),
        }
    }
    fn render(&self) -> String {
        match self {
            BrokerRole::AsyncMaster => "ASYNC_MASTER",
            BrokerRole::SyncMaster => "SYNC_MASTER",
            BrokerRole::Slave => "SLAVE",
        }
        .to_owned()
    }
}

/// Default delay levels (`messageDelayLevel`).
pub const DEFAULT_DELAY_LEVELS: &str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h";

rocketpy_protocol::config_struct! {
    /// Settings of a [`crate::MessageStore`].
    pub struct StoreConfig {
        /// Root directory of the store (`{root}/commitlog`, `consumequeue`, `index`, ...).
        store_path_root_dir: PathBuf = PathBuf::from("store") => "storePathRootDir",
        /// CommitLog directory, when not `{root}/commitlog`.
        store_path_commit_log: Option<PathBuf> = None => "storePathCommitLog",
        /// Bytes per CommitLog file (1 GiB).
        mapped_file_size_commit_log: usize = 1024 * 1024 * 1024
            => "mapedFileSizeCommitLog" | "mappedFileSizeCommitLog",
        /// Bytes per ConsumeQueue file (300,000 units of 20 bytes).
        mapped_file_size_consume_queue: usize = 300_000 * 20
            => "mapedFileSizeConsumeQueue" | "mappedFileSizeConsumeQueue",
        /// Whether each consume-queue unit gets an ext unit (`consumequeue_ext/`) with its tags code, store time and SQL92 filter bit map.
        enable_consume_queue_ext: bool = false => "enableConsumeQueueExt",
        /// Bytes per consume-queue ext file (sparse: disk follows the units).
        mapped_file_size_consume_queue_ext: usize = 48 * 1024 * 1024 => "mappedFileSizeConsumeQueueExt",
        /// Bits of a filter bit map (RocketMQ's key; the broker sets it from its bloom filter's size, so it does not change the files).
        bit_map_length_consume_queue_ext: usize = 64 => "bitMapLengthConsumeQueueExt",
        /// ASYNC_FLUSH (acknowledge from the page cache) or SYNC_FLUSH (after the disk sync).
        flush_disk_type: FlushDiskType = FlushDiskType::AsyncFlush => "flushDiskType",
        /// ASYNC_FLUSH: milliseconds between rounds that hand dirty CommitLog pages to write-back.
        flush_interval_commit_log: u64 = 500 => "flushIntervalCommitLog",
        /// ASYNC_FLUSH: a round starts write-back only when this many 4 KiB pages are dirty.
        flush_commit_log_least_pages: usize = 4 => "flushCommitLogLeastPages",
        /// ASYNC_FLUSH: milliseconds between durable flushes (msync) of the CommitLog.
        flush_commit_log_thorough_interval: u64 = 10_000 => "flushCommitLogThoroughInterval",
        /// Milliseconds between consume-queue flushes (and checkpoint writes).
        flush_interval_consume_queue: u64 = 1000 => "flushIntervalConsumeQueue",
        /// SYNC_FLUSH: milliseconds a put waits for the disk before FLUSH_DISK_TIMEOUT.
        sync_flush_timeout: u64 = 5000 => "syncFlushTimeout",
        /// Largest message body, in bytes.
        max_message_size: usize = 4 * 1024 * 1024 => "maxMessageSize",
        /// Most bytes one pull returns from messages in the page cache.
        max_transfer_bytes_on_message_in_memory: usize = 256 * 1024
            => "maxTransferBytesOnMessageInMemory",
        /// Most messages one pull returns from the page cache.
        max_transfer_count_on_message_in_memory: usize = 32
            => "maxTransferCountOnMessageInMemory",
        /// Most bytes one pull returns from messages likely on disk only.
        max_transfer_bytes_on_message_in_disk: usize = 64 * 1024
            => "maxTransferBytesOnMessageInDisk",
        /// Most messages one pull returns from disk.
        max_transfer_count_on_message_in_disk: usize = 8 => "maxTransferCountOnMessageInDisk",
        /// Percent of RAM regarded as page cache (older messages count as on disk).
        access_message_in_memory_max_ratio: u64 = 40 => "accessMessageInMemoryMaxRatio",
        /// Delay levels, e.g. "1s 5s 10s 30s 1m ... 2h".
        message_delay_level: String = DEFAULT_DELAY_LEVELS.to_owned() => "messageDelayLevel",
        /// Hours a CommitLog file is kept after its last message.
        file_reserved_time: u64 = 72 => "fileReservedTime",
        /// Hours of the day when expired files are deleted, `;`-separated.
        delete_when: String = "04".to_owned() => "deleteWhen",
        /// Disk percent above which expired files are deleted at once.
        disk_max_used_space_ratio: u64 = 75 => "diskMaxUsedSpaceRatio",
        /// Disk percent above which files go even before they expire.
        disk_space_clean_forcibly_ratio: u64 = 85 => "diskSpaceCleanForciblyRatio",
        /// Disk percent above which puts are refused until space is freed.
        disk_space_warning_level_ratio: u64 = 90 => "diskSpaceWarningLevelRatio",
        /// Whether unexpired files may be deleted above diskSpaceCleanForciblyRatio.
        clean_file_forcibly_enable: bool = true => "cleanFileForciblyEnable",
        /// Milliseconds between retention checks.
        clean_resource_interval: u64 = 10_000 => "cleanResourceInterval",
        /// Whether messages are indexed by key (QUERY_MESSAGE).
        message_index_enable: bool = true => "messageIndexEnable",
        /// Hash slots of an index file.
        max_hash_slot_num: usize = 5_000_000 => "maxHashSlotNum",
        /// Entries of an index file.
        max_index_num: usize = 5_000_000 * 4 => "maxIndexNum",
        /// Milliseconds between saves of `config/delayOffset.json`.
        flush_delay_offset_interval: u64 = 10_000 => "flushDelayOffsetInterval",
        /// ASYNC_MASTER, SYNC_MASTER or SLAVE.
        broker_role: BrokerRole = BrokerRole::AsyncMaster => "brokerRole",
        /// Port of the replication (HA) listener; 0 means the broker's listenPort + 1.
        ha_listen_port: u16 = 0 => "haListenPort",
        /// A slave's master HA address (`host:port`), when not learnt from the name server.
        ha_master_address: Option<String> = None => "haMasterAddress",
        /// Milliseconds between a slave's offset reports (its heartbeat).
        ha_send_heartbeat_interval: u64 = 5_000 => "haSendHeartbeatInterval",
        /// Milliseconds of silence after which either side closes the HA connection.
        ha_housekeeping_interval: u64 = 20_000 => "haHousekeepingInterval",
        /// Most CommitLog bytes in one HA frame.
        ha_transfer_batch_size: usize = 32 * 1024 => "haTransferBatchSize",
        /// SYNC_MASTER: milliseconds a write waits for a slave before FLUSH_SLAVE_TIMEOUT (4.9.3+'s key).
        slave_timeout: u64 = 3_000 => "slaveTimeout",
        /// SYNC_MASTER: bytes a slave may lag before writes answer SLAVE_NOT_AVAILABLE.
        ha_slave_fallbehind_max: i64 = 256 * 1024 * 1024 => "haSlaveFallbehindMax",
    }
}

impl StoreConfig {
    /// Defaults rooted at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        StoreConfig {
            store_path_root_dir: root.into(),
            ..StoreConfig::default()
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

    /// `{root}/consumequeue_ext` (consume-queue ext files).
    pub fn consume_queue_ext_dir(&self) -> PathBuf {
        self.store_path_root_dir
            .join(crate::consume_queue_ext::EXT_DIR)
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
        if self.mapped_file_size_consume_queue_ext < 4096 {
            return Err(StoreError::InvalidArgument(
                "mappedFileSizeConsumeQueueExt must be at least 4096".into(),
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
