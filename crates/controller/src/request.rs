//! The controller's requests as the handlers take them, and the wire names of every header
//! field the controller reads or writes ([`field`]).
//!
//! The structs hold what the handlers use; reading them from a frame's `extFields` (with
//! RocketMQ's defaults for absent fields, noted on each) is the network layer's job. The
//! `invokeTime` fields are not here: they matter only to jRaft mode's replicated liveness,
//! which rocketpy does not implement (liveness is local, see [`crate::liveness`]).

use crate::body::SyncStateSet;

/// Header field names: the Java field names of RocketMQ's header classes, a compatibility
/// surface (a broker or mqadmin reads and writes exactly these).
pub mod field {
    pub const CLUSTER_NAME: &str = "clusterName";
    pub const BROKER_NAME: &str = "brokerName";
    pub const BROKER_ID: &str = "brokerId";
    pub const BROKER_ADDRESS: &str = "brokerAddress";
    pub const INVOKE_TIME: &str = "invokeTime";
    /// ElectMasterRequestHeader.
    pub const DESIGNATE_ELECT: &str = "designateElect";
    /// ApplyBrokerIdRequestHeader.
    pub const APPLIED_BROKER_ID: &str = "appliedBrokerId";
    /// ApplyBrokerIdRequestHeader: `"<brokerAddr>;<millis>"`.
    pub const REGISTER_CHECK_CODE: &str = "registerCheckCode";
    /// GetNextBrokerIdResponseHeader.
    pub const NEXT_BROKER_ID: &str = "nextBrokerId";
    /// AlterSyncStateSetRequestHeader and the master fields of several responses.
    pub const MASTER_BROKER_ID: &str = "masterBrokerId";
    pub const MASTER_EPOCH: &str = "masterEpoch";
    pub const MASTER_ADDRESS: &str = "masterAddress";
    pub const SYNC_STATE_SET_EPOCH: &str = "syncStateSetEpoch";
    /// AlterSyncStateSetResponseHeader.
    pub const NEW_SYNC_STATE_SET_EPOCH: &str = "newSyncStateSetEpoch";
    /// CleanControllerBrokerDataRequestHeader: ids joined by `;`.
    pub const BROKER_CONTROLLER_IDS_TO_CLEAN: &str = "brokerControllerIdsToClean";
    /// CleanControllerBrokerDataRequestHeader.
    pub const IS_CLEAN_LIVING_BROKER: &str = "isCleanLivingBroker";
}

/// CONTROLLER_GET_NEXT_BROKER_ID (1012), `GetNextBrokerIdRequestHeader`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetNextBrokerIdRequest {
    pub cluster_name: String,
    pub broker_name: String,
}

/// CONTROLLER_APPLY_BROKER_ID (1013), `ApplyBrokerIdRequestHeader`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyBrokerIdRequest {
    pub cluster_name: String,
    pub broker_name: String,
    pub applied_broker_id: i64,
    /// `"<brokerAddr>;<millis>"`; the address is the part before the first `;`.
    pub register_check_code: String,
}

/// CONTROLLER_REGISTER_BROKER (1003), `RegisterBrokerToControllerRequestHeader`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterBrokerRequest {
    pub cluster_name: String,
    pub broker_name: String,
    pub broker_id: i64,
    pub broker_address: String,
}

/// CONTROLLER_ELECT_MASTER (1002), `ElectMasterRequestHeader`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectMasterRequest {
    /// Absent: `""`.
    pub cluster_name: String,
    /// Absent: `""`.
    pub broker_name: String,
    /// The requester's own id (a broker), the designated id (admin), or `None`/-1 (the
    /// controller's own trigger, after which a failed election clears the master). Absent:
    /// -1.
    pub broker_id: Option<i64>,
    /// Elect `broker_id` or nobody (mqadmin electMaster). Absent: false.
    pub designate_elect: bool,
}

impl ElectMasterRequest {
    /// The controller's own trigger for a group whose master went away.
    pub fn by_controller(broker_name: &str) -> Self {
        Self {
            cluster_name: String::new(),
            broker_name: broker_name.to_owned(),
            broker_id: None,
            designate_elect: false,
        }
    }

    /// Whether the controller itself asked (no real requester id).
    pub fn is_controller_trigger(&self) -> bool {
        matches!(self.broker_id, None | Some(-1))
    }
}

/// CONTROLLER_ALTER_SYNC_STATE_SET (1001): `AlterSyncStateSetRequestHeader` and its
/// `SyncStateSet` body (the proposed set with the set epoch the master knows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterSyncStateSetRequest {
    pub broker_name: String,
    pub master_broker_id: i64,
    pub master_epoch: i32,
    pub sync_state_set: SyncStateSet,
}

/// CONTROLLER_GET_REPLICA_INFO (1004), `GetReplicaInfoRequestHeader`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetReplicaInfoRequest {
    pub broker_name: String,
}

/// CLEAN_BROKER_DATA (1011), `CleanControllerBrokerDataRequestHeader`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanBrokerDataRequest {
    /// Nullable in RocketMQ, and unused by the decision here.
    pub cluster_name: Option<String>,
    pub broker_name: String,
    /// `"1;2;3"`; absent or blank: the whole group.
    pub broker_controller_ids_to_clean: Option<String>,
    /// Clean even alive brokers (mqadmin's `-l`). Absent: false.
    pub is_clean_living_broker: bool,
}
