//! The broker's Prometheus metrics, under RocketMQ 5.x's names and labels (its
//! `BrokerMetricsManager`, `DefaultStoreMetricsManager` and remoting metrics), exported when
//! `metricsExporterType=PROM`.
//!
//! Traffic is counted once per request on the send and pull paths ([`BrokerMetrics`]); lag,
//! connections, table sizes and storage are computed from the broker's state when scraped
//! ([`collector`]). With metrics disabled the broker holds no [`BrokerMetrics`] and the
//! paths skip counting entirely.

pub mod collector;
pub mod labels;

use std::collections::HashMap;

use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// RocketMQ 5.x's message size buckets: 1 KiB, 4 KiB, 512 KiB, 1, 2 and 4 MiB.
const MESSAGE_SIZE_BUCKETS: [f64; 6] = [
    1024.0,
    4096.0,
    524_288.0,
    1_048_576.0,
    2_097_152.0,
    4_194_304.0,
];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InLabels {
    topic: String,
    message_type: &'static str,
    is_system: bool,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutLabels {
    topic: String,
    consumer_group: String,
    is_retry: bool,
    is_system: bool,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DlqLabels {
    consumer_group: String,
    topic: String,
    is_system: bool,
}

fn message_size_histogram() -> Histogram {
    Histogram::new(MESSAGE_SIZE_BUCKETS)
}

/// group -> topic -> queue -> the next offset a pull handed out (for in-flight counts).
type PulledOffsets = HashMap<String, HashMap<String, HashMap<i32, i64>>>;

/// Counters the send and pull paths update; one label lookup per request.
#[derive(Debug)]
pub struct BrokerMetrics {
    messages_in: Family<InLabels, Counter>,
    throughput_in: Family<InLabels, Counter>,
    message_size: Family<InLabels, Histogram, fn() -> Histogram>,
    messages_out: Family<OutLabels, Counter>,
    throughput_out: Family<OutLabels, Counter>,
    send_to_dlq: Family<DlqLabels, Counter>,
    pulled: Mutex<PulledOffsets>,
}

impl BrokerMetrics {
    /// The counters, registered in `registry`.
    pub fn register(registry: &mut Registry) -> BrokerMetrics {
        let m = BrokerMetrics {
            messages_in: Family::default(),
            throughput_in: Family::default(),
            message_size: Family::new_with_constructor(message_size_histogram as fn() -> Histogram),
            messages_out: Family::default(),
            throughput_out: Family::default(),
            send_to_dlq: Family::default(),
            pulled: Mutex::default(),
        };
        // Counter names go in without `_total`: the encoder adds it.
        registry.register(
            "rocketmq_messages_in",
            "Total number of incoming messages",
            m.messages_in.clone(),
        );
        registry.register(
            "rocketmq_throughput_in",
            "Total traffic of incoming messages in bytes",
            m.throughput_in.clone(),
        );
        registry.register(
            "rocketmq_message_size",
            "Incoming messages size in bytes",
            m.message_size.clone(),
        );
        registry.register(
            "rocketmq_messages_out",
            "Total number of outgoing messages",
            m.messages_out.clone(),
        );
        registry.register(
            "rocketmq_throughput_out",
            "Total traffic of outgoing messages in bytes",
            m.throughput_out.clone(),
        );
        registry.register(
            "rocketmq_send_to_dlq_messages",
            "Consume failed messages sent to the dead-letter queue",
            m.send_to_dlq.clone(),
        );
        m
    }

    /// `count` messages of `bytes` stored into `topic`. Retry and DLQ topics are not
    /// counted, as in RocketMQ (their messages were counted when first sent).
    pub fn on_put(&self, topic: &str, message_type: &'static str, count: u64, bytes: u64) {
        if count == 0 || labels::is_retry_or_dlq(topic) {
            return;
        }
        let key = InLabels {
            topic: topic.to_owned(),
            message_type,
            is_system: labels::is_system_topic(topic),
        };
        self.messages_in.get_or_create(&key).inc_by(count);
        self.throughput_in.get_or_create(&key).inc_by(bytes);
        self.message_size
            .get_or_create(&key)
            .observe((bytes / count) as f64);
    }

    /// A pull of `group` returned `count` messages of `bytes` from `topic`'s `queue_id`, the
    /// next being `next_offset`.
    pub fn on_get(
        &self,
        (topic, group, queue_id): (&str, &str, i32),
        count: u64,
        bytes: u64,
        next_offset: i64,
    ) {
        if count == 0 {
            return;
        }
        self.note_pulled(group, topic, queue_id, next_offset);
        if labels::is_retry_or_dlq(topic) {
            return;
        }
        let key = OutLabels {
            topic: topic.to_owned(),
            consumer_group: group.to_owned(),
            is_retry: false,
            is_system: labels::is_system(topic, group),
        };
        self.messages_out.get_or_create(&key).inc_by(count);
        self.throughput_out.get_or_create(&key).inc_by(bytes);
    }

    /// A message of `group` (consumed from `topic`) went to the dead-letter queue.
    pub fn on_dlq(&self, group: &str, topic: &str) {
        let key = DlqLabels {
            consumer_group: group.to_owned(),
            topic: topic.to_owned(),
            is_system: labels::is_system(topic, group),
        };
        self.send_to_dlq.get_or_create(&key).inc();
    }

    fn note_pulled(&self, group: &str, topic: &str, queue_id: i32, next_offset: i64) {
        let mut pulled = self.pulled.lock();
        // Look up by &str first: a steady consumer allocates nothing here.
        let topics = match pulled.get_mut(group) {
            Some(t) => t,
            None => pulled.entry(group.to_owned()).or_default(),
        };
        let queues = match topics.get_mut(topic) {
            Some(q) => q,
            None => topics.entry(topic.to_owned()).or_default(),
        };
        let slot = queues.entry(queue_id).or_insert(next_offset);
        *slot = (*slot).max(next_offset);
    }

    /// The next offset pulls of `group` reached in `topic`'s `queue_id`, if any pulled.
    pub fn pulled_offset(&self, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
        self.pulled
            .lock()
            .get(group)?
            .get(topic)?
            .get(&queue_id)
            .copied()
    }

    /// Forgets what pulls of `topic` (or of `group`) reached: topic and group deletion.
    pub fn forget(&self, topic: Option<&str>, group: Option<&str>) {
        let mut pulled = self.pulled.lock();
        if let Some(group) = group {
            pulled.remove(group);
        }
        if let Some(topic) = topic {
            for topics in pulled.values_mut() {
                topics.remove(topic);
            }
        }
    }
}
