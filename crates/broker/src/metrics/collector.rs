//! Gauges computed from the broker's state at scrape time, under RocketMQ 5.x's names:
//! table sizes, connections, consumer lag (messages, age of the oldest unconsumed message,
//! in-flight and ready messages, queueing time), storage, and the broker's permission.
//!
//! Lag is computed for every committed `(topic, group)` pair, online or not, so the lag of a
//! stopped consumer (or of a Spark job between micro-batches) stays visible.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use rocketpy_metrics::collect::{gauge, gauge_family, Labels};
use rocketpy_protocol::body::heartbeat::ConsumeType;
use rocketpy_protocol::topic::RETRY_GROUP_TOPIC_PREFIX;

use super::labels::{is_system, is_system_group};
use crate::processor::admin_view::version_desc;
use crate::state::BrokerInner;

/// Reads the broker when scraped; holds it weakly so a stopped broker is not kept alive.
#[derive(Debug)]
pub struct BrokerCollector {
    broker: Weak<BrokerInner>,
}

impl BrokerCollector {
    /// A collector of `broker`.
    pub fn new(broker: &Arc<BrokerInner>) -> Self {
        BrokerCollector {
            broker: Arc::downgrade(broker),
        }
    }
}

/// One consumer group's position in one topic, summed over its queues.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Lag {
    /// Messages stored after the committed offsets.
    pub messages: i64,
    /// Messages pulled but not committed.
    pub inflight: i64,
    /// Store time of the oldest unconsumed message (ms), 0 if none.
    pub oldest_unconsumed_ms: i64,
    /// Messages stored after the pull offsets: ready to be pulled (RocketMQ's "available").
    pub ready: i64,
    /// Store time of the oldest message not pulled yet (ms), 0 if none.
    pub oldest_unpulled_ms: i64,
}

/// The older of two store times, 0 meaning none.
fn older(current: i64, candidate: Option<i64>) -> i64 {
    match candidate {
        Some(t) if t > 0 && (current == 0 || t < current) => t,
        _ => current,
    }
}

/// Lag of every committed `(topic, group)` pair whose topic still has queues.
pub fn lags(broker: &BrokerInner) -> Vec<((String, String), Lag)> {
    let mut out = Vec::new();
    for (topic, group, queues) in broker.offsets.all() {
        if broker.topics.get(&topic).is_none() {
            continue;
        }
        let mut lag = Lag::default();
        for (queue_id, committed) in queues {
            let max = broker.store.max_offset_in_queue(&topic, queue_id);
            let behind = (max - committed).max(0);
            lag.messages += behind;
            // RocketMQ's pull offset falls back to the committed one (`queryPullOffset`).
            let pulled = broker
                .metrics
                .as_ref()
                .and_then(|m| m.pulled_offset(&group, &topic, queue_id))
                .unwrap_or(committed);
            lag.inflight += (pulled.min(max) - committed).max(0);
            let ready = (max - pulled).max(0);
            lag.ready += ready;
            let stored_at = |offset| {
                broker
                    .store
                    .message_store_timestamp(&topic, queue_id, offset)
            };
            if behind > 0 {
                lag.oldest_unconsumed_ms = older(lag.oldest_unconsumed_ms, stored_at(committed));
            }
            if ready > 0 {
                lag.oldest_unpulled_ms = older(lag.oldest_unpulled_ms, stored_at(pulled));
            }
        }
        out.push(((topic, group), lag));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn consume_mode(t: ConsumeType) -> &'static str {
    match t {
        ConsumeType::ConsumeActively => "pull",
        ConsumeType::ConsumePassively => "push",
        ConsumeType::ConsumePop => "pop",
    }
}

fn count<K: Ord>(items: impl IntoIterator<Item = K>) -> BTreeMap<K, i64> {
    let mut counts = BTreeMap::new();
    for k in items {
        *counts.entry(k).or_insert(0) += 1;
    }
    counts
}

impl Collector for BrokerCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(broker) = self.broker.upgrade() else {
            return Ok(());
        };
        let e = &mut encoder;
        gauge(
            e,
            "rocketmq_topic_number",
            "Active topic number",
            broker.topics.len() as i64,
        )?;
        gauge(
            e,
            "rocketmq_consumer_group_number",
            "Active subscription group number",
            broker.groups.len() as i64,
        )?;
        gauge(
            e,
            "rocketmq_broker_permission",
            "Broker permission",
            i64::from(broker.permission()),
        )?;

        let producers = count(
            broker
                .producers
                .members()
                .into_iter()
                .map(|(language, version)| (language.name(), version)),
        );
        gauge_family(
            e,
            "rocketmq_producer_connections",
            "Producer connections",
            producers.into_iter().map(|((language, version), n)| {
                let labels: Labels = vec![
                    ("language", language.to_lowercase()),
                    ("version", version_desc(version).to_lowercase()),
                    ("protocol_type", "remoting".into()),
                ];
                (labels, n)
            }),
        )?;
        let consumers = count(
            broker
                .consumers
                .members()
                .into_iter()
                .map(|(g, l, v, t)| (g, l.name(), v, consume_mode(t))),
        );
        gauge_family(
            e,
            "rocketmq_consumer_connections",
            "Consumer connections",
            consumers
                .into_iter()
                .map(|((group, language, version, mode), n)| {
                    let labels: Labels = vec![
                        ("consumer_group", group.clone()),
                        ("language", language.to_lowercase()),
                        ("version", version_desc(version).to_lowercase()),
                        ("consume_mode", mode.into()),
                        ("protocol_type", "remoting".into()),
                        ("is_system", is_system_group(&group).to_string()),
                    ];
                    (labels, n)
                }),
        )?;

        let lags = lags(&broker);
        let now = broker.now_millis();
        let lag_labels = |topic: &str, group: &str| -> Labels {
            vec![
                ("consumer_group", group.to_owned()),
                ("topic", topic.to_owned()),
                (
                    "is_retry",
                    topic.starts_with(RETRY_GROUP_TOPIC_PREFIX).to_string(),
                ),
                ("is_system", is_system(topic, group).to_string()),
            ]
        };
        gauge_family(
            e,
            "rocketmq_consumer_lag_messages",
            "Consumer lag messages",
            lags.iter()
                .map(|((t, g), lag)| (lag_labels(t, g), lag.messages)),
        )?;
        let age = |stored_ms: i64| {
            if stored_ms == 0 {
                0
            } else {
                (now - stored_ms).max(0)
            }
        };
        gauge_family(
            e,
            "rocketmq_consumer_lag_latency_milliseconds",
            "Consumer lag time in milliseconds (age of the oldest unconsumed message)",
            lags.iter()
                .map(|((t, g), lag)| (lag_labels(t, g), age(lag.oldest_unconsumed_ms))),
        )?;
        gauge_family(
            e,
            "rocketmq_consumer_ready_messages",
            "Consumer ready messages (stored, not pulled yet)",
            lags.iter()
                .map(|((t, g), lag)| (lag_labels(t, g), lag.ready)),
        )?;
        gauge_family(
            e,
            "rocketmq_consumer_queueing_latency_milliseconds",
            "Consumer queueing time in milliseconds (age of the oldest message not pulled yet)",
            lags.iter()
                .map(|((t, g), lag)| (lag_labels(t, g), age(lag.oldest_unpulled_ms))),
        )?;
        gauge_family(
            e,
            "rocketmq_consumer_inflight_messages",
            "Consumer inflight messages (pulled, not yet committed)",
            lags.iter()
                .map(|((t, g), lag)| (lag_labels(t, g), lag.inflight)),
        )?;

        // RocketMQ reports the disk holding the store: its used bytes.
        if let Ok((total, avail)) = broker.store.disk_space() {
            gauge(
                e,
                "rocketmq_storage_size_bytes",
                "Broker storage size in bytes (used space of the store's disk)",
                i64::try_from(total.saturating_sub(avail)).unwrap_or(i64::MAX),
            )?;
        }
        // Age of the oldest message the store still holds; absent while it holds none, as
        // in RocketMQ.
        if let Some(earliest) = broker.store.earliest_message_time().filter(|t| *t > 0) {
            gauge(
                e,
                "rocketmq_storage_message_reserve_time_milliseconds",
                "Broker message reserve time in milliseconds (age of the oldest stored message)",
                (now - earliest).max(0),
            )?;
        }
        gauge(
            e,
            "rocketmq_storage_flush_behind_bytes",
            "Broker flush behind bytes",
            broker.store.flush_behind_bytes(),
        )?;
        // Dispatch to the consume queues and the index happens inside each append, before it
        // is acknowledged, so nothing is ever waiting for it.
        gauge(
            e,
            "rocketmq_storage_dispatch_behind_bytes",
            "Broker dispatch behind bytes",
            0,
        )
    }
}
