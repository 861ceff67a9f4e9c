//! HEART_BEAT and GET_CONSUMER_LIST_BY_GROUP bodies.

use serde::{Deserialize, Serialize};

/// A subscription of one consumer group to one topic.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionData {
    /// Class filter mode (unused by rocketpy; kept for compatibility).
    #[serde(default)]
    pub class_filter_mode: bool,
    /// The topic.
    pub topic: String,
    /// The expression, e.g. `*` or `TagA || TagB`.
    #[serde(default)]
    pub sub_string: String,
    /// Parsed tags.
    #[serde(default)]
    pub tags_set: Vec<String>,
    /// Hash codes of the tags.
    #[serde(default)]
    pub code_set: Vec<i32>,
    /// Version of the subscription (its creation time in ms).
    #[serde(default)]
    pub sub_version: i64,
    /// "TAG" (or "SQL92", which rocketpy does not evaluate).
    #[serde(default = "default_expression_type")]
    pub expression_type: String,
}

fn default_expression_type() -> String {
    "TAG".to_owned()
}

/// One consumer group announced by a client.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerData {
    /// The group.
    pub group_name: String,
    /// "CONSUME_PASSIVELY" (push) or "CONSUME_ACTIVELY" (pull).
    #[serde(default)]
    pub consume_type: String,
    /// "CLUSTERING" or "BROADCASTING".
    #[serde(default)]
    pub message_model: String,
    /// Where a new group starts.
    #[serde(default)]
    pub consume_from_where: String,
    /// Its subscriptions.
    #[serde(default)]
    pub subscription_data_set: Vec<SubscriptionData>,
    /// Unit mode (unused).
    #[serde(default)]
    pub unit_mode: bool,
}

/// One producer group announced by a client.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProducerData {
    /// The group.
    pub group_name: String,
}

/// Body of HEART_BEAT.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeartbeatData {
    /// `ip@instanceName`.
    #[serde(rename = "clientID")]
    pub client_id: String,
    /// Producer groups of the client.
    #[serde(rename = "producerDataSet", default)]
    pub producer_data_set: Vec<ProducerData>,
    /// Consumer groups of the client.
    #[serde(rename = "consumerDataSet", default)]
    pub consumer_data_set: Vec<ConsumerData>,
}

/// Response body of GET_CONSUMER_LIST_BY_GROUP.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerListBody {
    /// Client ids of the group's live consumers.
    pub consumer_id_list: Vec<String>,
}
