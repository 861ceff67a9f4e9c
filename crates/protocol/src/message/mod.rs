//! Messages as RocketMQ stores and transfers them.

pub mod batch;
pub mod compression;
pub mod java_hash;
pub mod msg_id;
pub mod properties;
pub mod record;
