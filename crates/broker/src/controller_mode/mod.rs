//! A broker in RocketMQ 5.x controller mode (issue 43, docs/controller-design.md §4): its keys
//! ([`config`]), its controller id on disk ([`identity`]), and its side of the controller
//! protocol ([`client`]: finding the leader, joining the group, heartbeats, asking for the
//! group's master), its life as master or slave ([`replicas`], [`ha_loops`]) and the requests
//! it answers ([`processors`]). The sessions between the group's brokers are
//! `crate::ha::autoswitch`.

pub mod acks;
pub mod client;
pub mod config;
pub mod ha_loops;
pub mod identity;
pub mod processors;
pub mod replicas;

pub use config::ControllerModeConfig;
