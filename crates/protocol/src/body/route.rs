//! Routes: `TopicRouteData` (GET_ROUTEINFO_BY_TOPIC), `ClusterInfo` (GET_BROKER_CLUSTER_INFO),
//! `TopicList` (GET_ALL_TOPIC_LIST_FROM_NAMESERVER).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

/// Queues of one topic on one broker group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueData {
    /// The broker group (master and slaves share the name).
    pub broker_name: String,
    /// Queues consumers read.
    pub read_queue_nums: i32,
    /// Queues producers write.
    pub write_queue_nums: i32,
    /// Permission bits (see [`crate::flag::perm`]).
    pub perm: i32,
    /// Topic system flags.
    #[serde(default)]
    pub topic_sys_flag: i32,
}

/// Addresses of one broker group, by broker id (0 = master).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerData {
    /// Cluster name.
    pub cluster: String,
    /// Broker group name.
    pub broker_name: String,
    /// brokerId -> "host:port".
    pub broker_addrs: HashMap<i64, String>,
    /// Whether a slave may act as master while the master is gone (5.x). Always written, as
    /// a 5.x name server writes it: rocketmq-client-rust 1.0 refuses a route without it.
    #[serde(default)]
    pub enable_acting_master: bool,
    /// The broker's zone (5.x), written only when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone_name: Option<String>,
}

impl BrokerData {
    /// The master's address, if a master is registered.
    pub fn master_addr(&self) -> Option<&str> {
        self.broker_addrs.get(&0).map(String::as_str)
    }
}

/// Where a topic lives: which broker groups and how many queues on each.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicRouteData {
    /// Ordered-topic configuration from the KV config, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_topic_conf: Option<String>,
    /// Queue layout per broker group.
    #[serde(default)]
    pub queue_datas: Vec<QueueData>,
    /// Addresses per broker group.
    #[serde(default)]
    pub broker_datas: Vec<BrokerData>,
    /// Filter servers per broker address (always empty here; kept for compatibility).
    #[serde(default)]
    pub filter_server_table: HashMap<String, Vec<String>>,
}

/// `ClusterInfo`: the broker groups and clusters a name server knows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterInfo {
    /// Broker group name -> addresses.
    #[serde(default)]
    pub broker_addr_table: BTreeMap<String, BrokerData>,
    /// Cluster name -> broker group names.
    #[serde(default)]
    pub cluster_addr_table: BTreeMap<String, BTreeSet<String>>,
}

/// `TopicList`: every topic a name server routes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicList {
    /// The topic names.
    #[serde(default)]
    pub topic_list: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::fastjson;

    #[test]
    fn parses_fastjson_route() {
        let java = br#"{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#;
        let route: TopicRouteData = fastjson::from_slice(java).unwrap();
        assert_eq!(route.broker_datas[0].master_addr(), Some("127.0.0.1:10911"));
        assert_eq!(route.queue_datas[0].write_queue_nums, 4);
        let ours = serde_json::to_string(&route).unwrap();
        assert!(ours.contains(r#""brokerAddrs":{"0":"127.0.0.1:10911"}"#));
    }
}
