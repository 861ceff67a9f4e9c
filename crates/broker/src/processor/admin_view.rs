//! What mqadmin reads from a broker: a topic's queue offsets (GET_TOPIC_STATS_INFO), a group's
//! progress (GET_CONSUME_STATS), connections (GET_CONSUMER_CONNECTION_LIST,
//! GET_PRODUCER_CONNECTION_LIST), the groups of a topic (QUERY_TOPIC_CONSUME_BY_WHO), runtime
//! figures (GET_BROKER_RUNTIME_INFO) and statistics (VIEW_BROKER_STATS_DATA). Remarks are
//! RocketMQ's where tools match on them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rocketpy_protocol::body::admin::{
    consume_stats, topic_stats_table, GroupList, KvTable, OffsetWrapper, ProducerConnection,
    TopicOffset,
};
use rocketpy_protocol::body::MessageQueue;
use rocketpy_protocol::code::response;
use rocketpy_protocol::command::CURRENT_VERSION;
use rocketpy_protocol::header::{
    GetConsumeStatsRequestHeader, GetConsumerConnectionListRequestHeader,
    GetProducerConnectionListRequestHeader, GetTopicStatsInfoRequestHeader,
    QueryTopicConsumeByWhoRequestHeader, ViewBrokerStatsDataRequestHeader,
};
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult};

use super::{json_reply, ok, reply};
use crate::state::BrokerInner;
use crate::stats::name;

fn queue(broker: &BrokerInner, topic: &str, queue_id: i32) -> MessageQueue {
    MessageQueue {
        topic: topic.to_owned(),
        broker_name: broker.config().broker_name.clone(),
        queue_id,
    }
}

/// Store time of the message at `offset` (0 when there is none).
fn store_time(broker: &BrokerInner, topic: &str, queue_id: i32, offset: i64) -> i64 {
    if offset < 0 {
        return 0;
    }
    broker
        .store
        .message_store_timestamp(topic, queue_id, offset)
        .unwrap_or(0)
}

/// GET_TOPIC_STATS_INFO: min, max and last store time of each of the topic's queues.
pub fn topic_stats(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: GetTopicStatsInfoRequestHeader = req.decode_header()?;
    let Some(cfg) = broker.topics.get(&h.topic) else {
        return Err(ProcessError::new(
            response::TOPIC_NOT_EXIST,
            format!("topic[{}] not exist", h.topic),
        ));
    };
    let mut table = BTreeMap::new();
    for q in 0..cfg.write_queue_nums.max(0) {
        let max = broker.store.max_offset_in_queue(&h.topic, q).max(0);
        let min = broker.store.min_offset_in_queue(&h.topic, q).max(0);
        let offsets = TopicOffset {
            min_offset: min,
            max_offset: max,
            last_update_timestamp: if max > 0 {
                store_time(broker, &h.topic, q, max - 1)
            } else {
                0
            },
        };
        table.insert(queue(broker, &h.topic, q), offsets);
    }
    reply(ok(req).with_body(topic_stats_table(&table)))
}

/// GET_CONSUME_STATS: per queue, the broker's end, the group's committed offset and the store
/// time of the last message it consumed, over `topic` or every topic the group has offsets for
/// (less topics an online group no longer subscribes, as RocketMQ skips them).
pub fn consume_stats_of_group(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: GetConsumeStatsRequestHeader = req.decode_header()?;
    let group = &h.consumer_group;
    let topics: BTreeSet<String> = match h.topic.as_deref().filter(|t| !t.is_empty()) {
        Some(t) => [t.to_owned()].into(),
        None => broker
            .offsets
            .offsets_of_group(group)
            .into_iter()
            .map(|(t, _, _)| t)
            .collect(),
    };
    let online = broker.consumers.connection(group);
    let mut table = BTreeMap::new();
    let mut tps = 0.0;
    let now = broker.now_millis();
    for topic in topics {
        let Some(cfg) = broker.topics.get(&topic) else {
            continue;
        };
        if online.as_ref().is_some_and(|c| {
            !c.subscription_table.is_empty() && !c.subscription_table.contains_key(&topic)
        }) {
            continue;
        }
        for q in 0..cfg.read_queue_nums.max(0) {
            let committed = broker.offsets.query(group, &topic, q).unwrap_or(0).max(0);
            let wrapper = OffsetWrapper {
                broker_offset: broker.store.max_offset_in_queue(&topic, q).max(0),
                consumer_offset: committed,
                pull_offset: committed,
                last_timestamp: if committed > 0 {
                    store_time(broker, &topic, q, committed - 1)
                } else {
                    0
                },
            };
            table.insert(queue(broker, &topic, q), wrapper);
        }
        if let Some(v) = broker
            .stats
            .view(name::GROUP_GET_NUMS, &format!("{topic}@{group}"), now)
        {
            tps += v.stats_minute.tps;
        }
    }
    reply(ok(req).with_body(consume_stats(&table, tps)))
}

/// GET_CONSUMER_CONNECTION_LIST.
pub fn consumer_connections(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: GetConsumerConnectionListRequestHeader = req.decode_header()?;
    match broker.consumers.connection(&h.consumer_group) {
        Some(c) => json_reply(req, &c),
        None => Err(ProcessError::new(
            response::CONSUMER_NOT_ONLINE,
            format!("the consumer group[{}] not online", h.consumer_group),
        )),
    }
}

/// GET_PRODUCER_CONNECTION_LIST.
pub fn producer_connections(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: GetProducerConnectionListRequestHeader = req.decode_header()?;
    let connection_set = broker.producers.connections(&h.producer_group);
    if connection_set.is_empty() {
        return Err(ProcessError::new(
            response::SYSTEM_ERROR,
            format!("the producer group[{}] not exist", h.producer_group),
        ));
    }
    json_reply(req, &ProducerConnection { connection_set })
}

/// QUERY_TOPIC_CONSUME_BY_WHO: groups online on the topic and groups with offsets for it.
pub fn topic_consumed_by(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: QueryTopicConsumeByWhoRequestHeader = req.decode_header()?;
    let mut groups: BTreeSet<String> = broker
        .consumers
        .groups_of_topic(&h.topic)
        .into_iter()
        .collect();
    groups.extend(broker.offsets.groups_of_topic(&h.topic));
    json_reply(
        req,
        &GroupList {
            group_list: groups.into_iter().collect(),
        },
    )
}

/// VIEW_BROKER_STATS_DATA.
pub fn view_stats(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: ViewBrokerStatsDataRequestHeader = req.decode_header()?;
    match broker
        .stats
        .view(&h.stats_name, &h.stats_key, broker.now_millis())
    {
        Some(data) => json_reply(req, &data),
        None => Err(ProcessError::new(
            response::SYSTEM_ERROR,
            format!("The stats <{}> <{}> not exist", h.stats_name, h.stats_key),
        )),
    }
}

/// `MQVersion`'s name of a version ordinal, for the regular range from V4_0_0 (ordinal 213)
/// on: each x.y.z has a SNAPSHOT ordinal and a release ordinal, ten z per y, ten y per x.
pub fn version_desc(ordinal: i32) -> String {
    const V4_0_0_SNAPSHOT: i32 = 212;
    if ordinal < V4_0_0_SNAPSHOT {
        return format!("V{ordinal}");
    }
    let n = ordinal - V4_0_0_SNAPSHOT;
    let (minor_index, rest) = (n / 20, n % 20);
    let suffix = if rest % 2 == 0 { "_SNAPSHOT" } else { "" };
    format!(
        "V{}_{}_{}{suffix}",
        4 + minor_index / 10,
        minor_index % 10,
        rest / 2
    )
}

/// `"[ d days, h hours, m minutes, s seconds ]"` since `boot_ms` (RocketMQ's `runtime`).
fn runtime_text(boot_ms: i64, now_ms: i64) -> String {
    let s = ((now_ms - boot_ms) / 1000).max(0);
    format!(
        "[ {} days, {} hours, {} minutes, {} seconds ]",
        s / 86_400,
        s % 86_400 / 3600,
        s % 3600 / 60,
        s % 60
    )
}

/// GET_BROKER_RUNTIME_INFO: the `KVTable` brokerStatus prints and clusterList reads (its keys
/// and value formats are RocketMQ's).
pub fn runtime_info(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let now = broker.now_millis();
    let cluster = &broker.config().broker_cluster_name;
    let (put_now, get_now) = broker.stats.totals(cluster);
    let ((put_today, get_today), (put_yesterday, get_yesterday)) = broker.stats.day_marks();
    let (put_tps, get_tps) = broker.stats.tps_texts();
    let (cl_min, cl_max) = broker.store.commit_log_range();
    let ratio = broker.store.disk_used_ratio().unwrap_or(0.0);
    let hits = |stat| {
        broker
            .stats
            .view(stat, cluster, now)
            .map_or(0.0, |v| v.stats_minute.tps)
    };
    let mut t = BTreeMap::new();
    let mut put = |k: &str, v: String| {
        t.insert(k.to_owned(), v);
    };
    put("brokerVersionDesc", version_desc(CURRENT_VERSION));
    put("brokerVersion", CURRENT_VERSION.to_string());
    put("msgPutTotalYesterdayMorning", put_yesterday.to_string());
    put("msgPutTotalTodayMorning", put_today.to_string());
    put("msgPutTotalTodayNow", put_now.to_string());
    put("msgGetTotalYesterdayMorning", get_yesterday.to_string());
    put("msgGetTotalTodayMorning", get_today.to_string());
    put("msgGetTotalTodayNow", get_now.to_string());
    put("putTps", put_tps);
    put("getTransferedTps", get_tps.clone());
    put("getTransferredTps", get_tps);
    put("getFoundTps", format!("{:.2}", hits(name::GET_FOUND)));
    put("getMissTps", format!("{:.2}", hits(name::GET_MISS)));
    put(
        "getTotalTps",
        format!("{:.2}", hits(name::GET_FOUND) + hits(name::GET_MISS)),
    );
    put("commitLogMinOffset", cl_min.to_string());
    put("commitLogMaxOffset", cl_max.to_string());
    put("commitLogDiskRatio", format!("{ratio}"));
    put("consumeQueueDiskRatio", format!("{ratio}"));
    put("bootTimestamp", broker.boot_ms.to_string());
    put("runtime", runtime_text(broker.boot_ms, now));
    put(
        "earliestMessageTimeStamp",
        broker
            .store
            .earliest_message_time()
            .unwrap_or(0)
            .to_string(),
    );
    put("startAcceptSendRequestTimeStamp", "0".into());
    // The store dispatches and flushes inline or in the background with no queue of
    // requests, so these are what they are in RocketMQ when idle.
    put("dispatchBehindBytes", "0".into());
    put("pageCacheLockTimeMills", "0".into());
    for pool in ["send", "pull", "query"] {
        put(&format!("{pool}ThreadPoolQueueSize"), "0".into());
        put(
            &format!("{pool}ThreadPoolQueueHeadWaitTimeMills"),
            "0".into(),
        );
    }
    put("brokerActive", broker.store.role().is_master().to_string());
    json_reply(req, &KvTable { table: t })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_names_follow_mq_version() {
        assert_eq!(version_desc(401), "V4_9_4");
        assert_eq!(version_desc(400), "V4_9_4_SNAPSHOT");
        assert_eq!(version_desc(413), "V5_0_0");
        assert_eq!(version_desc(213), "V4_0_0");
        assert_eq!(version_desc(10), "V10");
        assert_eq!(
            runtime_text(0, 90_061_000),
            "[ 1 days, 1 hours, 1 minutes, 1 seconds ]"
        );
    }
}
