//! The broker's Prometheus metrics, under RocketMQ 5.x's names and labels (its
//! `BrokerMetricsManager`, `DefaultStoreMetricsManager` and remoting metrics), exported when
//! `metricsExporterType=PROM`.
//!
//! Traffic is counted once per request on the send and pull paths ([`BrokerMetrics`]), as
//! are transaction outcomes and topic / group creations; lag,
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
/// A pull's labels: RocketMQ's pull path writes no `is_retry` (its pop path does).
struct OutLabels {
    topic: String,
    consumer_group: String,
    is_system: bool,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DlqLabels {
    consumer_group: String,
    topic: String,
    is_system: bool,
}

/// RocketMQ 5.x's buckets of `rocketmq_finish_message_latency_milliseconds`, in seconds (its unit says
/// ms, but the value recorded is `(now - born) / 1000`): 5 s, 1 min, 10 min, 1 h, 12 h, 24 h.
const FINISH_LATENCY_BUCKETS_S: [f64; 6] = [5.0, 60.0, 600.0, 3600.0, 43_200.0, 86_400.0];

/// RocketMQ 5.x's buckets of topic and group creation times: 10 ms, 100 ms, 1 s, 3 s, 5 s.
const CREATE_TIME_BUCKETS_MS: [f64; 5] = [10.0, 100.0, 1000.0, 3000.0, 5000.0];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TopicLabels {
    topic: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TopicCreateLabels {
    invocation_status: &'static str,
    is_system: bool,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GroupCreateLabels {
    invocation_status: &'static str,
}

fn message_size_histogram() -> Histogram {
    Histogram::new(MESSAGE_SIZE_BUCKETS)
}

fn finish_latency_histogram() -> Histogram {
    Histogram::new(FINISH_LATENCY_BUCKETS_S)
}

fn create_time_histogram() -> Histogram {
    Histogram::new(CREATE_TIME_BUCKETS_MS)
}

/// `InvocationStatus.getName()`.
fn invocation_status(ok: bool) -> &'static str {
    if ok {
        "success"
    } else {
        "failure"
    }
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

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
    commits: Family<TopicLabels, Counter>,
    rollbacks: Family<TopicLabels, Counter>,
    finish_latency: HistogramFamily<TopicLabels>,
    topic_create_time: HistogramFamily<TopicCreateLabels>,
    group_create_time: HistogramFamily<GroupCreateLabels>,
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
            commits: Family::default(),
            rollbacks: Family::default(),
            finish_latency: Family::new_with_constructor(finish_latency_histogram),
            topic_create_time: Family::new_with_constructor(create_time_histogram),
            group_create_time: Family::new_with_constructor(create_time_histogram),
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
        registry.register(
            "rocketmq_commit_messages",
            "Total number of commit messages",
            m.commits.clone(),
        );
        registry.register(
            "rocketmq_rollback_messages",
            "Total number of rollback messages",
            m.rollbacks.clone(),
        );
        registry.register(
            "rocketmq_finish_message_latency_milliseconds",
            "Transaction finish latency (seconds from the half message's birth to its commit)",
            m.finish_latency.clone(),
        );
        registry.register(
            "rocketmq_topic_create_execution_time_milliseconds",
            "The distribution of create topic time in milliseconds",
            m.topic_create_time.clone(),
        );
        registry.register(
            "rocketmq_consumer_group_create_execution_time_milliseconds",
            "The distribution of create subscription time in milliseconds",
            m.group_create_time.clone(),
        );
        m
    }

    /// A half message of `topic` (its real topic), born at `born_ms`, was committed at
    /// `now_ms`.
    pub fn on_commit(&self, topic: &str, born_ms: i64, now_ms: i64) {
        let key = TopicLabels {
            topic: topic.to_owned(),
        };
        self.commits.get_or_create(&key).inc();
        // Whole seconds, as RocketMQ records them.
        let seconds = ((now_ms - born_ms).max(0) / 1000) as f64;
        self.finish_latency.get_or_create(&key).observe(seconds);
    }

    /// A half message of `topic` (its real topic) was rolled back.
    pub fn on_rollback(&self, topic: &str) {
        let key = TopicLabels {
            topic: topic.to_owned(),
        };
        self.rollbacks.get_or_create(&key).inc();
    }

    /// UPDATE_AND_CREATE_TOPIC of `topic` took `elapsed` and succeeded or not.
    pub fn on_topic_create(&self, topic: &str, ok: bool, elapsed: std::time::Duration) {
        let key = TopicCreateLabels {
            invocation_status: invocation_status(ok),
            is_system: labels::is_system_topic(topic),
        };
        self.topic_create_time
            .get_or_create(&key)
            .observe(elapsed.as_millis() as f64);
    }

    /// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP took `elapsed` and succeeded or not.
    pub fn on_group_create(&self, ok: bool, elapsed: std::time::Duration) {
        let key = GroupCreateLabels {
            invocation_status: invocation_status(ok),
        };
        self.group_create_time
            .get_or_create(&key)
            .observe(elapsed.as_millis() as f64);
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
            // The pull path's test: `MixAll.isSysConsumerGroup`, case-sensitive.
            is_system: labels::is_system_topic(topic) || group.starts_with("CID_RMQ_SYS_"),
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
