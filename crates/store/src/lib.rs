//! rocketpy's message store: RocketMQ 4.x compatible CommitLog, ConsumeQueue and IndexFile
//! files in memory-mapped files, with recovery, flushing (group commit), retention and delayed
//! delivery. No Python and no async runtime here; file I/O goes through [`io::Storage`].
//!
//! Layout of every file: docs/formats.md; each module repeats its own format.

mod background;
pub mod checkpoint;
pub mod cleanup;
pub mod commit_log;
pub mod config;
pub mod consume_queue;
pub mod consume_queue_ext;
pub mod delay;
pub mod dispatch;
pub mod epoch_cache;
pub mod error;
pub mod filter;
pub mod flush;
pub mod get;
pub mod index_file;
pub mod index_service;
pub mod io;
mod lookup;
pub mod mapped_file;
pub mod mapped_file_queue;
pub mod message_store;
mod padded;
mod prefault;
mod put_state;
pub mod queue_table;
pub mod ratelimit;
pub mod reader;
mod recovery;
pub mod replica;
mod reserve;
pub mod role;
pub mod schedule;
#[cfg(any(test, feature = "sim"))]
pub mod sim;

pub use cleanup::CleanReport;
pub use commit_log::AppendResult;
pub use config::{BrokerRole, FlushDiskType, StoreConfig};
pub use consume_queue::{ConsumeQueue, CqUnit};
pub use error::{Result, StoreError};
pub use filter::MessageFilter;
pub use flush::FlushTicket;
pub use get::{GetMessageResult, GetMessageStatus};
pub use io::{FsStorage, Storage};
pub use message_store::{
    Appended, MessageArrivingListener, MessageStore, PutMessageResult, PutStatus,
};

pub(crate) use rocketpy_protocol::clock::now_millis;
