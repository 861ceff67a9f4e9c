//! rocketpy's broker: RocketMQ 4.x request processors over the rocketpy store.
//!
//! The send and pull paths run entirely here, on tokio; nothing in this crate knows Python.

pub mod config;
pub mod config_file;
pub mod config_journal;
pub mod consumer_manager;
pub mod consumer_offset;
pub mod controller_mode;
pub mod error;
pub mod filter;
pub mod ha;
pub mod housekeeping;
mod listen;
pub mod long_polling;
pub mod metrics;
pub mod pop;
pub mod processor;
pub mod producer_manager;
pub mod rebalance_lock;
pub mod register;
mod start;
pub mod state;
pub mod stats;
pub mod subscription_group;
pub mod timer;
pub mod topic_config;
pub mod transaction;

pub use config::{BrokerConfig, BrokerSettings};
pub use error::{BrokerError, Result};
pub use rocketpy_protocol::clock::Clock;
pub use start::Broker;
pub use state::BrokerInner;
