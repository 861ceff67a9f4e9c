//! JSON bodies exchanged by name servers, brokers and clients.
//!
//! Field names are a compatibility surface: they are RocketMQ's Java bean property names.

pub mod admin;
pub mod batch_ack;
pub mod fastjson;
pub mod heartbeat;
pub mod lenient;
pub mod lock;
pub mod route;
pub mod topic;

pub use heartbeat::{
    ConsumerData, ConsumerListBody, HeartbeatData, ProducerData, SubscriptionData,
};
pub use lock::{LockBatchRequestBody, LockBatchResponseBody, MessageQueue};
pub use route::{BrokerData, ClusterInfo, QueueData, TopicList, TopicRouteData};
pub use topic::{
    DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigAndMapping,
    TopicConfigSerializeWrapper,
};
