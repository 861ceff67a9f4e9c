//! JSON bodies of the controller's requests and responses, with the field names of RocketMQ's
//! classes (`SyncStateSet`, `ElectMasterResponseBody`, `BrokerMemberGroup`,
//! `BrokerReplicasInfo`). Fields are declared in name order, which is the order fastjson
//! writes them in; absent (`null`) fields are left out, as fastjson leaves them out.
//!
//! We write standard JSON (`brokerAddrs` with quoted integer keys, which fastjson reads) and
//! read fastjson's with `rocketpy_protocol::body::fastjson` ([`decode`]), bounded.

use std::collections::{BTreeMap, BTreeSet};

use rocketpy_protocol::body::fastjson;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// `SyncStateSet`: a set of replica ids and the epoch it belongs to. The body of ALTER (the
/// proposed set with the epoch the master knows), and of the answers to ALTER, REGISTER,
/// GET_REPLICA_INFO and NOTIFY_BROKER_ROLE_CHANGED.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncStateSet {
    #[serde(default)]
    pub sync_state_set: BTreeSet<i64>,
    #[serde(default)]
    pub sync_state_set_epoch: i32,
}

/// `BrokerMemberGroup`: a group's members by id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerMemberGroup {
    #[serde(default)]
    pub broker_addrs: BTreeMap<i64, String>,
    #[serde(default)]
    pub broker_name: String,
    #[serde(default)]
    pub cluster: String,
}

/// `ElectMasterResponseBody`: the members (only when a new master was elected) and the set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElectMasterResponseBody {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broker_member_group: Option<BrokerMemberGroup>,
    #[serde(default)]
    pub sync_state_set: BTreeSet<i64>,
}

/// `BrokerReplicasInfo.ReplicaIdentity`: one member as GET_SYNC_STATE_DATA lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaIdentity {
    #[serde(default)]
    pub alive: bool,
    #[serde(default)]
    pub broker_address: String,
    #[serde(default)]
    pub broker_id: i64,
    #[serde(default)]
    pub broker_name: String,
}

/// `BrokerReplicasInfo.ReplicasInfo`: one group as GET_SYNC_STATE_DATA shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupReplicasInfo {
    #[serde(default)]
    pub in_sync_replicas: Vec<ReplicaIdentity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master_address: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub master_broker_id: Option<i64>,
    #[serde(default)]
    pub master_epoch: i32,
    #[serde(default)]
    pub not_in_sync_replicas: Vec<ReplicaIdentity>,
    #[serde(default)]
    pub sync_state_set_epoch: i32,
}

/// `BrokerReplicasInfo`: GET_SYNC_STATE_DATA's answer, by broker name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerReplicasInfo {
    #[serde(default)]
    pub replicas_info_table: BTreeMap<String, GroupReplicasInfo>,
}

/// A body's bytes (standard JSON).
pub fn encode<T: Serialize>(body: &T) -> Vec<u8> {
    // Bodies are plain structs of strings, integers and ordered collections: they always
    // serialize.
    serde_json::to_vec(body).unwrap_or_default()
}

/// Reads a body written by rocketpy or by RocketMQ (fastjson), within the body limits.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    fastjson::from_slice(bytes).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_use_rocketmq_names() {
        let sss = SyncStateSet {
            sync_state_set: [2, 1].into(),
            sync_state_set_epoch: 3,
        };
        assert_eq!(
            String::from_utf8(encode(&sss)).unwrap(),
            r#"{"syncStateSet":[1,2],"syncStateSetEpoch":3}"#
        );
        let body = ElectMasterResponseBody {
            broker_member_group: Some(BrokerMemberGroup {
                broker_addrs: [(1, "h:1".to_owned())].into(),
                broker_name: "a".into(),
                cluster: "c".into(),
            }),
            sync_state_set: [1].into(),
        };
        assert_eq!(
            String::from_utf8(encode(&body)).unwrap(),
            r#"{"brokerMemberGroup":{"brokerAddrs":{"1":"h:1"},"brokerName":"a","cluster":"c"},"syncStateSet":[1]}"#
        );
        // fastjson's bare integer keys read back.
        let back: ElectMasterResponseBody = decode(
            br#"{"brokerMemberGroup":{"brokerAddrs":{1:"h:1"},"brokerName":"a","cluster":"c"},"syncStateSet":[1]}"#,
        )
        .unwrap();
        assert_eq!(back, body);
    }
}
