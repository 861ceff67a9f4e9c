//! Broker settings under RocketMQ's `BrokerConfig` / `NettyServerConfig` key names, read from a
//! Java-style properties file (broker.conf). Store keys go to [`StoreConfig`].

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use rocketpy_protocol::topic::validate_topic;
use rocketpy_store::StoreConfig;

use crate::error::{BrokerError, Result};

/// Settings owned by the broker.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// `brokerClusterName`.
    pub broker_cluster_name: String,
    /// `brokerName`.
    pub broker_name: String,
    /// `brokerId` (0 = master).
    pub broker_id: i64,
    /// `brokerIP1`: the address advertised to name servers and clients.
    pub broker_ip1: Option<String>,
    /// `listenPort`.
    pub listen_port: u16,
    /// Interface to bind (not a RocketMQ key; RocketMQ binds all interfaces).
    pub bind_address: String,
    /// `namesrvAddr`: name servers, `;`-separated.
    pub namesrv_addr: Option<String>,
    /// `autoCreateTopicEnable`.
    pub auto_create_topic_enable: bool,
    /// `autoCreateSubscriptionGroup`.
    pub auto_create_subscription_group: bool,
    /// `defaultTopicQueueNums`: queues of the TBW102 template.
    pub default_topic_queue_nums: i32,
    /// `brokerPermission`.
    pub broker_permission: i32,
    /// `registerNameServerPeriod` (ms).
    pub register_name_server_period: u64,
    /// `registerBrokerTimeoutMills`.
    pub register_broker_timeout_mills: u64,
    /// `flushConsumerOffsetInterval` (ms).
    pub flush_consumer_offset_interval: u64,
    /// `longPollingEnable`.
    pub long_polling_enable: bool,
    /// `shortPollingTimeMills`.
    pub short_polling_time_mills: u64,
    /// `channelExpiredTimeout` (ms): consumers without heartbeat this long are removed.
    pub channel_expired_timeout: u64,
    /// `clientChannelMaxIdleTimeSeconds`: idle connections are closed.
    pub client_channel_max_idle_time_seconds: u64,
    /// `waitTimeMillsInSendQueue`: a send that waited longer is answered SYSTEM_BUSY.
    pub wait_time_mills_in_send_queue: u64,
    /// `osPageCacheBusyTimeOutMills`: a put stuck this long makes sends answer SYSTEM_BUSY.
    pub os_page_cache_busy_time_out_mills: u64,
    /// Queue locks expire after this (ms) without renewal
    /// (`rocketmq.broker.rebalance.lockMaxLiveTime`).
    pub rebalance_lock_max_live_time: u64,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig {
            broker_cluster_name: "DefaultCluster".into(),
            broker_name: "broker-a".into(),
            broker_id: 0,
            broker_ip1: None,
            listen_port: 10911,
            bind_address: "0.0.0.0".into(),
            namesrv_addr: None,
            auto_create_topic_enable: true,
            auto_create_subscription_group: true,
            default_topic_queue_nums: 8,
            broker_permission: 6,
            register_name_server_period: 30_000,
            register_broker_timeout_mills: 6_000,
            flush_consumer_offset_interval: 5_000,
            long_polling_enable: true,
            short_polling_time_mills: 1_000,
            channel_expired_timeout: 120_000,
            client_channel_max_idle_time_seconds: 120,
            wait_time_mills_in_send_queue: 200,
            os_page_cache_busy_time_out_mills: 1000,
            rebalance_lock_max_live_time: 60_000,
        }
    }
}

fn parse<T: FromStr>(key: &str, value: &str) -> Result<T> {
    value
        .trim()
        .parse()
        .map_err(|_| BrokerError::Config(format!("{key}: cannot parse {value:?}")))
}

fn parse_bool(key: &str, value: &str) -> Result<bool> {
    match value.trim() {
        "true" | "TRUE" | "True" => Ok(true),
        "false" | "FALSE" | "False" => Ok(false),
        other => Err(BrokerError::Config(format!(
            "{key}: expected true or false, not {other:?}"
        ))),
    }
}

impl BrokerConfig {
    /// Sets one key; `Ok(false)` when the key is not a broker key.
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool> {
        let v = value.trim();
        match key {
            "brokerClusterName" => self.broker_cluster_name = v.to_owned(),
            "brokerName" => self.broker_name = v.to_owned(),
            "brokerId" => self.broker_id = parse(key, v)?,
            "brokerIP1" => self.broker_ip1 = Some(v.to_owned()).filter(|s| !s.is_empty()),
            "listenPort" => self.listen_port = parse(key, v)?,
            "bindAddress" => self.bind_address = v.to_owned(),
            "namesrvAddr" => self.namesrv_addr = Some(v.to_owned()).filter(|s| !s.is_empty()),
            "autoCreateTopicEnable" => self.auto_create_topic_enable = parse_bool(key, v)?,
            "autoCreateSubscriptionGroup" => {
                self.auto_create_subscription_group = parse_bool(key, v)?
            }
            "defaultTopicQueueNums" => self.default_topic_queue_nums = parse(key, v)?,
            "brokerPermission" => self.broker_permission = parse(key, v)?,
            "registerNameServerPeriod" => self.register_name_server_period = parse(key, v)?,
            "registerBrokerTimeoutMills" => self.register_broker_timeout_mills = parse(key, v)?,
            "flushConsumerOffsetInterval" => self.flush_consumer_offset_interval = parse(key, v)?,
            "longPollingEnable" => self.long_polling_enable = parse_bool(key, v)?,
            "shortPollingTimeMills" => self.short_polling_time_mills = parse(key, v)?,
            "channelExpiredTimeout" => self.channel_expired_timeout = parse(key, v)?,
            "clientChannelMaxIdleTimeSeconds" => {
                self.client_channel_max_idle_time_seconds = parse(key, v)?
            }
            "waitTimeMillsInSendQueue" => self.wait_time_mills_in_send_queue = parse(key, v)?,
            "osPageCacheBusyTimeOutMills" => {
                self.os_page_cache_busy_time_out_mills = parse(key, v)?
            }
            "rebalanceLockMaxLiveTime" => self.rebalance_lock_max_live_time = parse(key, v)?,
            _ => return Ok(false),
        }
        Ok(true)
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

    /// Interval of name server registration.
    pub fn register_period(&self) -> Duration {
        Duration::from_millis(self.register_name_server_period.max(1000))
    }
}

/// Everything a broker needs: its own keys and its store's.
#[derive(Debug, Clone)]
pub struct BrokerSettings {
    /// Broker keys.
    pub broker: BrokerConfig,
    /// Store keys.
    pub store: StoreConfig,
}

impl BrokerSettings {
    /// Defaults with the store under `store_root`.
    pub fn new(store_root: impl Into<PathBuf>) -> Self {
        BrokerSettings {
            broker: BrokerConfig::default(),
            store: StoreConfig::new(store_root),
        }
    }

    /// Sets one key (broker or store). Unknown keys are logged and ignored, as RocketMQ does.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        if self.broker.set(key, value)? {
            return Ok(());
        }
        match self.store.set(key, value) {
            Ok(true) => Ok(()),
            Ok(false) => {
                tracing::warn!(key, "unknown configuration key ignored");
                Ok(())
            }
            Err(e) => Err(BrokerError::Config(e.to_string())),
        }
    }

    /// Applies a properties file's text.
    pub fn apply_properties(&mut self, text: &str) -> Result<()> {
        for (key, value) in parse_properties(text) {
            self.set(&key, &value)?;
        }
        Ok(())
    }

    /// Checks names that become topics or paths.
    pub fn validate(&self) -> Result<()> {
        for (what, name) in [
            ("brokerName", &self.broker.broker_name),
            ("brokerClusterName", &self.broker.broker_cluster_name),
        ] {
            validate_topic(name).map_err(|e| BrokerError::Config(format!("{what}: {e}")))?;
        }
        self.store
            .validate()
            .map_err(|e| BrokerError::Config(e.to_string()))
    }
}

/// Parses Java properties text: `key=value`, `key: value` or `key value`; `#` and `!`
/// comments; a trailing `\` continues a line. Escapes other than `\\` are kept as written.
pub fn parse_properties(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut logical = String::new();
    for raw in text.lines() {
        let line = raw.trim_start();
        if logical.is_empty() && (line.is_empty() || line.starts_with('#') || line.starts_with('!'))
        {
            continue;
        }
        if let Some(stripped) = line.strip_suffix('\\').filter(|s| !s.ends_with('\\')) {
            logical.push_str(stripped);
            continue;
        }
        logical.push_str(line);
        let entry = std::mem::take(&mut logical);
        let entry = entry.trim();
        let split = entry.find(|c: char| c == '=' || c == ':' || c.is_whitespace());
        let (key, value) = match split {
            Some(i) => {
                let rest = entry[i..].trim_start();
                let rest = rest
                    .strip_prefix('=')
                    .or_else(|| rest.strip_prefix(':'))
                    .unwrap_or(rest);
                (&entry[..i], rest.trim())
            }
            None => (entry, ""),
        };
        if !key.is_empty() {
            out.push((key.to_owned(), value.replace("\\\\", "\\")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_syntax() {
        let text = "# comment\n! also\nbrokerName = broker-b\nlistenPort:10921\nnamesrvAddr 127.0.0.1:9876;\\\n  127.0.0.1:9877\nempty=\n";
        let props = parse_properties(text);
        assert_eq!(
            props,
            vec![
                ("brokerName".into(), "broker-b".into()),
                ("listenPort".into(), "10921".into()),
                ("namesrvAddr".into(), "127.0.0.1:9876;127.0.0.1:9877".into()),
                ("empty".into(), "".into()),
            ]
        );
    }

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
        assert!(s.set("autoCreateTopicEnable", "maybe").is_err());
        s.broker.broker_name = "../evil".into();
        assert!(s.validate().is_err());
    }
}
