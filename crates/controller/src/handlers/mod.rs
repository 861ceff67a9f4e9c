//! The request handlers: pure functions of (state, liveness view, request) returning a
//! [`ControllerResult`] (RocketMQ's `ReplicasInfoManager` request methods).
//!
//! What must stay true: handlers never change the state. What a request changes is in the
//! result's events, which the caller replicates and then applies with [`crate::apply`]
//! before answering; validation happens here, on the leader, against the applied state and
//! the leader's own liveness view. Handlers never panic on any request.

mod broker_id;
mod clean;
mod elect;
mod register;
mod sync_state;

pub use broker_id::{apply_broker_id, get_next_broker_id};
pub use clean::clean_broker_data;
pub use elect::elect_master;
pub use register::register_broker;
pub use sync_state::{alter_sync_state_set, get_replica_info, get_sync_state_data};

use crate::body::{self, SyncStateSet};
use crate::state::SyncStateInfo;

/// The `SyncStateSet` body of a group's current set.
fn sync_state_set_body(info: &SyncStateInfo) -> Vec<u8> {
    body::encode(&SyncStateSet {
        sync_state_set: info.sync_state_set.clone(),
        sync_state_set_epoch: info.sync_state_set_epoch,
    })
}
