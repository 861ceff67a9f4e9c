//! rocketpy's message store: RocketMQ 4.x compatible CommitLog and ConsumeQueue files in
//! memory-mapped files, with recovery and flushing. No Python and no async runtime here.
//!
//! Layout of every file: DESIGN.md "Store files"; each module repeats its own format.

pub mod checkpoint;
pub mod commit_log;
pub mod config;
pub mod consume_queue;
pub mod delay;
pub mod error;
pub mod get;
pub mod java_hash;
pub mod mapped_file;
pub mod mapped_file_queue;
pub mod message_store;
pub mod properties;
pub mod record;
pub mod topic;

pub use commit_log::AppendResult;
pub use config::{FlushDiskType, StoreConfig};
pub use consume_queue::{ConsumeQueue, CqUnit};
pub use error::{Result, StoreError};
pub use get::{GetMessageResult, GetMessageStatus};
pub use message_store::{MessageArrivingListener, MessageStore, PutMessageResult, PutStatus};
pub use record::MessageToStore;
pub use topic::validate_topic;
