//! Name server requests: REGISTER_BROKER, UNREGISTER_BROKER, QUERY_DATA_VERSION,
//! GET_ROUTEINFO_BY_TOPIC.

use super::header;

header! {
    /// `RegisterBrokerRequestHeader`.
    pub struct RegisterBrokerRequestHeader {
        /// The broker group.
        broker_name: String = "brokerName",
        /// The broker's advertised address.
        broker_addr: String = "brokerAddr",
        /// Its cluster.
        cluster_name: String = "clusterName",
        /// Its HA address (may be empty).
        ha_server_addr: Option<String> = "haServerAddr",
        /// 0 = master.
        broker_id: i64 = "brokerId",
        /// Whether the body is compressed.
        compressed: Option<bool> = "compressed",
        /// CRC32 of the body (4.9; 0 or absent: unchecked).
        body_crc32: Option<i64> = "bodyCrc32",
    }
}

header! {
    /// `RegisterBrokerResponseHeader`.
    pub struct RegisterBrokerResponseHeader {
        /// The master's HA address, for a slave.
        ha_server_addr: Option<String> = "haServerAddr",
        /// The master's address, for a slave.
        master_addr: Option<String> = "masterAddr",
    }
}

header! {
    /// `UnRegisterBrokerRequestHeader`.
    pub struct UnRegisterBrokerRequestHeader {
        /// The broker group.
        broker_name: String = "brokerName",
        /// The broker's address.
        broker_addr: String = "brokerAddr",
        /// Its cluster.
        cluster_name: String = "clusterName",
        /// 0 = master.
        broker_id: i64 = "brokerId",
    }
}

header! {
    /// `QueryDataVersionRequestHeader` (body: the broker's `DataVersion` as JSON).
    pub struct QueryDataVersionRequestHeader {
        /// The broker group.
        broker_name: String = "brokerName",
        /// The broker's address (the key the name server knows it by).
        broker_addr: String = "brokerAddr",
        /// Its cluster.
        cluster_name: String = "clusterName",
        /// 0 = master.
        broker_id: i64 = "brokerId",
    }
}

header! {
    /// `QueryDataVersionResponseHeader` (body: the name server's `DataVersion` of the broker,
    /// absent when it does not know the broker).
    pub struct QueryDataVersionResponseHeader {
        /// Whether the broker's version differs from the name server's (or it is unknown).
        changed: Option<bool> = "changed",
    }
}

header! {
    /// `GetRouteInfoRequestHeader`.
    pub struct GetRouteInfoRequestHeader {
        /// The topic.
        topic: String = "topic",
    }
}

header! {
    /// `WipeWritePermOfBrokerRequestHeader` and `AddWritePermOfBrokerRequestHeader`.
    pub struct BrokerNameRequestHeader {
        /// The broker group.
        broker_name: String = "brokerName",
    }
}

header! {
    /// `WipeWritePermOfBrokerResponseHeader`.
    pub struct WipeWritePermOfBrokerResponseHeader {
        /// Topics whose write permission was taken away.
        wipe_topic_count: i32 = "wipeTopicCount",
    }
}

header! {
    /// `AddWritePermOfBrokerResponseHeader`.
    pub struct AddWritePermOfBrokerResponseHeader {
        /// Topics whose write permission was given back.
        add_topic_count: i32 = "addTopicCount",
    }
}

header! {
    /// `GetTopicsByClusterRequestHeader` (GET_TOPICS_BY_CLUSTER).
    pub struct GetTopicsByClusterRequestHeader {
        /// The cluster.
        cluster: String = "cluster",
    }
}
