//! A broker in RocketMQ 5.x controller mode (issue 43, docs/controller-design.md §4): its keys
//! ([`config`]), its controller id on disk ([`identity`]), and its side of the controller
//! protocol ([`client`]: finding the leader, joining the group, heartbeats, asking for the
//! group's master). Replication between the group's brokers is `crate::ha::autoswitch`.

pub mod client;
pub mod config;
pub mod identity;

pub use config::ControllerModeConfig;
