//! The controller facade: one controller of a Raft group, serving RocketMQ's controller
//! requests ([`ControllerRequest`]) as RocketMQ's `DLedgerController` does, on openraft.
//!
//! How [`Controller::submit`] serves a request, one at a time per controller:
//! 1. Confirm leadership and catch up: `ensure_linearizable` (a ReadIndex round with a quorum,
//!    then waiting until this node applied up to it). A follower answers
//!    CONTROLLER_NOT_LEADER (2007) with the leader's id and address in the header.
//! 2. Decide: the handler runs against the applied state and the caller's liveness view.
//! 3. No events (a read, or a refusal): answer. Otherwise propose the events as one
//!    [`Proposal`] fenced on the state the decision read; `client_write` returns once the
//!    entry is applied here. Applied: answer. Stale (the state moved in between): decide again.
//!
//! What must stay true: an answer that reports a change is sent only after its events are
//! committed and applied; a write whose outcome is unknown (timeout, lost leadership) is
//! answered with an error, never with the decision's success.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use openraft::error::{CheckIsLeaderError, ClientWriteError, RaftError};
use openraft::Config;
use rocketpy_protocol::code::controller::response::CONTROLLER_NOT_LEADER;
use rocketpy_protocol::code::response::SYSTEM_ERROR;

use super::log_store::{LogOpenReport, LogStore, StoreError};
use super::network::{Network, RaftTransport};
use super::state_machine::{SharedApplied, StateMachineStore};
use super::types::{ApplyOutcome, ControllerRaft, Node, NodeId, Peers, Proposal};
use crate::config::ControllerConfig;
use crate::handlers;
use crate::liveness::Liveness;
use crate::request::{
    AlterSyncStateSetRequest, ApplyBrokerIdRequest, CleanBrokerDataRequest, ElectMasterRequest,
    GetNextBrokerIdRequest, GetReplicaInfoRequest, RegisterBrokerRequest,
};
use crate::result::ControllerResult;
use crate::state::ReplicasInfo;

/// Header field of a CONTROLLER_NOT_LEADER answer: the leader's Raft id, when known.
/// (rocketpy's addition: RocketMQ's brokers ignore it and ask GET_METADATA_INFO.)
pub const LEADER_ID_FIELD: &str = "leaderId";
/// Header field of a CONTROLLER_NOT_LEADER answer: the leader's address, when known.
pub const LEADER_ADDRESS_FIELD: &str = "leaderAddress";

/// How often a decision is taken again when its proposal found the state moved.
const MAX_DECISIONS: usize = 3;

/// A request the controller serves through its replicated state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControllerRequest {
    GetNextBrokerId(GetNextBrokerIdRequest),
    ApplyBrokerId(ApplyBrokerIdRequest),
    RegisterBroker(RegisterBrokerRequest),
    ElectMaster(ElectMasterRequest),
    AlterSyncStateSet(AlterSyncStateSetRequest),
    GetReplicaInfo(GetReplicaInfoRequest),
    /// GET_SYNC_STATE_DATA for these broker names.
    GetSyncStateData(Vec<String>),
    CleanBrokerData(CleanBrokerDataRequest),
}

impl ControllerRequest {
    /// The handler's decision against `state`.
    pub fn decide(
        &self,
        state: &ReplicasInfo,
        liveness: &dyn Liveness,
        config: &ControllerConfig,
    ) -> ControllerResult {
        match self {
            Self::GetNextBrokerId(r) => handlers::get_next_broker_id(state, r),
            Self::ApplyBrokerId(r) => handlers::apply_broker_id(state, r),
            Self::RegisterBroker(r) => handlers::register_broker(state, liveness, r),
            Self::ElectMaster(r) => handlers::elect_master(state, liveness, config, r),
            Self::AlterSyncStateSet(r) => handlers::alter_sync_state_set(state, liveness, r),
            Self::GetReplicaInfo(r) => handlers::get_replica_info(state, r),
            Self::GetSyncStateData(names) => handlers::get_sync_state_data(state, liveness, names),
            Self::CleanBrokerData(r) => handlers::clean_broker_data(state, liveness, r),
        }
    }
}

/// Settings of one controller.
#[derive(Debug, Clone)]
pub struct ControllerOptions {
    /// The decision keys (`enableElectUncleanMaster`).
    pub config: ControllerConfig,
    /// openraft's timers and snapshot policy.
    pub raft: Config,
    /// How long a request may wait for leadership confirmation and for its commit
    /// (RocketMQ waits 5 s for the DLedger append).
    pub request_timeout: Duration,
}

impl Default for ControllerOptions {
    fn default() -> Self {
        Self {
            config: ControllerConfig::default(),
            raft: Config {
                cluster_name: "rocketpy-controller".into(),
                heartbeat_interval: 200,
                election_timeout_min: 1000,
                election_timeout_max: 2000,
                ..Config::default()
            },
            request_timeout: Duration::from_secs(5),
        }
    }
}

/// Why a controller did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("invalid raft settings: {0}")]
    Config(String),
    #[error("raft did not start: {0}")]
    Raft(String),
}

/// One controller of the group.
pub struct Controller {
    id: NodeId,
    raft: ControllerRaft,
    applied: SharedApplied,
    /// The decision keys; UPDATE_CONTROLLER_CONFIG may change them while running.
    config: parking_lot::RwLock<ControllerConfig>,
    timeout: Duration,
    /// RocketMQ's single `EventScheduler`: one decision at a time.
    serial: tokio::sync::Mutex<()>,
    log_report: LogOpenReport,
}

impl Controller {
    /// Opens the store under `dir` (creating it) and starts Raft over `transport`. A new
    /// group is formed by [`Controller::initialize`] on one node; a restarted node resumes
    /// from its files.
    pub async fn start<T: RaftTransport>(
        id: NodeId,
        dir: &Path,
        transport: T,
        options: ControllerOptions,
    ) -> Result<Self, StartError> {
        let (log, log_report) = LogStore::open(dir)?;
        let state_machine = StateMachineStore::open(dir)?;
        let applied = state_machine.shared();
        let raft_config = options
            .raft
            .validate()
            .map_err(|e| StartError::Config(e.to_string()))?;
        let raft = ControllerRaft::new(
            id,
            Arc::new(raft_config),
            Network::new(transport),
            log,
            state_machine,
        )
        .await
        .map_err(|e| StartError::Raft(e.to_string()))?;
        Ok(Self {
            id,
            raft,
            applied,
            config: parking_lot::RwLock::new(options.config),
            timeout: options.request_timeout,
            serial: tokio::sync::Mutex::new(()),
            log_report,
        })
    }

    /// Forms a new group of `peers` (call once, on one node of a fresh group).
    pub async fn initialize(&self, peers: Peers) -> Result<(), String> {
        self.raft.initialize(peers).await.map_err(|e| e.to_string())
    }

    /// The decision keys in force.
    pub fn config(&self) -> ControllerConfig {
        *self.config.read()
    }

    /// Changes the decision keys; the next decision uses them.
    pub fn set_config(&self, config: ControllerConfig) {
        *self.config.write() = config;
    }

    /// Whether this controller is the Raft leader now, as far as it knows.
    pub fn is_leader(&self) -> bool {
        self.current_leader() == Some(self.id)
    }

    /// This controller's id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The Raft handle (metrics, triggers, and the RPC entry points a transport serves).
    pub fn raft(&self) -> &ControllerRaft {
        &self.raft
    }

    /// What opening the log found (a torn tail cut off, a damaged commit position ignored).
    pub fn log_report(&self) -> &LogOpenReport {
        &self.log_report
    }

    /// The state this node has applied, possibly behind the leader (not a linearizable read).
    pub fn local_state(&self) -> ReplicasInfo {
        self.applied.read().state.clone()
    }

    /// The leader this node knows of.
    pub fn current_leader(&self) -> Option<NodeId> {
        self.raft.metrics().borrow().current_leader
    }

    /// Stops Raft; the store stays on disk for a restart.
    pub async fn shutdown(&self) {
        if let Err(e) = self.raft.shutdown().await {
            tracing::warn!(id = self.id, error = %e, "controller raft shutdown");
        }
    }

    /// Serves a request (see the module docs). Never panics; every failure is an answer.
    pub async fn submit(
        &self,
        request: &ControllerRequest,
        liveness: &(dyn Liveness + Sync),
    ) -> ControllerResult {
        let _serial = self.serial.lock().await;
        for _ in 0..MAX_DECISIONS {
            match tokio::time::timeout(self.timeout, self.raft.ensure_linearizable()).await {
                Err(_) => {
                    return self
                        .not_leader("leadership could not be confirmed in time")
                        .mark_timed_out()
                }
                Ok(Err(RaftError::APIError(CheckIsLeaderError::ForwardToLeader(f)))) => {
                    return self.not_leader_at(
                        f.leader_id,
                        f.leader_node.as_ref(),
                        "not the leader",
                    )
                }
                Ok(Err(e)) => return self.not_leader(&e.to_string()),
                Ok(Ok(_)) => {}
            }
            let (result, proposal) = {
                let applied = self.applied.read();
                let config = self.config();
                let result = request.decide(&applied.state, liveness, &config);
                let proposal = Proposal::new(&applied.state, &result.events);
                (result, proposal)
            };
            if result.events.is_empty() {
                return result;
            }
            match tokio::time::timeout(self.timeout, self.raft.client_write(proposal)).await {
                Err(_) => {
                    return failure(SYSTEM_ERROR, "timed out waiting for the events to commit")
                        .mark_timed_out()
                }
                Ok(Err(RaftError::APIError(ClientWriteError::ForwardToLeader(f)))) => {
                    return self.not_leader_at(
                        f.leader_id,
                        f.leader_node.as_ref(),
                        "lost leadership",
                    )
                }
                Ok(Err(e)) => return failure(SYSTEM_ERROR, &format!("raft: {e}")),
                Ok(Ok(written)) => match written.data {
                    ApplyOutcome::Applied { .. } => return result,
                    ApplyOutcome::Stale { broker_name } => {
                        tracing::debug!(%broker_name, "decision went stale before it applied; deciding again");
                    }
                    ApplyOutcome::NoCommand => {
                        return failure(SYSTEM_ERROR, "proposal applied as no command")
                    }
                },
            }
        }
        failure(SYSTEM_ERROR, "the group kept changing under the decision")
    }

    fn not_leader(&self, why: &str) -> ControllerResult {
        let metrics = self.raft.metrics().borrow().clone();
        let leader = metrics.current_leader.filter(|l| *l != self.id);
        let node =
            leader.and_then(|l| metrics.membership_config.membership().get_node(&l).cloned());
        self.not_leader_at(leader, node.as_ref(), why)
    }

    fn not_leader_at(
        &self,
        leader: Option<NodeId>,
        node: Option<&Node>,
        why: &str,
    ) -> ControllerResult {
        ControllerResult::success()
            .with_opt(LEADER_ID_FIELD, leader)
            .with_opt(LEADER_ADDRESS_FIELD, node.map(|n| n.addr.clone()))
            .fail(
                CONTROLLER_NOT_LEADER,
                format!("The controller is not in leader state ({why})"),
            )
    }
}

fn failure(code: i32, remark: &str) -> ControllerResult {
    ControllerResult::success().fail(code, remark)
}

/// The peers map of a group from (id, address) pairs.
pub fn peers<'a>(members: impl IntoIterator<Item = (NodeId, &'a str)>) -> Peers {
    members
        .into_iter()
        .map(|(id, addr)| {
            (
                id,
                Node {
                    addr: addr.to_owned(),
                },
            )
        })
        .collect::<BTreeMap<_, _>>()
}
