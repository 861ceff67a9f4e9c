//! Topic configuration and the REGISTER_BROKER body.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::flag::perm;

/// One topic's configuration, as kept in `config/topics.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicConfig {
    /// The topic name.
    pub topic_name: String,
    /// Queues consumers read.
    pub read_queue_nums: i32,
    /// Queues producers write.
    pub write_queue_nums: i32,
    /// Permission bits.
    #[serde(default = "default_perm")]
    pub perm: i32,
    /// "SINGLE_TAG" or "MULTI_TAG".
    #[serde(default = "default_filter_type")]
    pub topic_filter_type: String,
    /// Topic system flags.
    #[serde(default)]
    pub topic_sys_flag: i32,
    /// Whether the topic is ordered.
    #[serde(default)]
    pub order: bool,
    /// 5.x's topic attributes (e.g. `message.type`). Kept as given and always written, as 5.x
    /// does: 4.x readers skip the field, 5.x-shaped readers (rocketmq-rust) require it.
    #[serde(default)]
    pub attributes: BTreeMap<String, String>,
}

fn default_perm() -> i32 {
    perm::READ_WRITE
}

fn default_filter_type() -> String {
    "SINGLE_TAG".to_owned()
}

impl TopicConfig {
    /// A read-write topic with `queues` read and write queues.
    pub fn new(topic_name: impl Into<String>, queues: i32) -> Self {
        TopicConfig {
            topic_name: topic_name.into(),
            read_queue_nums: queues,
            write_queue_nums: queues,
            perm: perm::READ_WRITE,
            topic_filter_type: default_filter_type(),
            topic_sys_flag: 0,
            order: false,
            attributes: BTreeMap::new(),
        }
    }
}

/// Version stamp of a broker's topic table: names servers compare it to skip unchanged data.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataVersion {
    /// Milliseconds since the epoch of the last change.
    #[serde(default)]
    pub timestamp: i64,
    /// Number of changes.
    #[serde(default)]
    pub counter: i64,
    /// 5.x brokers' state version (part of equality there). Kept so a 5.x broker's version is
    /// answered back whole. Always written, as 5.x does: 4.x readers (fastjson) skip fields they
    /// do not know, and 5.x-shaped readers (rocketmq-rust's slave sync) require it.
    #[serde(default)]
    pub state_version: i64,
}

/// `config/topics.json` and the topic part of REGISTER_BROKER.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicConfigSerializeWrapper {
    /// Topic name -> configuration.
    #[serde(default)]
    pub topic_config_table: HashMap<String, TopicConfig>,
    /// Version of the table.
    #[serde(default)]
    pub data_version: DataVersion,
}

/// GET_ALL_TOPIC_CONFIG's answer as 5.x writes it (`TopicConfigAndMappingSerializeWrapper`): the
/// topic table and its version, plus the static-topic mapping tables, which this broker does
/// not have (written empty). 4.x readers decode the table and skip the rest; 5.x-shaped
/// readers (rocketmq-rust's slave sync) require all of it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicConfigAndMapping<'a> {
    /// `topicConfigTable` and `dataVersion`.
    #[serde(flatten)]
    pub topics: &'a TopicConfigSerializeWrapper,
    /// Static topics' queue mappings: none.
    pub topic_queue_mapping_info_map: serde_json::Map<String, serde_json::Value>,
    /// Static topics' mapping details: none.
    pub topic_queue_mapping_detail_map: serde_json::Map<String, serde_json::Value>,
    /// Version of the (empty) mapping tables.
    pub mapping_data_version: DataVersion,
}

impl<'a> TopicConfigAndMapping<'a> {
    /// `topics` with empty mapping tables.
    pub fn new(topics: &'a TopicConfigSerializeWrapper) -> Self {
        TopicConfigAndMapping {
            topics,
            topic_queue_mapping_info_map: serde_json::Map::new(),
            topic_queue_mapping_detail_map: serde_json::Map::new(),
            mapping_data_version: DataVersion::default(),
        }
    }
}

/// Body of REGISTER_BROKER (uncompressed form).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegisterBrokerBody {
    /// The broker's topics.
    #[serde(default)]
    pub topic_config_serialize_wrapper: TopicConfigSerializeWrapper,
    /// Filter servers (unused; kept for compatibility).
    #[serde(default)]
    pub filter_server_list: Vec<String>,
}

/// The data version of a REGISTER_BROKER body, read without building its topic table (which
/// is skipped unparsed): the table only matters when the version changed, and at 10,000 topics
/// parsing it cost the name server 50 ms per registration. `None` when the body is not plain
/// JSON of that shape (e.g. fastjson's bare integer keys): the caller parses it fully.
pub fn register_body_data_version(body: &[u8]) -> Option<DataVersion> {
    #[derive(Deserialize)]
    struct Body {
        #[serde(rename = "topicConfigSerializeWrapper")]
        wrapper: Option<Wrapper>,
    }
    #[derive(Deserialize)]
    struct Wrapper {
        #[serde(rename = "dataVersion")]
        data_version: Option<serde_json::Value>,
    }
    crate::limits::check_json(body, crate::limits::JsonLimits::TABLE).ok()?;
    let version = serde_json::from_slice::<Body>(body)
        .ok()?
        .wrapper?
        .data_version?;
    super::lenient::from_value(version).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_version_without_the_table() {
        let body = br#"{"filterServerList":[],"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"topicName":"T","readQueueNums":4,"writeQueueNums":4,"perm":6}},"dataVersion":{"counter":"7","timestamp":1700000000000}}}"#;
        let full: RegisterBrokerBody = crate::body::fastjson::from_slice(body).unwrap();
        assert_eq!(
            register_body_data_version(body),
            Some(full.topic_config_serialize_wrapper.data_version)
        );
        assert_eq!(register_body_data_version(b"{}"), None);
        assert_eq!(register_body_data_version(br#"{"a":{0:1}}"#), None);
    }

    #[test]
    fn java_topics_json_parses() {
        let java = r#"{"dataVersion":{"counter":3,"timestamp":1700000000000},"topicConfigTable":{"TopicTest":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4}}}"#;
        let wrapper: TopicConfigSerializeWrapper = serde_json::from_str(java).unwrap();
        assert_eq!(
            wrapper.topic_config_table["TopicTest"],
            TopicConfig::new("TopicTest", 4)
        );
        assert_eq!(wrapper.data_version.counter, 3);
    }
}
