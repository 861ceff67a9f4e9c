//! A group of in-process controllers for the raft_* tests: each with its own store directory,
//! all linked by one [`Router`], with test-sized timers (tens of milliseconds).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use openraft::{Config, ServerState};
use rocketpy_controller::raft::{
    peers, Controller, ControllerOptions, ControllerRequest, NodeId, Router,
};
use rocketpy_controller::request::*;
use rocketpy_controller::{ControllerResult, LivenessTable, ReplicasInfo};
use rocketpy_protocol::code::controller::response::CONTROLLER_NOT_LEADER;

pub const GROUP: &str = "broker-a";
pub const CLUSTER: &str = "DefaultCluster";
/// How long any condition may take before a test fails.
pub const WAIT: Duration = Duration::from_secs(10);

pub fn options() -> ControllerOptions {
    ControllerOptions {
        raft: Config {
            cluster_name: "test".into(),
            // Tens of milliseconds, with room for fsyncs on a loaded two-core machine.
            heartbeat_interval: 25,
            election_timeout_min: 150,
            election_timeout_max: 300,
            // Purge everything a snapshot covers, so a restart must use the snapshot.
            max_in_snapshot_log_to_keep: 0,
            purge_batch_size: 1,
            ..Config::default()
        },
        request_timeout: Duration::from_millis(1500),
        ..ControllerOptions::default()
    }
}

pub struct Cluster {
    pub router: Router,
    pub dir: tempfile::TempDir,
    pub nodes: BTreeMap<NodeId, Controller>,
    pub ids: Vec<NodeId>,
}

impl Cluster {
    /// Starts controllers `1..=n` and forms the group.
    pub async fn start(n: u64) -> Self {
        let mut cluster = Cluster {
            router: Router::new(),
            dir: tempfile::tempdir().unwrap(),
            nodes: BTreeMap::new(),
            ids: (1..=n).collect(),
        };
        for id in cluster.ids.clone() {
            cluster.start_node(id).await;
        }
        let members = peers(cluster.ids.iter().map(|id| (*id, "in-process")));
        cluster.nodes[&1].initialize(members).await.unwrap();
        cluster.wait_leader(&cluster.ids.clone()).await;
        cluster
    }

    pub fn node_dir(&self, id: NodeId) -> PathBuf {
        self.dir.path().join(format!("controller-{id}"))
    }

    /// Opens a node's store and starts its raft, without linking it to the others yet.
    pub async fn open_node(&self, id: NodeId) -> Controller {
        Controller::start(id, &self.node_dir(id), self.router.transport(id), options())
            .await
            .unwrap()
    }

    /// Starts (or restarts) a node and links it.
    pub async fn start_node(&mut self, id: NodeId) {
        let node = self.open_node(id).await;
        self.link(node);
    }

    pub fn link(&mut self, node: Controller) {
        self.router.add(node.id(), node.raft().clone());
        self.nodes.insert(node.id(), node);
    }

    /// Stops a node (as a kill: it keeps only what it made durable).
    pub async fn stop(&mut self, id: NodeId) {
        self.router.remove(id);
        if let Some(node) = self.nodes.remove(&id) {
            node.shutdown().await;
        }
    }

    /// Waits until every node of `among` is up and names the same leader, one of `among`
    /// that is itself in the leader state; returns it.
    pub async fn wait_leader(&self, among: &[NodeId]) -> NodeId {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let leaders: Vec<Option<NodeId>> = among
                .iter()
                .map(|id| self.nodes[id].current_leader())
                .collect();
            if let Some(Some(leader)) = leaders.first() {
                let agreed = leaders.iter().all(|l| *l == Some(*leader));
                let is_leader = among.contains(leader)
                    && self.nodes[leader].raft().metrics().borrow().state == ServerState::Leader;
                if agreed && is_leader {
                    return *leader;
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no agreed leader among {among:?}: {leaders:?}"
            );
            // Wake on the next metrics change of the first node, or re-check shortly.
            let mut rx = self.nodes[&among[0]].raft().metrics();
            let _ = tokio::time::timeout(Duration::from_millis(50), rx.changed()).await;
        }
    }

    /// Serves a request on whichever node of `among` leads, retrying while leadership moves.
    pub async fn submit(
        &self,
        among: &[NodeId],
        request: ControllerRequest,
        live: &LivenessTable,
    ) -> ControllerResult {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let leader = self.wait_leader(among).await;
            let result = self.nodes[&leader].submit(&request, live).await;
            if result.code != CONTROLLER_NOT_LEADER || tokio::time::Instant::now() >= deadline {
                return result;
            }
        }
    }

    /// Waits until every node of `among` applied everything in `leader`'s log (its metrics'
    /// `last_applied` may trail the entry a request just applied); returns the states.
    pub async fn wait_converged(&self, leader: NodeId, among: &[NodeId]) -> Vec<ReplicasInfo> {
        let index = self.nodes[&leader].raft().metrics().borrow().last_log_index;
        for id in among {
            self.nodes[id]
                .raft()
                .wait(Some(WAIT))
                .applied_index_at_least(index, "catch up")
                .await
                .unwrap();
        }
        among
            .iter()
            .map(|id| self.nodes[id].local_state())
            .collect()
    }

    pub async fn shutdown(mut self) {
        for id in self.nodes.keys().copied().collect::<Vec<_>>() {
            self.stop(id).await;
        }
    }
}

pub fn addr(id: i64) -> String {
    format!("10.0.0.{id}:10911")
}

pub fn apply_id(id: i64) -> ControllerRequest {
    ControllerRequest::ApplyBrokerId(ApplyBrokerIdRequest {
        cluster_name: CLUSTER.into(),
        broker_name: GROUP.into(),
        applied_broker_id: id,
        register_check_code: format!("{};{id}", addr(id)),
    })
}

pub fn register(id: i64, address: &str) -> ControllerRequest {
    ControllerRequest::RegisterBroker(RegisterBrokerRequest {
        cluster_name: CLUSTER.into(),
        broker_name: GROUP.into(),
        broker_id: id,
        broker_address: address.into(),
    })
}

pub fn elect_by_broker(id: i64) -> ControllerRequest {
    ControllerRequest::ElectMaster(ElectMasterRequest {
        cluster_name: CLUSTER.into(),
        broker_name: GROUP.into(),
        broker_id: Some(id),
        designate_elect: false,
    })
}

pub fn alter_sss(master: i64, master_epoch: i32, set: &[i64], set_epoch: i32) -> ControllerRequest {
    ControllerRequest::AlterSyncStateSet(AlterSyncStateSetRequest {
        broker_name: GROUP.into(),
        master_broker_id: master,
        master_epoch,
        sync_state_set: rocketpy_controller::body::SyncStateSet {
            sync_state_set: set.iter().copied().collect(),
            sync_state_set_epoch: set_epoch,
        },
    })
}

/// Brokers 1 and 2 of the group alive.
pub fn both_alive() -> LivenessTable {
    let mut live = LivenessTable::new();
    live.set_alive(GROUP, 1, 0, 100);
    live.set_alive(GROUP, 2, 0, 100);
    live
}

/// The controller's own election after broker 1 (the master) died, served by the leader of
/// `among`.
pub async fn elect_after_master_died(cluster: &Cluster, among: &[NodeId]) -> ControllerResult {
    let mut live = both_alive();
    live.set_dead(GROUP, 1);
    let elect = ControllerRequest::ElectMaster(ElectMasterRequest::by_controller(GROUP));
    cluster.submit(among, elect, &live).await
}

/// Waits until every node of `all` agrees with the leader; asserts they all hold the same
/// state with broker 2 as the group's master, and returns that state.
pub async fn converged_on_master_2(cluster: &Cluster, all: &[NodeId]) -> ReplicasInfo {
    let leader = cluster.wait_leader(all).await;
    let states = cluster.wait_converged(leader, all).await;
    assert!(states.windows(2).all(|w| w[0] == w[1]), "{states:#?}");
    let master = states[0]
        .group(GROUP)
        .unwrap()
        .sync_state_info
        .master_broker_id;
    assert_eq!(master, Some(2));
    states[0].clone()
}

/// `n` controllers with a formed group, every node caught up: the cluster, its ids and its
/// leader.
pub async fn formed(n: u64) -> (Cluster, Vec<NodeId>, NodeId) {
    let cluster = Cluster::start(n).await;
    let all = cluster.ids.clone();
    form_group(&cluster, &all).await;
    let leader = cluster.wait_leader(&all).await;
    cluster.wait_converged(leader, &all).await;
    (cluster, all, leader)
}

/// Registers brokers 1 and 2, elects 1, and puts 2 in the SyncStateSet, through the leader
/// of `among`.
pub async fn form_group(cluster: &Cluster, among: &[NodeId]) {
    let live = both_alive();
    for id in [1, 2] {
        let r = cluster.submit(among, apply_id(id), &live).await;
        assert!(r.is_success(), "apply id {id}: {r:?}");
        let r = cluster.submit(among, register(id, &addr(id)), &live).await;
        assert!(r.is_success(), "register {id}: {r:?}");
    }
    let r = cluster.submit(among, elect_by_broker(1), &live).await;
    assert!(r.is_success(), "elect: {r:?}");
    assert_eq!(r.field(field::MASTER_EPOCH), Some("1"));
    let r = cluster
        .submit(among, alter_sss(1, 1, &[1, 2], 1), &live)
        .await;
    assert!(r.is_success(), "alter: {r:?}");
    assert_eq!(r.field(field::NEW_SYNC_STATE_SET_EPOCH), Some("2"));
}
