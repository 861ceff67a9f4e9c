//! A broker's controller-mode keys (RocketMQ's `BrokerConfig` and `MessageStoreConfig` keys of
//! controller mode, docs/controller-design.md §3), read from the same broker.conf.

use std::path::{Path, PathBuf};
use std::time::Duration;

rocketpy_protocol::config_struct! {
    /// Controller mode's keys of a broker.
    pub struct ControllerModeConfig {
        /// Let controllers elect this group's master (RocketMQ 5.x controller mode); brokerRole and brokerId then come from the controller.
        enable_controller_mode: bool = false => "enableControllerMode",
        /// The controllers, `host:port;host:port` (their controllerDLegerPeers ports).
        controller_addr: String = String::new() => "controllerAddr",
        /// Milliseconds between asks for the group's master and SyncStateSet (GET_REPLICA_INFO).
        sync_broker_metadata_period: u64 = 5_000 => "syncBrokerMetadataPeriod",
        /// Milliseconds between the master's checks of which replicas are in sync. 1 s, not RocketMQ's 5 s: the check is local (the controller is asked only on a change), and its period adds to the time a lost replica holds up SYNC writes.
        check_sync_state_set_period: u64 = 1_000 => "checkSyncStateSetPeriod",
        /// Milliseconds between asks for the controller leader (GET_METADATA_INFO).
        sync_controller_metadata_period: u64 = 10_000 => "syncControllerMetadataPeriod",
        /// Milliseconds of silence after which controllers take this broker for dead (sent in each heartbeat). 5 s, not RocketMQ's 10 s: five missed beats, and a paused or cut-off master is replaced within 10 s (the README's measured figures).
        controller_heart_beat_timeout_mills: u64 = 5_000 => "controllerHeartBeatTimeoutMills",
        /// Lower wins an election among equally up-to-date replicas.
        broker_election_priority: i32 = i32::MAX => "brokerElectionPriority",
        /// Milliseconds between heartbeats to every controller.
        broker_heartbeat_interval: u64 = 1_000 => "brokerHeartbeatInterval",
        /// A SYNC write waits for every member of the SyncStateSet (inSyncReplicas is then ignored).
        all_ack_in_sync_state_set: bool = false => "allAckInSyncStateSet",
        /// Replicas, the master included, a SYNC write waits for.
        in_sync_replicas: i32 = 1 => "inSyncReplicas",
        /// Below this many in-sync replicas, SYNC writes are refused (IN_SYNC_REPLICAS_NOT_ENOUGH).
        min_in_sync_replicas: i32 = 1 => "minInSyncReplicas",
        /// Milliseconds a replica may lag before the master drops it from the SyncStateSet. 5 s, not RocketMQ's 15 s: as long as a master may be silent before it is replaced (controllerHeartBeatTimeoutMills), since until then a lost replica holds up every write that waits for the whole SyncStateSet.
        ha_max_time_slave_not_catchup: u64 = 5_000 => "haMaxTimeSlaveNotCatchup",
        /// The epoch file (default {storePathRootDir}/epochFileCheckpoint).
        store_path_epoch_file: Option<String> = None => "storePathEpochFile",
        /// The file holding this broker's controller id (default {storePathRootDir}/brokerIdentity).
        store_path_broker_identity: Option<String> = None => "storePathBrokerIdentity",
    }
}

impl ControllerModeConfig {
    /// The controllers' addresses.
    pub fn controller_addrs(&self) -> Vec<String> {
        self.controller_addr
            .split(';')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// `storePathEpochFile`, else under the store root.
    pub fn epoch_file(&self, store_root: &Path) -> PathBuf {
        self.store_path_epoch_file
            .as_ref()
            .map(PathBuf::from)
            .unwrap_or_else(|| store_root.join("epochFileCheckpoint"))
    }

    /// `storePathBrokerIdentity`, else under the store root.
    pub fn identity_file(&self, store_root: &Path) -> PathBuf {
        self.store_path_broker_identity
            .as_ref()
            .map(PathBuf::from)
            .unwrap_or_else(|| store_root.join("brokerIdentity"))
    }

    /// A period key as a duration (at least 10 ms).
    pub fn period(ms: u64) -> Duration {
        Duration::from_millis(ms.max(10))
    }

    /// Why these settings cannot run, if they cannot.
    pub fn validate(&self) -> Result<(), String> {
        if !self.enable_controller_mode {
            return Ok(());
        }
        if self.controller_addrs().is_empty() {
            return Err("enableControllerMode=true needs controllerAddr (the controllers' host:port;host:port)".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::BrokerSettings;

    /// RocketMQ's quick-start broker of controller mode: every key is read (none ignored);
    /// without controllers to ask, it refuses to start.
    #[test]
    fn reads_rocketmqs_keys() {
        let mut s = BrokerSettings::new("/tmp/rocketpy-test-store");
        s.apply_properties(
            "brokerClusterName = DefaultCluster\nbrokerName = broker-a\nbrokerId = -1\nbrokerRole = SLAVE\nenableControllerMode = true\ncontrollerAddr = 127.0.0.1:9878\nallAckInSyncStateSet=true\n",
        )
        .unwrap();
        assert!(s.controller.enable_controller_mode);
        assert!(s.controller.all_ack_in_sync_state_set);
        assert_eq!(s.controller.controller_addrs(), ["127.0.0.1:9878"]);
        s.validate().unwrap();
        s.controller.controller_addr.clear();
        assert!(s
            .validate()
            .unwrap_err()
            .to_string()
            .contains("controllerAddr"));
    }
}
