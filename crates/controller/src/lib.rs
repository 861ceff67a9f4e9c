//! RocketMQ 5.x controller mode's replicated state machine (issue 43): the state per broker
//! group, the events of the replicated log and their RocketMQ bytes, applying an event, the
//! request handlers, a snapshot format, and ([`raft`]) their replication across controllers
//! with openraft, persisted under a directory, and ([`server`]) a controller on the network.
//!
//! - [`state`]: per broker name, the members with their ids (`BrokerReplicaInfo`) and the
//!   master, epochs and SyncStateSet (`SyncStateInfo`).
//! - [`event`]: the five replicated events, encoded as RocketMQ's `EventSerializer` does.
//! - [`apply`]: the deterministic application of one event.
//! - [`handlers`]: one pure function per request, returning a [`ControllerResult`] whose
//!   events the caller replicates before answering.
//! - [`liveness`]: the local, unreplicated view of broker heartbeats the handlers consult.
//! - [`elect_policy`]: RocketMQ's `DefaultElectPolicy`.
//! - [`body`], [`request`]: bodies and headers with RocketMQ's field names.
//! - [`snapshot`]: rocketpy's own snapshot format of the state.
//! - [`raft`]: openraft's log store, state machine and network seam, and the [`Controller`]
//!   facade that serves requests on the leader.
//!
//! How a request is served ([`raft::Controller::submit`]): on the Raft leader only, one request at a time,
//! run the handler against the applied state and the leader's liveness view; if the result
//! has events, replicate them and wait until they are applied; then answer with the result's
//! code, header, body and remark. Followers apply the same events in the same order with
//! [`apply::apply`], so all hold the same state. Facts and sources:
//! `docs/controller-design.md` §1–2.

pub mod apply;
pub mod body;
pub mod config;
pub mod elect_policy;
pub mod event;
pub mod handlers;
pub mod liveness;
pub mod raft;
pub mod request;
pub mod result;
pub mod server;
pub mod snapshot;
pub mod state;

pub use apply::apply;
pub use config::ControllerConfig;
pub use event::{Event, EventError, EventType};
pub use liveness::{BrokerLiveInfo, Liveness, LivenessTable};
pub use raft::{Controller, ControllerRequest};
pub use result::ControllerResult;
pub use state::{BrokerGroup, BrokerReplicaInfo, ReplicasInfo, SyncStateInfo};

#[cfg(test)]
mod tests {
    use rocketpy_protocol::code::controller::{request, response};
    use rocketpy_protocol::code_names::{request_name, response_name};

    /// The controller's codes carry RocketMQ's names for the same numbers.
    #[test]
    fn codes_agree_with_rocketmq_names() {
        for (name, value) in request::ALL {
            assert_eq!(request_name(*value), Some(&*name.to_ascii_lowercase()));
        }
        for (name, value) in response::ALL {
            assert_eq!(response_name(*value), Some(&*name.to_ascii_lowercase()));
        }
    }
}
