//! HEART_BEAT and GET_CONSUMER_LIST_BY_GROUP bodies.
//!
//! The enums are written by name; clients that write them as ordinals (the C++ client) are
//! read through [`super::lenient`], so their variants must stay in Java's declaration order.

use serde::{Deserialize, Serialize};

/// How a consumer gets messages (`ConsumeType`; Java order).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConsumeType {
    /// Pull consumers ("PULL").
    #[serde(rename = "CONSUME_ACTIVELY")]
    ConsumeActively,
    /// Push consumers ("PUSH").
    #[default]
    #[serde(rename = "CONSUME_PASSIVELY")]
    ConsumePassively,
    /// Pop consumers (5.x).
    #[serde(rename = "CONSUME_POP")]
    ConsumePop,
}

/// How a group shares messages (`MessageModel`; Java order).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum MessageModel {
    /// Every consumer gets every message.
    #[serde(rename = "BROADCASTING")]
    Broadcasting,
    /// Each message goes to one consumer of the group.
    #[default]
    #[serde(rename = "CLUSTERING")]
    Clustering,
}

/// Where a group without a committed offset starts (`ConsumeFromWhere`; Java order).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConsumeFromWhere {
    /// At the end of the queue.
    #[default]
    #[serde(rename = "CONSUME_FROM_LAST_OFFSET")]
    ConsumeFromLastOffset,
    /// Deprecated in RocketMQ; as last offset.
    #[serde(rename = "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST")]
    ConsumeFromLastOffsetAndFromMinWhenBootFirst,
    /// Deprecated in RocketMQ; as first offset.
    #[serde(rename = "CONSUME_FROM_MIN_OFFSET")]
    ConsumeFromMinOffset,
    /// Deprecated in RocketMQ; as last offset.
    #[serde(rename = "CONSUME_FROM_MAX_OFFSET")]
    ConsumeFromMaxOffset,
    /// At the start of the queue.
    #[serde(rename = "CONSUME_FROM_FIRST_OFFSET")]
    ConsumeFromFirstOffset,
    /// At the first message stored after the consumer's timestamp.
    #[serde(rename = "CONSUME_FROM_TIMESTAMP")]
    ConsumeFromTimestamp,
}

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
    /// Push, pull or pop.
    #[serde(default)]
    pub consume_type: ConsumeType,
    /// Clustering or broadcasting.
    #[serde(default)]
    pub message_model: MessageModel,
    /// Where a new group starts.
    #[serde(default)]
    pub consume_from_where: ConsumeFromWhere,
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

/// Body of CHECK_CLIENT_CONFIG (RocketMQ's `CheckClientRequestBody`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckClientRequestBody {
    #[serde(rename = "clientId", default)]
    pub client_id: String,
    #[serde(default)]
    pub group: String,
    /// The subscription to check.
    #[serde(rename = "subscriptionData", default)]
    pub subscription_data: Option<SubscriptionData>,
    #[serde(default)]
    pub namespace: Option<String>,
}

/// Response body of GET_CONSUMER_LIST_BY_GROUP.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerListBody {
    /// Client ids of the group's live consumers.
    pub consumer_id_list: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::fastjson;

    #[test]
    fn cpp_heartbeat_with_ordinals_and_string_numbers() {
        let cpp = br#"{"clientID":"127.0.0.1@1","consumerDataSet":[{"consumeFromWhere":4,
            "consumeType":1,"groupName":"g","messageModel":1,"subscriptionDataSet":[{
            "classFilterMode":false,"codeSet":["2598919"],"expressionType":"TAG",
            "subString":"TagA","subVersion":"1700000000000","tagsSet":["TagA"],"topic":"T"}],
            "unitMode":false}],"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"}]}"#;
        let hb: HeartbeatData = fastjson::from_slice(cpp).unwrap();
        let c = &hb.consumer_data_set[0];
        assert_eq!(c.consume_type, ConsumeType::ConsumePassively);
        assert_eq!(c.message_model, MessageModel::Clustering);
        assert_eq!(
            c.consume_from_where,
            ConsumeFromWhere::ConsumeFromFirstOffset
        );
        assert_eq!(c.subscription_data_set[0].sub_version, 1_700_000_000_000);
        assert_eq!(c.subscription_data_set[0].code_set, vec![2598919]);
        let out = serde_json::to_string(&hb).unwrap();
        assert!(
            out.contains(r#""consumeType":"CONSUME_PASSIVELY""#),
            "{out}"
        );
        assert!(
            out.contains(r#""consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET""#),
            "{out}"
        );
    }
}
