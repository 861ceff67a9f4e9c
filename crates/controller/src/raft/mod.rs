//! The controller state replicated across controllers with openraft (issue 43,
//! docs/controller-design.md §7).
//!
//! - [`types`]: the log's payload ([`Proposal`]: RocketMQ-encoded events with the group
//!   versions they were decided against) and the apply outcome.
//! - [`files`], [`log_store`], [`state_machine`]: the durable store under a directory
//!   (`controllerStorePath`): framed, CRC-checked log; vote and commit position replaced
//!   atomically; snapshots in [`crate::snapshot`]'s format.
//! - [`network`]: the transport seam ([`RaftTransport`]) under openraft's network traits;
//!   [`router`]: the in-process transport tests use. The TCP transport over rocketpy's
//!   remoting is the next step (see [`network`]).
//! - [`controller`]: the facade that serves requests on the leader ([`Controller::submit`]).

pub mod controller;
pub mod files;
pub mod log_store;
pub mod network;
pub mod router;
pub mod state_machine;
pub mod types;

pub use controller::{
    peers, Controller, ControllerOptions, ControllerRequest, StartError, LEADER_ADDRESS_FIELD,
    LEADER_ID_FIELD,
};
pub use log_store::{LogOpenReport, LogStore, StoreError};
pub use network::{serve, Network, RaftReply, RaftRpc, RaftTransport, TransportError};
pub use router::{Router, RouterTransport};
pub use state_machine::{Applied, SharedApplied, StateMachineStore};
pub use types::{
    ApplyOutcome, ControllerRaft, GroupFence, GroupVersion, LoggedEvent, NodeId, Peers, Proposal,
    TypeConfig,
};
