//! Name server requests: REGISTER_BROKER, UNREGISTER_BROKER, GET_ROUTEINFO_BY_TOPIC.

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
    /// `GetRouteInfoRequestHeader`.
    pub struct GetRouteInfoRequestHeader {
        /// The topic.
        topic: String = "topic",
    }
}
