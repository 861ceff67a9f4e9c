//! A controller recovers from its files: a restarted node from its snapshot and log, then
//! catches up; a torn record at the log's tail is cut off on open; damage in the middle of
//! the log refuses to open.

mod raft_support;

use std::io::Write;

use raft_support::*;
use rocketpy_controller::raft::{peers, Controller, ControllerRequest, StartError, StoreError};
use rocketpy_controller::request::{field, ElectMasterRequest};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_controller_recovers_from_snapshot_and_log_and_catches_up() {
    let (mut cluster, all, leader) = formed(3).await;
    let node = *all.iter().find(|id| **id != leader).unwrap();

    // Snapshot on the follower and purge the log it covers, then append one more entry.
    let raft = cluster.nodes[&node].raft().clone();
    raft.trigger().snapshot().await.unwrap();
    let applied = raft.metrics().borrow().last_applied;
    raft.wait(Some(WAIT))
        .metrics(
            |m| m.snapshot.is_some() && m.snapshot >= applied && m.purged.is_some(),
            "snapshot and purge",
        )
        .await
        .unwrap();
    let r = cluster
        .submit(&all, register(2, "10.0.0.22:10911"), &both_alive())
        .await;
    assert!(r.is_success(), "{r:?}");
    let leader = cluster.wait_leader(&all).await;
    let before = cluster.wait_converged(leader, &all).await[0].clone();
    let before_index = cluster.nodes[&node]
        .raft()
        .metrics()
        .borrow()
        .last_applied
        .map(|l| l.index);
    cluster.stop(node).await;

    // The others go on without it.
    let rest: Vec<_> = all.iter().copied().filter(|id| *id != node).collect();
    let r = elect_after_master_died(&cluster, &rest).await;
    assert!(r.is_success(), "{r:?}");
    assert_eq!(r.field(field::MASTER_BROKER_ID), Some("2"));

    // Reopened but not yet linked: its state is what its snapshot and log held.
    let restarted = cluster.open_node(node).await;
    restarted
        .raft()
        .wait(Some(WAIT))
        .applied_index_at_least(before_index, "replay of the saved log")
        .await
        .unwrap();
    assert_eq!(restarted.local_state(), before);
    assert_eq!(restarted.log_report().torn_tail_bytes, None);
    cluster.link(restarted);

    let state = converged_on_master_2(&cluster, &all).await;
    assert_eq!(
        state.group(GROUP).unwrap().replica_info.address(2),
        Some("10.0.0.22:10911")
    );
    cluster.shutdown().await;
}

/// One controller alone (no fault tolerance, as RocketMQ documents) forms a group, writes,
/// stops; a torn record is appended to its log as a crash mid-append would leave it.
async fn single_node_with_history() -> Cluster {
    let mut cluster = Cluster {
        router: rocketpy_controller::raft::Router::new(),
        dir: tempfile::tempdir().unwrap(),
        nodes: Default::default(),
        ids: vec![1],
    };
    cluster.start_node(1).await;
    cluster.nodes[&1]
        .initialize(peers([(1, "in-process")]))
        .await
        .unwrap();
    form_group(&cluster, &[1]).await;
    cluster
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_log_tail_is_cut_on_open() {
    let mut cluster = single_node_with_history().await;
    let before = cluster.nodes[&1].local_state();
    cluster.stop(1).await;

    let log = cluster.node_dir(1).join("raft-log");
    let good_len = std::fs::metadata(&log).unwrap().len();
    // A record header promising 100 bytes, and 10 of them.
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    file.write_all(&100u32.to_be_bytes()).unwrap();
    file.write_all(&[7u8; 14]).unwrap();
    drop(file);

    let node = cluster.open_node(1).await;
    assert_eq!(node.log_report().torn_tail_bytes, Some(18));
    assert_eq!(std::fs::metadata(&log).unwrap().len(), good_len);
    cluster.link(node);
    cluster.wait_leader(&[1]).await;
    let states = cluster.wait_converged(1, &[1]).await;
    assert_eq!(states[0], before);
    // And it serves writes again.
    let mut live = both_alive();
    live.set_dead(GROUP, 1);
    let r = cluster
        .submit(
            &[1],
            ControllerRequest::ElectMaster(ElectMasterRequest::by_controller(GROUP)),
            &live,
        )
        .await;
    assert!(r.is_success(), "{r:?}");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damage_inside_the_log_refuses_to_open() {
    let mut cluster = single_node_with_history().await;
    cluster.stop(1).await;
    let dir = cluster.node_dir(1);
    let log = dir.join("raft-log");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[10] ^= 0xff;
    std::fs::write(&log, &bytes).unwrap();

    let opened = Controller::start(1, &dir, cluster.router.transport(1), options()).await;
    assert!(
        matches!(opened, Err(StartError::Store(StoreError::Corrupt { .. }))),
        "{:?}",
        opened.err()
    );
}
