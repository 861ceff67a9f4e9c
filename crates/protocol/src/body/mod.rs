//! JSON bodies exchanged by name servers, brokers and clients.
//!
//! Field names are a compatibility surface: they are RocketMQ's Java bean property names.

pub mod fastjson;
pub mod heartbeat;
pub mod route;
pub mod topic;

pub use heartbeat::{
    ConsumerData, ConsumerListBody, HeartbeatData, ProducerData, SubscriptionData,
};
pub use route::{BrokerData, QueueData, TopicRouteData};
pub use topic::{DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper};

/// Topic permission bits (`PermName` in RocketMQ).
pub mod perm {
    /// The topic was created from a template and may be inherited (TBW102).
    pub const INHERIT: i32 = 1;
    /// Consumers may read.
    pub const READ: i32 = 1 << 2;
    /// Producers may write.
    pub const WRITE: i32 = 1 << 1;
    /// Read and write: the default of a topic.
    pub const READ_WRITE: i32 = READ | WRITE;

    /// Whether `perm` allows reading.
    pub fn is_readable(perm: i32) -> bool {
        perm & READ != 0
    }

    /// Whether `perm` allows writing.
    pub fn is_writeable(perm: i32) -> bool {
        perm & WRITE != 0
    }

    /// Whether `perm` marks a template topic.
    pub fn is_inherited(perm: i32) -> bool {
        perm & INHERIT != 0
    }
}
