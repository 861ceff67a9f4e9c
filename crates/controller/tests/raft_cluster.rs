//! Three controllers in one process replicate the controller state with openraft: equal state
//! machines, failover of the Raft leader, and a partitioned old leader that cannot commit.

mod raft_support;

use std::time::Duration;

use raft_support::*;
use rocketpy_controller::event::ApplyBrokerIdEvent;
use rocketpy_controller::raft::{ControllerRequest, Proposal, LEADER_ID_FIELD};
use rocketpy_controller::request::field;
use rocketpy_controller::Event;
use rocketpy_protocol::code::controller::response::CONTROLLER_NOT_LEADER;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_controllers_apply_the_same_state() {
    let cluster = Cluster::start(3).await;
    let all = cluster.ids.clone();
    form_group(&cluster, &all).await;

    let leader = cluster.wait_leader(&all).await;
    let states = cluster.wait_converged(leader, &all).await;
    assert!(states.windows(2).all(|w| w[0] == w[1]), "{states:#?}");
    let info = &states[0].group(GROUP).unwrap().sync_state_info;
    assert_eq!(info.master_broker_id, Some(1));
    assert_eq!((info.master_epoch, info.sync_state_set_epoch), (1, 2));
    assert_eq!(info.sync_state_set, [1, 2].into());

    // A follower does not serve, and names the leader.
    let follower = *all.iter().find(|id| **id != leader).unwrap();
    let r = cluster.nodes[&follower]
        .submit(&apply_id(3), &both_alive())
        .await;
    assert_eq!(r.code, CONTROLLER_NOT_LEADER);
    assert_eq!(r.field(LEADER_ID_FIELD), Some(leader.to_string().as_str()));

    // Reads are served by the leader from the replicated state.
    let r = cluster
        .submit(
            &all,
            ControllerRequest::GetReplicaInfo(
                rocketpy_controller::request::GetReplicaInfoRequest {
                    broker_name: GROUP.into(),
                },
            ),
            &both_alive(),
        )
        .await;
    assert!(r.is_success());
    assert_eq!(r.field(field::MASTER_BROKER_ID), Some("1"));
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_leader_serves_the_next_election_after_the_leader_dies() {
    let (mut cluster, all, old) = formed(3).await;

    cluster.stop(old).await;
    let rest: Vec<_> = all.iter().copied().filter(|id| *id != old).collect();
    let leader = cluster.wait_leader(&rest).await;
    assert_ne!(leader, old);

    // Broker 1 (the master) died; the controller elects from the SyncStateSet.
    let r = elect_after_master_died(&cluster, &rest).await;
    assert!(r.is_success(), "{r:?}");
    assert_eq!(r.field(field::MASTER_BROKER_ID), Some("2"));
    assert_eq!(r.field(field::MASTER_EPOCH), Some("2"));

    let leader = cluster.wait_leader(&rest).await;
    let states = cluster.wait_converged(leader, &rest).await;
    assert_eq!(states[0], states[1]);
    let info = &states[0].group(GROUP).unwrap().sync_state_info;
    assert_eq!(info.master_broker_id, Some(2));
    assert_eq!((info.master_epoch, info.sync_state_set_epoch), (2, 3));
    assert_eq!(info.sync_state_set, [2].into());
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_leader_cannot_commit_while_the_majority_goes_on() {
    let cluster = Cluster::start(3).await;
    let all = cluster.ids.clone();
    form_group(&cluster, &all).await;
    let old = cluster.wait_leader(&all).await;
    cluster.wait_converged(old, &all).await;
    cluster.router.isolate(old);

    // Through the facade: leadership cannot be confirmed, so nothing is decided.
    let r = cluster.nodes[&old]
        .submit(&apply_id(3), &both_alive())
        .await;
    assert!(!r.is_success(), "{r:?}");
    // Straight to raft: the entry cannot commit.
    let orphan = Proposal::new(
        &cluster.nodes[&old].local_state(),
        &[Event::ApplyBrokerId(ApplyBrokerIdEvent {
            broker_address: "10.9.9.9:1".into(),
            broker_name: "orphan".into(),
            cluster_name: CLUSTER.into(),
            new_broker_id: 1,
            register_check_code: "10.9.9.9:1;1".into(),
        })],
    );
    let write = tokio::time::timeout(
        Duration::from_millis(500),
        cluster.nodes[&old].raft().client_write(orphan),
    )
    .await;
    assert!(
        !matches!(write, Ok(Ok(_))),
        "isolated leader committed: {write:?}"
    );

    // The majority elects a new leader and serves an election.
    let rest: Vec<_> = all.iter().copied().filter(|id| *id != old).collect();
    let r = elect_after_master_died(&cluster, &rest).await;
    assert!(r.is_success(), "{r:?}");

    // After healing, the old leader follows and its orphan entry is gone everywhere.
    cluster.router.heal();
    let state = converged_on_master_2(&cluster, &all).await;
    assert!(state.group("orphan").is_none());
    cluster.shutdown().await;
}
