//! The controller's replicated state: per broker group (a `brokerName`), who its members are
//! and who is master in which epoch with which SyncStateSet.
//!
//! This mirrors RocketMQ's `ReplicasInfoManager` tables (`BrokerReplicaInfo` and
//! `SyncStateInfo`), with one difference of shape: RocketMQ keeps two maps keyed by broker name
//! and treats a group as known only when both hold it; here one map holds both halves of a
//! group ([`BrokerGroup`]), so a group is never half known.
//!
//! What must stay true:
//! - This state changes only through [`crate::apply::apply`] of replicated events, so every
//!   controller that applies the same events in the same order holds equal state. Handlers
//!   read it and never write it.
//! - Every collection is ordered (`BTreeMap`, `BTreeSet`): iteration, JSON output and
//!   snapshots are the same on every node.
//! - Broker ids start at [`FIRST_BROKER_CONTROLLER_ID`] (1) and never change for a broker; id 0
//!   is the *role* id a master reports to the name server, never a controller id.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// The first id the controller hands out in a group (`MixAll.FIRST_BROKER_CONTROLLER_ID`).
pub const FIRST_BROKER_CONTROLLER_ID: i64 = 1;

/// One member of a group: where it listens and the check code it applied its id with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerIdInfo {
    /// The broker's address (`ip:port`), updated when it registers from elsewhere.
    pub address: String,
    /// `"<brokerAddr>;<millis>"` as sent with APPLY_BROKER_ID: a retry of the same apply (same
    /// code) is accepted again, another broker asking for a taken id is refused.
    pub register_check_code: String,
}

/// `BrokerReplicaInfo`: the members of one group and the next id to hand out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerReplicaInfo {
    pub cluster_name: String,
    pub broker_name: String,
    /// Starts at 1 and grows by one with every member added (RocketMQ's rule: it is a counter
    /// of additions, not the largest id plus one).
    pub next_assign_broker_id: i64,
    /// id → (address, register check code).
    pub broker_id_info: BTreeMap<i64, BrokerIdInfo>,
}

impl BrokerReplicaInfo {
    /// An empty group whose next id is 1.
    pub fn new(cluster_name: &str, broker_name: &str) -> Self {
        Self {
            cluster_name: cluster_name.to_owned(),
            broker_name: broker_name.to_owned(),
            next_assign_broker_id: FIRST_BROKER_CONTROLLER_ID,
            broker_id_info: BTreeMap::new(),
        }
    }

    /// Whether `id` is a member.
    pub fn contains(&self, id: i64) -> bool {
        self.broker_id_info.contains_key(&id)
    }

    /// A member's address.
    pub fn address(&self, id: i64) -> Option<&str> {
        self.broker_id_info.get(&id).map(|i| i.address.as_str())
    }

    /// A member's register check code.
    pub fn check_code(&self, id: i64) -> Option<&str> {
        self.broker_id_info
            .get(&id)
            .map(|i| i.register_check_code.as_str())
    }

    /// Every member id, ascending.
    pub fn ids(&self) -> BTreeSet<i64> {
        self.broker_id_info.keys().copied().collect()
    }

    /// id → address of every member (`getBrokerIdTable`).
    pub fn address_table(&self) -> BTreeMap<i64, String> {
        self.broker_id_info
            .iter()
            .map(|(id, info)| (*id, info.address.clone()))
            .collect()
    }

    /// Adds (or replaces) a member and advances the next id (`addBroker`).
    pub(crate) fn add(&mut self, id: i64, address: &str, check_code: &str) {
        self.broker_id_info.insert(
            id,
            BrokerIdInfo {
                address: address.to_owned(),
                register_check_code: check_code.to_owned(),
            },
        );
        self.next_assign_broker_id = self.next_assign_broker_id.saturating_add(1);
    }
}

/// `SyncStateInfo`: the master, its epoch and the SyncStateSet (in-sync replicas) of a group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncStateInfo {
    pub cluster_name: String,
    pub broker_name: String,
    /// Grows by one with every election event, successful or not. 0 = never elected.
    pub master_epoch: i32,
    /// Grows by one with every change of the set (an alter, or a successful election).
    pub sync_state_set_epoch: i32,
    /// Ids of the replicas in sync with the master (the master included, once elected).
    pub sync_state_set: BTreeSet<i64>,
    /// The master's controller id; `None` before the first election or after a failed one.
    pub master_broker_id: Option<i64>,
}

impl SyncStateInfo {
    /// Epochs 0, no master, an empty set.
    pub fn new(cluster_name: &str, broker_name: &str) -> Self {
        Self {
            cluster_name: cluster_name.to_owned(),
            broker_name: broker_name.to_owned(),
            master_epoch: 0,
            sync_state_set_epoch: 0,
            sync_state_set: BTreeSet::new(),
            master_broker_id: None,
        }
    }

    /// No election has happened yet (`isFirstTimeForElect`): the first elect request makes its
    /// sender master.
    pub fn is_first_time_for_elect(&self) -> bool {
        self.master_epoch == 0
    }
}

/// One group: its members and its master/SyncStateSet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerGroup {
    pub replica_info: BrokerReplicaInfo,
    pub sync_state_info: SyncStateInfo,
}

impl BrokerGroup {
    /// A new group as the first APPLY_BROKER_ID creates it: no members yet, epochs 0.
    pub fn new(cluster_name: &str, broker_name: &str) -> Self {
        Self {
            replica_info: BrokerReplicaInfo::new(cluster_name, broker_name),
            sync_state_info: SyncStateInfo::new(cluster_name, broker_name),
        }
    }

    /// The master's address, if there is a master and it is still a member.
    pub fn master_address(&self) -> Option<&str> {
        self.sync_state_info
            .master_broker_id
            .and_then(|id| self.replica_info.address(id))
    }
}

/// The whole replicated state: every group by broker name (RocketMQ's `ReplicasInfoManager`).
///
/// Serializable as is: [`crate::snapshot`] writes it for a Raft snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicasInfo {
    pub groups: BTreeMap<String, BrokerGroup>,
}

impl ReplicasInfo {
    /// No groups.
    pub fn new() -> Self {
        Self::default()
    }

    /// A group by broker name.
    pub fn group(&self, broker_name: &str) -> Option<&BrokerGroup> {
        self.groups.get(broker_name)
    }

    /// Broker names of groups whose master is set but not alive while another member is:
    /// the groups the leader's periodic scan re-elects (`scanNeedReelectBrokerSets`).
    pub fn groups_needing_reelection(&self, liveness: &dyn crate::Liveness) -> Vec<String> {
        self.groups
            .iter()
            .filter(|(name, group)| {
                group
                    .sync_state_info
                    .master_broker_id
                    .is_some_and(|master| {
                        !liveness.is_alive(name, master)
                            && group
                                .replica_info
                                .broker_id_info
                                .keys()
                                .any(|id| liveness.is_alive(name, *id))
                    })
            })
            .map(|(name, _)| name.clone())
            .collect()
    }
}
