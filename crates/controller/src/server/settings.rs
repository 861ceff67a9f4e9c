//! A controller's configuration: RocketMQ's `ControllerConfig` keys (the same file a RocketMQ
//! controller or a name server with `enableControllerInNamesrv` reads), plus a few of
//! rocketpy's own, each marked as such.
//!
//! What must stay true: every key is RocketMQ's name for the same setting (a compatibility
//! surface); a key rocketpy cannot honour is refused with what to do instead
//! ([`ControllerSettings::check`]), never accepted and ignored.

use std::path::PathBuf;

use super::peers::{PeerError, Peers};

rocketpy_protocol::config_struct! {
    /// Settings of one controller (RocketMQ's `ControllerConfig`).
    pub struct ControllerSettings {
        /// `DLedger` (the only type rocketpy serves; its Raft is openraft's, see docs/controller-design.md §7); `jRaft` is refused.
        controller_type: String = "DLedger".into() => "controllerType",
        /// Name of the controller group (reported by GET_METADATA_INFO).
        controller_dleger_group: String = String::new() => "controllerDLegerGroup",
        /// The group's controllers, `id-host:port;id-host:port`; brokers' `controllerAddr` names these ports.
        controller_dleger_peers: String = String::new() => "controllerDLegerPeers",
        /// This controller's id among the peers.
        controller_dleger_self_id: String = String::new() => "controllerDLegerSelfId",
        /// Directory of the Raft log, vote and snapshots (empty: ~/DLedgerController).
        controller_store_path: String = String::new() => "controllerStorePath",
        /// Elect a master outside the SyncStateSet when none of it is alive (acknowledged messages may be lost).
        enable_elect_unclean_master: bool = false => "enableElectUncleanMaster",
        /// Push NOTIFY_BROKER_ROLE_CHANGED to a group's live brokers after each election.
        notify_broker_role_changed: bool = true => "notifyBrokerRoleChanged",
        /// Milliseconds between scans for brokers whose heartbeat expired. 1 s, not RocketMQ's 5 s: a scan walks an in-memory table, and its period adds to every failover of a paused or cut-off master.
        scan_not_active_broker_interval: u64 = 1_000 => "scanNotActiveBrokerInterval",
        /// Milliseconds between the leader's scans for groups whose master is gone (1 s, not RocketMQ's 5 s: as above).
        scan_inactive_master_interval: u64 = 1_000 => "scanInactiveMasterInterval",
        /// Attempts of one election the controller triggers itself.
        elect_master_max_retry_count: u64 = 3 => "electMasterMaxRetryCount",
        /// Append an empty entry before answering reads; rocketpy's reads always confirm leadership with a quorum first (ReadIndex), which is at least as strong, so both values behave the same.
        is_process_read_event: bool = false => "isProcessReadEvent",
        /// rocketpy's key: milliseconds after start during which only a group's first election may happen, so that a restarted controller learns which brokers are alive (from their heartbeats) before it replaces a master (docs/controller-design.md §7).
        election_warm_up_millis: u64 = 10_000 => "electionWarmUpMillis",
        /// rocketpy's key: the interface to bind (default: the host of this controller's peer address).
        bind_address: String = String::new() => "bindAddress",
        /// Whether requests are checked against the ACL file's accounts (brokers, admins and peer controllers must sign).
        acl_enable: bool = false => "aclEnable",
        /// The ACL file (default: conf/plain_acl.yml under rocketmqHome).
        acl_file: Option<String> = None => "aclFile",
        /// RocketMQ's home directory (default: $ROCKETMQ_HOME, else the working directory).
        rocketmq_home: Option<String> = None => "rocketmqHome",
        /// Where metrics go: DISABLE or PROM (a Prometheus endpoint); RocketMQ 5.x's key.
        metrics_exporter_type: rocketpy_metrics::MetricsExporterType = rocketpy_metrics::MetricsExporterType::Disable => "metricsExporterType",
        /// Interface of the Prometheus endpoint (empty: the interface the controller port binds).
        metrics_prom_exporter_host: String = String::new() => "metricsPromExporterHost",
        /// Port of the Prometheus endpoint (0 picks a free one).
        metrics_prom_exporter_port: u16 = 5557 => "metricsPromExporterPort",
        /// Constant labels added to every metric, `k1:v1,k2:v2`.
        metrics_label: String = String::new() => "metricsLabel",
        /// The account this controller signs its requests to peers and brokers with (with aclEnable).
        access_key: Option<String> = None => "accessKey",
        /// The secret of `accessKey`.
        secret_key: Option<String> = None => "secretKey",
    }
}

/// Why settings cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("controllerType={0} is not supported: rocketpy's controllers replicate with Raft (openraft) under controllerType=DLedger; remove the key or set it to DLedger")]
    Type(String),
    #[error(transparent)]
    Peers(#[from] PeerError),
    #[error("accessKey and secretKey go together: set both or neither")]
    HalfCredentials,
}

impl ControllerSettings {
    /// The peers and this controller's place among them, or why the settings cannot work.
    pub fn check(&self) -> Result<Peers, SettingsError> {
        if !self.controller_type.eq_ignore_ascii_case("DLedger") {
            return Err(SettingsError::Type(self.controller_type.clone()));
        }
        if self.access_key.is_some() != self.secret_key.is_some() {
            return Err(SettingsError::HalfCredentials);
        }
        Ok(Peers::parse(
            &self.controller_dleger_peers,
            &self.controller_dleger_self_id,
        )?)
    }

    /// Where the Raft store lives: `controllerStorePath`, else RocketMQ's default
    /// `~/DLedgerController`.
    pub fn store_path(&self) -> PathBuf {
        if !self.controller_store_path.is_empty() {
            return PathBuf::from(&self.controller_store_path);
        }
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default();
        home.join(format!("{}Controller", self.controller_type))
    }

    /// The signing account, when one is set.
    pub fn credentials(&self) -> Option<rocketpy_protocol::signature::Credentials> {
        match (&self.access_key, &self.secret_key) {
            (Some(ak), Some(sk)) => Some(rocketpy_protocol::signature::Credentials::new(
                ak.clone(),
                sk.clone(),
                None,
            )),
            _ => None,
        }
    }

    /// The metrics exporter's keys.
    pub fn exporter(&self) -> rocketpy_metrics::ExporterSettings {
        rocketpy_metrics::ExporterSettings {
            exporter_type: self.metrics_exporter_type,
            host: self.metrics_prom_exporter_host.clone(),
            port: self.metrics_prom_exporter_port,
            labels: self.metrics_label.clone(),
        }
    }

    /// The effective configuration as properties text (GET_CONTROLLER_CONFIG's body); the
    /// secret is left out.
    pub fn properties(&self) -> String {
        self.entries()
            .into_iter()
            .filter(|(k, _)| *k != "secretKey")
            .map(|(k, v)| format!("{k}={v}\n"))
            .collect()
    }
}

/// The keys UPDATE_CONTROLLER_CONFIG may change while the controller runs; the others take
/// effect at start only (peers, store, ports, ACL), so changing them at run time would be a
/// setting that silently does nothing.
pub const RUNTIME_KEYS: &[&str] = &[
    "enableElectUncleanMaster",
    "notifyBrokerRoleChanged",
    "electMasterMaxRetryCount",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rocketmq_sample_reads() {
        let mut s = ControllerSettings::default();
        for (k, v) in rocketpy_protocol::config::parse_properties(
            "controllerDLegerGroup = group1\ncontrollerDLegerPeers = n0-127.0.0.1:9878;n1-127.0.0.1:9868;n2-127.0.0.1:9858\ncontrollerDLegerSelfId = n0\n",
        ) {
            assert!(s.set(&k, &v).unwrap(), "{k}");
        }
        let peers = s.check().unwrap();
        assert_eq!(peers.self_addr(), "127.0.0.1:9878");
        assert!(s.properties().contains("controllerDLegerGroup=group1\n"));
    }

    #[test]
    fn refuses_what_it_cannot_serve() {
        let s = ControllerSettings {
            controller_type: "jRaft".into(),
            ..Default::default()
        };
        assert!(s.check().unwrap_err().to_string().contains("DLedger"));
        let s = ControllerSettings {
            controller_dleger_peers: "n0-127.0.0.1:1".into(),
            controller_dleger_self_id: "n0".into(),
            access_key: Some("admin123".into()),
            ..Default::default()
        };
        assert!(matches!(s.check(), Err(SettingsError::HalfCredentials)));
    }
}
