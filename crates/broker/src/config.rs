//! Broker settings under RocketMQ's `BrokerConfig` / `NettyServerConfig` key names, read from a
//! Java-style properties file (broker.conf). Store keys go to [`StoreConfig`].

use std::path::PathBuf;
use std::time::Duration;

use rocketpy_metrics::{ExporterSettings, MetricsExporterType};
use rocketpy_protocol::config::{parse_properties, ConfigError};
use rocketpy_protocol::topic::validate_topic;
use rocketpy_remoting::TlsConfig;
use rocketpy_store::StoreConfig;

use crate::error::{BrokerError, Result};

rocketpy_protocol::config_struct! {
    /// Settings owned by the broker (`BrokerConfig`, `NettyServerConfig`).
    pub struct BrokerConfig {
        /// Cluster the broker belongs to.
        broker_cluster_name: String = "DefaultCluster".into() => "brokerClusterName",
        /// Broker group name (master and slaves share it).
        broker_name: String = "broker-a".into() => "brokerName",
        /// 0 = master.
        broker_id: i64 = 0 => "brokerId",
        /// Address advertised to name servers and clients (default: this host's address).
        broker_ip1: Option<String> = None => "brokerIP1",
        /// Port to listen on (0 picks a free one).
        listen_port: u16 = 10911 => "listenPort",
        /// Interface to bind (not a RocketMQ key: RocketMQ binds every interface).
        bind_address: String = "0.0.0.0".into() => "bindAddress",
        /// Name servers, `;`-separated.
        namesrv_addr: Option<String> = None => "namesrvAddr",
        /// Whether sends may create topics from the TBW102 template.
        auto_create_topic_enable: bool = true => "autoCreateTopicEnable",
        /// Whether unknown consumer groups are created on first use.
        auto_create_subscription_group: bool = true => "autoCreateSubscriptionGroup",
        /// Queues of the TBW102 template.
        default_topic_queue_nums: i32 = 8 => "defaultTopicQueueNums",
        /// Permission bits of the whole broker (6 = read and write).
        broker_permission: i32 = 6 => "brokerPermission",
        /// Milliseconds between registrations with the name servers.
        register_name_server_period: u64 = 30_000 => "registerNameServerPeriod",
        /// Whether periodic registrations send the topic table even when unchanged (false: ask first).
        force_register: bool = true => "forceRegister",
        /// Milliseconds a registration may take.
        register_broker_timeout_mills: u64 = 6_000 => "registerBrokerTimeoutMills",
        /// Milliseconds between saves of consumer offsets.
        flush_consumer_offset_interval: u64 = 5_000 => "flushConsumerOffsetInterval",
        /// Whether pulls that find nothing are held until a message arrives.
        long_polling_enable: bool = true => "longPollingEnable",
        /// Milliseconds a pull is held without long polling.
        short_polling_time_mills: u64 = 1_000 => "shortPollingTimeMills",
        /// Milliseconds without heartbeat after which a consumer is removed.
        channel_expired_timeout: u64 = 120_000 => "channelExpiredTimeout",
        /// Seconds after which idle connections are closed.
        client_channel_max_idle_time_seconds: u64 = 120 => "clientChannelMaxIdleTimeSeconds",
        /// Bytes of answers a connection's peer has not read before the broker reads no more of its requests (RocketMQ 5's key, there a Netty water mark; 0: 4 MiB).
        write_buffer_high_water_mark: usize = 0 => "writeBufferHighWaterMark",
        /// Unread answer bytes at or below which such a connection is read again (0: half the high mark).
        write_buffer_low_water_mark: usize = 0 => "writeBufferLowWaterMark",
        /// Bytes of a connection's requests waiting for later answers (long polls) before the broker reads no more of its requests (rocketpy's key; 0: 16 MiB).
        max_held_request_bytes: usize = 0 => "maxHeldRequestBytes",
        /// Milliseconds a send may wait behind others before SYSTEM_BUSY.
        wait_time_mills_in_send_queue: u64 = 200 => "waitTimeMillsInSendQueue",
        /// Milliseconds a put may be stuck in the store before sends answer SYSTEM_BUSY.
        os_page_cache_busy_time_out_mills: u64 = 1000 => "osPageCacheBusyTimeOutMills",
        /// Whether consumers may filter by SQL92 expressions on message properties (off: their pulls and pops are refused with SYSTEM_ERROR).
        enable_property_filter: bool = false => "enablePropertyFilter",
        /// Milliseconds a consumer group's SQL92 filter is kept after the group left.
        filter_data_clean_time_span: i64 = 86_400_000 => "filterDataCleanTimeSpan",
        /// Whether dispatch computes each message's bloom-filter bit map of the SQL92 filters it matches (kept with the store's `enableConsumeQueueExt=true`), so pulls skip messages without reading them.
        enable_calc_filter_bit_map: bool = false => "enableCalcFilterBitMap",
        /// SQL92 filters (group and topic) the bit map is sized for.
        expect_consumer_num_use_filter: i32 = 32 => "expectConsumerNumUseFilter",
        /// The bit map's false-positive rate, in percent (1 to 99).
        max_error_rate_of_bloom_filter: i32 = 20 => "maxErrorRateOfBloomFilter",
        /// Whether topics may take every message type (`message.type=MIXED`); off, as in RocketMQ, creating a MIXED topic is refused.
        enable_mixed_message_type: bool = false => "enableMixedMessageType",
        /// Whether prepared (transactional) sends are refused.
        reject_transaction_message: bool = false => "rejectTransactionMessage",
        /// Milliseconds a half message waits for its outcome before the broker asks its producer.
        transaction_time_out: u64 = 6_000 => "transactionTimeOut",
        /// Checks of one half message before it is moved to TRANS_CHECK_MAX_TIME_TOPIC.
        transaction_check_max: i32 = 15 => "transactionCheckMax",
        /// Milliseconds between the broker's rounds of transaction checks.
        transaction_check_interval: u64 = 60_000 => "transactionCheckInterval",
        /// Whether consumers reading far behind are sent to a slave (`suggestWhichBrokerId`).
        slave_read_enable: bool = false => "slaveReadEnable",
        /// Milliseconds a queue lock lives without renewal (RocketMQ's system property).
        rebalance_lock_max_live_time: u64 = 60_000 => "rebalanceLockMaxLiveTime",
        /// Where metrics go: DISABLE, PROM (a Prometheus endpoint), OTLP_GRPC or LOG (not served).
        metrics_exporter_type: MetricsExporterType = MetricsExporterType::Disable => "metricsExporterType",
        /// Interface of the Prometheus endpoint (empty: `bindAddress`).
        metrics_prom_exporter_host: String = String::new() => "metricsPromExporterHost",
        /// Port of the Prometheus endpoint (0 picks a free one).
        metrics_prom_exporter_port: u16 = 5557 => "metricsPromExporterPort",
        /// Constant labels added to every metric, `k1:v1,k2:v2`.
        metrics_label: String = String::new() => "metricsLabel",
        /// Slaves the HA port serves, `;`-separated address patterns of plain_acl.yml's form (`10.0.0.5`, `10.0.1.*`): anyone else is closed before a byte is sent (rocketpy's key; RocketMQ's HA port serves anyone). Unset: anyone, which `aclEnable=true` refuses on a master bound beyond loopback.
        ha_allowed_addresses: Option<String> = None => "haAllowedAddresses",
        /// Whether requests are checked against the ACL file's accounts (RocketMQ 4.x's plain ACL).
        acl_enable: bool = false => "aclEnable",
        /// The ACL file (default: conf/plain_acl.yml under rocketmqHome).
        acl_file: Option<String> = None => "aclFile",
        /// RocketMQ's home directory (default: $ROCKETMQ_HOME, else the working directory).
        rocketmq_home: Option<String> = None => "rocketmqHome",
        /// Account the broker signs its own requests with (name server registration, a slave's sync).
        access_key: Option<String> = None => "accessKey",
        /// That account's secret key.
        secret_key: Option<String> = None => "secretKey",
        /// Port of a gRPC endpoint for 5.x clients in this process (RocketMQ proxy's key, 8081 there): -1 none, 0 a free port; needs namesrvAddr.
        grpc_server_port: i32 = -1 => "grpcServerPort",
        /// Furthest ahead a timer message (TIMER_DELIVER_MS / TIMER_DELAY_*) may be delivered, seconds.
        timer_max_delay_sec: i64 = 259_200 => "timerMaxDelaySec",
        /// Invisible time of 5.x receives that ask for none (push consumers), renewed until acked, ms.
        default_invisible_time_mills: i64 = 60_000 => "defaultInvisibleTimeMills",
        /// Shortest invisible time a 5.x client's receive may ask for, ms (RocketMQ proxy's key).
        min_invisible_time_mills_for_recv: i64 = 10_000 => "minInvisibleTimeMillsForRecv",
    }
}

impl BrokerConfig {
    /// What each connection may owe and hold ([`rocketpy_remoting::budget`]).
    pub fn marks(&self) -> rocketpy_remoting::Marks {
        let default = rocketpy_remoting::Marks::default();
        let high = match self.write_buffer_high_water_mark {
            0 => default.high,
            n => n,
        };
        rocketpy_remoting::Marks {
            high,
            low: match self.write_buffer_low_water_mark {
                0 => high / 2,
                n => n,
            },
            held: match self.max_held_request_bytes {
                0 => default.held,
                n => n,
            },
        }
    }

    /// The account of the broker's own requests, when both keys are set.
    pub fn credentials(&self) -> Option<rocketpy_protocol::signature::Credentials> {
        match (&self.access_key, &self.secret_key) {
            (Some(ak), Some(sk)) if !ak.is_empty() && !sk.is_empty() => Some(
                rocketpy_protocol::signature::Credentials::new(ak.clone(), sk.clone(), None),
            ),
            _ => None,
        }
    }

    /// Name server addresses.
    pub fn namesrv_addrs(&self) -> Vec<String> {
        self.namesrv_addr
            .as_deref()
            .unwrap_or_default()
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// The metrics exporter's settings.
    pub fn exporter(&self) -> ExporterSettings {
        ExporterSettings {
            exporter_type: self.metrics_exporter_type,
            host: self.metrics_prom_exporter_host.clone(),
            port: self.metrics_prom_exporter_port,
            labels: self.metrics_label.clone(),
        }
    }

    /// Interval of name server registration.
    pub fn register_period(&self) -> Duration {
        Duration::from_millis(self.register_name_server_period.max(1000))
    }
}

/// Keys whose values are secrets: the effective configuration (`--print-config`,
/// GET_BROKER_CONFIG) shows that they are set, never what they are.
pub const SECRET_KEYS: &[&str] = &[
    "secretKey",
    "tls.server.keyPassword",
    "tls.client.keyPassword",
];
const REDACTED: &str = "******";

/// Everything a broker needs: its own keys, its store's and RocketMQ's TLS keys.
#[derive(Debug, Clone)]
pub struct BrokerSettings {
    /// Broker keys.
    pub broker: BrokerConfig,
    /// Store keys.
    pub store: StoreConfig,
    /// TLS keys (`tls.*`).
    pub tls: TlsConfig,
    /// Controller mode's keys (`enableControllerMode`, `controllerAddr`, ...).
    pub controller: crate::controller_mode::ControllerModeConfig,
}

impl BrokerSettings {
    /// Defaults with the store under `store_root`.
    pub fn new(store_root: impl Into<PathBuf>) -> Self {
        BrokerSettings {
            broker: BrokerConfig::default(),
            store: StoreConfig::new(store_root),
            tls: TlsConfig::default(),
            controller: Default::default(),
        }
    }

    /// Sets one key (broker, store or TLS). Unknown keys are logged and ignored, as RocketMQ
    /// does.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let config = |e: ConfigError| BrokerError::Config(e.to_string());
        if self.broker.set(key, value).map_err(config)?
            || self.store.set(key, value).map_err(config)?
            || self.tls.set(key, value).map_err(config)?
            || self.controller.set(key, value).map_err(config)?
        {
            return Ok(());
        }
        tracing::warn!(key, "unknown configuration key ignored");
        Ok(())
    }

    /// The effective configuration, broker keys, store keys, TLS keys, then controller mode's:
    /// `(key, value, doc)`.
    pub fn entries(&self) -> Vec<(&'static str, String, &'static str)> {
        let docs = BrokerConfig::KEYS
            .iter()
            .chain(StoreConfig::KEYS)
            .chain(TlsConfig::KEYS)
            .chain(crate::controller_mode::ControllerModeConfig::KEYS)
            .map(|k| k.doc);
        self.broker
            .entries()
            .into_iter()
            .chain(self.store.entries())
            .chain(self.tls.entries())
            .chain(self.controller.entries())
            .zip(docs)
            .map(
                |((k, v), doc)| match SECRET_KEYS.contains(&k) && !v.is_empty() {
                    true => (k, REDACTED.to_owned(), doc.trim()),
                    false => (k, v, doc.trim()),
                },
            )
            .collect()
    }

    /// Applies a properties file's text.
    pub fn apply_properties(&mut self, text: &str) -> Result<()> {
        for (key, value) in parse_properties(text) {
            self.set(&key, &value)?;
        }
        Ok(())
    }

    /// What decides who the HA port serves (`ha::allow`).
    pub fn ha_exposure(&self) -> crate::ha::allow::HaExposure<'_> {
        crate::ha::allow::HaExposure {
            allowed_addresses: self.broker.ha_allowed_addresses.as_deref(),
            acl_enable: self.broker.acl_enable,
            master: self.store.broker_role.is_master(),
            bind_address: &self.broker.bind_address,
        }
    }

    /// Checks names that become topics or paths.
    pub fn validate(&self) -> Result<()> {
        for (what, name) in [
            ("brokerName", &self.broker.broker_name),
            ("brokerClusterName", &self.broker.broker_cluster_name),
        ] {
            validate_topic(name).map_err(|e| BrokerError::Config(format!("{what}: {e}")))?;
        }
        crate::ha::allow::allowed_peers(&self.ha_exposure())?;
        self.controller.validate().map_err(BrokerError::Config)?;
        self.store
            .validate()
            .map_err(|e| BrokerError::Config(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_route_keys() {
        let mut s = BrokerSettings::new("/tmp/s");
        s.apply_properties("brokerName=b1\nflushDiskType=SYNC_FLUSH\nsomethingElse=1\nautoCreateTopicEnable=false\n")
            .unwrap();
        assert_eq!(s.broker.broker_name, "b1");
        assert!(!s.broker.auto_create_topic_enable);
        assert_eq!(
            s.store.flush_disk_type,
            rocketpy_store::FlushDiskType::SyncFlush
        );
        assert!(s.set("listenPort", "x").is_err());
        s.set("secretKey", "hunter2").unwrap();
        let shown: Vec<_> = s.entries().into_iter().map(|(k, v, _)| (k, v)).collect();
        assert!(shown.contains(&("secretKey", "******".into())));
        assert!(shown.contains(&("tls.server.keyPassword", String::new())));
        assert!(s.set("autoCreateTopicEnable", "maybe").is_err());
        s.broker.broker_name = "../evil".into();
        assert!(s.validate().is_err());
    }
}
