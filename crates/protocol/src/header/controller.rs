//! Headers of controller requests that rocketpy's Python side sends (mqadmin's electMaster
//! and cleanBrokerMetadata); the controller itself reads every controller header field by
//! name (`rocketpy_controller::request::field`).

use super::header;

header! {
    /// `ElectMasterRequestHeader`.
    pub struct ElectMasterRequestHeader {
        /// The broker group's cluster ("" when absent).
        cluster_name: Option<String> = "clusterName",
        /// The broker group.
        broker_name: Option<String> = "brokerName",
        /// The requester's id, or the id designated by an admin (-1 when absent).
        broker_id: Option<i64> = "brokerId",
        /// Elect exactly `broker_id` or nobody (mqadmin electMaster).
        designate_elect: Option<bool> = "designateElect",
        /// When the request was made (milliseconds).
        invoke_time: Option<i64> = "invokeTime",
    }
}

header! {
    /// `CleanControllerBrokerDataRequestHeader`.
    pub struct CleanControllerBrokerDataRequestHeader {
        /// The broker group's cluster.
        cluster_name: Option<String> = "clusterName",
        /// The broker group.
        broker_name: String = "brokerName",
        /// Controller ids to forget, `1;2;3` (absent: the whole group).
        broker_controller_ids_to_clean: Option<String> = "brokerControllerIdsToClean",
        /// Forget brokers even while they are alive (mqadmin's `-l`).
        is_clean_living_broker: Option<bool> = "isCleanLivingBroker",
        /// When the request was made (milliseconds).
        invoke_time: Option<i64> = "invokeTime",
    }
}
