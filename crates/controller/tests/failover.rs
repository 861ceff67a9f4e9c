//! The controller's state machine driven as a broker group, mqadmin and the controller itself
//! would drive it: registration, SyncStateSet changes, failover, fencing of a deposed
//! master, unclean and designated elections, cleaning, and the log and snapshot that a Raft
//! integration would keep.
//!
//! Every result's events go through their bytes (encode, decode) before they are applied,
//! and a second state replays the whole log at the end, as a follower would.

use std::collections::BTreeSet;

use rocketpy_controller::body::{self, BrokerReplicasInfo, ElectMasterResponseBody, SyncStateSet};
use rocketpy_controller::event::{
    AlterSyncStateSetEvent, ApplyBrokerIdEvent, CleanBrokerDataEvent, ElectMasterEvent,
    UpdateBrokerAddressEvent,
};
use rocketpy_controller::handlers;
use rocketpy_controller::request::*;
use rocketpy_controller::{
    apply, snapshot, ControllerConfig, ControllerResult, Event, LivenessTable, ReplicasInfo,
};
use rocketpy_protocol::code::controller::response::*;
use rocketpy_protocol::code::response::SUCCESS;

const GROUP: &str = "broker-a";
const CLUSTER: &str = "DefaultCluster";

/// A leader: the applied state, its liveness view, and the log of committed events.
#[derive(Default)]
struct Leader {
    state: ReplicasInfo,
    live: LivenessTable,
    config: ControllerConfig,
    log: Vec<Vec<u8>>,
}

impl Leader {
    /// Commits a result's events (through their bytes) and returns the result.
    fn commit(&mut self, result: ControllerResult) -> ControllerResult {
        for event in &result.events {
            let bytes = event.encode();
            let decoded = Event::decode(&bytes).expect("own event decodes");
            assert_eq!(&decoded, event);
            apply(&mut self.state, &decoded);
            self.log.push(bytes);
        }
        result
    }

    fn addr(id: i64) -> String {
        format!("10.0.0.{id}:10911")
    }

    fn next_id(&mut self) -> i64 {
        let r = handlers::get_next_broker_id(
            &self.state,
            &GetNextBrokerIdRequest {
                cluster_name: CLUSTER.into(),
                broker_name: GROUP.into(),
            },
        );
        assert_eq!(r.code, SUCCESS);
        assert!(r.events.is_empty());
        r.field(field::NEXT_BROKER_ID).unwrap().parse().unwrap()
    }

    fn apply_id(&mut self, id: i64, check_code: &str) -> ControllerResult {
        let r = handlers::apply_broker_id(
            &self.state,
            &ApplyBrokerIdRequest {
                cluster_name: CLUSTER.into(),
                broker_name: GROUP.into(),
                applied_broker_id: id,
                register_check_code: check_code.into(),
            },
        );
        self.commit(r)
    }

    fn register(&mut self, id: i64, address: &str) -> ControllerResult {
        let r = handlers::register_broker(
            &self.state,
            &self.live,
            &RegisterBrokerRequest {
                cluster_name: CLUSTER.into(),
                broker_name: GROUP.into(),
                broker_id: id,
                broker_address: address.into(),
            },
        );
        self.commit(r)
    }

    fn elect(&mut self, broker_id: Option<i64>, designate: bool) -> ControllerResult {
        let r = handlers::elect_master(
            &self.state,
            &self.live,
            &self.config,
            &ElectMasterRequest {
                cluster_name: CLUSTER.into(),
                broker_name: GROUP.into(),
                broker_id,
                designate_elect: designate,
            },
        );
        self.commit(r)
    }

    fn alter(&mut self, master: i64, epoch: i32, set: &[i64], set_epoch: i32) -> ControllerResult {
        let r = handlers::alter_sync_state_set(
            &self.state,
            &self.live,
            &AlterSyncStateSetRequest {
                broker_name: GROUP.into(),
                master_broker_id: master,
                master_epoch: epoch,
                sync_state_set: SyncStateSet {
                    sync_state_set: set.iter().copied().collect(),
                    sync_state_set_epoch: set_epoch,
                },
            },
        );
        self.commit(r)
    }

    fn clean(&mut self, ids: Option<&str>, living: bool) -> ControllerResult {
        let r = handlers::clean_broker_data(
            &self.state,
            &self.live,
            &CleanBrokerDataRequest {
                cluster_name: Some(CLUSTER.into()),
                broker_name: GROUP.into(),
                broker_controller_ids_to_clean: ids.map(str::to_owned),
                is_clean_living_broker: living,
            },
        );
        self.commit(r)
    }

    /// A broker joins as RocketMQ's broker does: next id, apply, register, heartbeat.
    fn join(&mut self) -> i64 {
        let id = self.next_id();
        let addr = Self::addr(id);
        let r = self.apply_id(id, &format!("{addr};1700000000000"));
        assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
        assert_eq!(r.events.len(), 1);
        let r = self.register(id, &addr);
        assert_eq!(r.code, SUCCESS);
        assert!(r.events.is_empty(), "same address: nothing to replicate");
        self.live.set_alive(GROUP, id, 0, 0);
        id
    }

    fn sync_state(&self) -> (Option<i64>, i32, i32, BTreeSet<i64>) {
        let info = &self.state.group(GROUP).unwrap().sync_state_info;
        (
            info.master_broker_id,
            info.master_epoch,
            info.sync_state_set_epoch,
            info.sync_state_set.clone(),
        )
    }

    /// A follower's state after replaying the log, and the snapshot's.
    fn check_replay(&self) {
        let mut follower = ReplicasInfo::new();
        for bytes in &self.log {
            apply(&mut follower, &Event::decode(bytes).unwrap());
        }
        assert_eq!(follower, self.state);
        assert_eq!(
            snapshot::restore(&snapshot::save(&follower)).unwrap(),
            self.state
        );
    }
}

fn set(ids: &[i64]) -> BTreeSet<i64> {
    ids.iter().copied().collect()
}

/// Registration, first election, a second replica, SyncStateSet expansion.
fn two_replicas_in_sync() -> Leader {
    let mut c = Leader::default();
    assert_eq!(c.next_id(), 1);
    assert_eq!(c.join(), 1);

    let r = c.elect(Some(1), false);
    assert_eq!(r.code, SUCCESS);
    assert_eq!(r.field(field::MASTER_BROKER_ID), Some("1"));
    assert_eq!(r.field(field::MASTER_ADDRESS), Some(&*Leader::addr(1)));
    assert_eq!(r.field(field::MASTER_EPOCH), Some("1"));
    assert_eq!(r.field(field::SYNC_STATE_SET_EPOCH), Some("1"));
    let b: ElectMasterResponseBody = body::decode(r.body.as_ref().unwrap()).unwrap();
    assert_eq!(b.sync_state_set, set(&[1]));
    assert_eq!(
        b.broker_member_group.unwrap().broker_addrs[&1],
        Leader::addr(1)
    );
    assert_eq!(c.sync_state(), (Some(1), 1, 1, set(&[1])));

    assert_eq!(c.join(), 2);
    let r = c.register(2, &Leader::addr(2));
    assert_eq!(r.field(field::MASTER_BROKER_ID), Some("1"));
    assert_eq!(r.field(field::MASTER_EPOCH), Some("1"));
    // The new replica asks for an election too: the alive master stays.
    let r = c.elect(Some(2), false);
    assert_eq!(r.code, CONTROLLER_MASTER_STILL_EXIST);
    assert!(r.events.is_empty());
    assert_eq!(r.field(field::MASTER_BROKER_ID), Some("1"));

    let r = c.alter(1, 1, &[1, 2], 1);
    assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
    assert_eq!(r.field(field::NEW_SYNC_STATE_SET_EPOCH), Some("2"));
    let b: SyncStateSet = body::decode(r.body.as_ref().unwrap()).unwrap();
    assert_eq!(
        (b.sync_state_set, b.sync_state_set_epoch),
        (set(&[1, 2]), 2)
    );
    assert_eq!(c.sync_state(), (Some(1), 1, 2, set(&[1, 2])));
    c
}

#[test]
fn failover_and_fencing_of_the_deposed_master() {
    let mut c = two_replicas_in_sync();
    c.live.set_alive(GROUP, 1, 1, 500);
    c.live.set_alive(GROUP, 2, 1, 500);

    c.live.set_dead(GROUP, 1);
    assert_eq!(c.state.groups_needing_reelection(&c.live), vec![GROUP]);
    let r = c.elect(None, false);
    assert_eq!(r.code, SUCCESS);
    assert_eq!(r.field(field::MASTER_BROKER_ID), Some("2"));
    assert_eq!(r.field(field::MASTER_EPOCH), Some("2"));
    assert_eq!(c.sync_state(), (Some(2), 2, 3, set(&[2])));
    assert!(c.state.groups_needing_reelection(&c.live).is_empty());

    // The old master comes back believing it still leads epoch 1.
    c.live.set_alive(GROUP, 1, 1, 600);
    let r = c.alter(1, 1, &[1, 2], 2);
    assert_eq!(r.code, CONTROLLER_INVALID_MASTER);
    assert_eq!(r.field(field::NEW_SYNC_STATE_SET_EPOCH), Some("0"));
    assert!(r.events.is_empty());
    // The new master with a stale epoch, or a stale set epoch.
    assert_eq!(
        c.alter(2, 1, &[1, 2], 3).code,
        CONTROLLER_FENCED_MASTER_EPOCH
    );
    assert_eq!(
        c.alter(2, 2, &[1, 2], 2).code,
        CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH
    );
    // Other refusals, in RocketMQ's order.
    assert_eq!(
        c.alter(2, 2, &[2], 3).code,
        CONTROLLER_ALTER_SYNC_STATE_SET_FAILED
    );
    assert_eq!(c.alter(2, 2, &[2, 7], 3).code, CONTROLLER_INVALID_REPLICAS);
    c.live.set_dead(GROUP, 1);
    assert_eq!(c.alter(2, 2, &[1, 2], 3).code, CONTROLLER_BROKER_NOT_ALIVE);
    c.live.set_alive(GROUP, 1, 2, 600);
    assert_eq!(
        c.alter(2, 2, &[1], 3).code,
        CONTROLLER_ALTER_SYNC_STATE_SET_FAILED
    );
    // The old master, now a slave, is let back in by the new master.
    assert_eq!(c.alter(2, 2, &[1, 2], 3).code, SUCCESS);
    assert_eq!(c.sync_state(), (Some(2), 2, 4, set(&[1, 2])));

    // The old master registers from a new address: replicated, check code kept.
    let r = c.register(1, "10.0.0.9:10911");
    assert_eq!(r.code, SUCCESS);
    assert_eq!(r.field(field::MASTER_BROKER_ID), Some("2"));
    assert!(matches!(r.events[..], [Event::UpdateBrokerAddress(_)]));
    let g = c.state.group(GROUP).unwrap();
    assert_eq!(g.replica_info.address(1), Some("10.0.0.9:10911"));
    assert_eq!(
        g.replica_info.check_code(1),
        Some(&*format!("{};1700000000000", Leader::addr(1)))
    );

    let r = handlers::get_replica_info(
        &c.state,
        &GetReplicaInfoRequest {
            broker_name: GROUP.into(),
        },
    );
    assert_eq!(r.field(field::MASTER_BROKER_ID), Some("2"));
    assert_eq!(r.field(field::MASTER_EPOCH), Some("2"));
    let unknown = handlers::get_replica_info(
        &c.state,
        &GetReplicaInfoRequest {
            broker_name: "nope".into(),
        },
    );
    assert_eq!(unknown.code, CONTROLLER_BROKER_METADATA_NOT_EXIST);
    c.check_replay();
}

#[test]
fn unclean_election_only_with_the_flag() {
    let mut c = two_replicas_in_sync();
    // The master shrinks the set to itself (replica 2 fell behind), then dies.
    assert_eq!(c.alter(1, 1, &[1], 2).code, SUCCESS);
    c.live.set_dead(GROUP, 1);

    let mut unclean = Leader {
        state: c.state.clone(),
        live: c.live.clone(),
        config: ControllerConfig {
            enable_elect_unclean_master: true,
        },
        log: c.log.clone(),
    };

    // A broker's request finds nobody in sync: 2012, nothing changes.
    let r = c.elect(Some(2), false);
    assert_eq!(r.code, CONTROLLER_ELECT_MASTER_FAILED);
    assert!(r.events.is_empty());
    // The controller's own trigger records that there is no master.
    let r = c.elect(None, false);
    assert_eq!(r.code, CONTROLLER_MASTER_NOT_AVAILABLE);
    assert_eq!(c.sync_state(), (None, 2, 3, set(&[1])));
    let r = c.register(2, &Leader::addr(2));
    assert_eq!(r.field(field::MASTER_BROKER_ID), None);

    let r = unclean.elect(None, false);
    assert_eq!(r.code, SUCCESS);
    assert_eq!(unclean.sync_state(), (Some(2), 2, 4, set(&[2])));
    c.check_replay();
    unclean.check_replay();
}

#[test]
fn designated_election() {
    let mut c = two_replicas_in_sync();
    let r = c.elect(Some(2), true);
    assert_eq!(r.code, SUCCESS);
    assert_eq!(c.sync_state(), (Some(2), 2, 3, set(&[2])));
    // The designated id must be an alive member of the set.
    assert_eq!(c.elect(Some(1), true).code, CONTROLLER_ELECT_MASTER_FAILED);
    assert_eq!(c.elect(Some(9), true).code, CONTROLLER_ELECT_MASTER_FAILED);
    // Designating the current master changes nothing.
    assert_eq!(c.elect(Some(2), true).code, CONTROLLER_MASTER_STILL_EXIST);
    c.check_replay();
}

#[test]
fn broker_id_claims_are_idempotent_per_check_code() {
    let mut c = Leader::default();
    assert_eq!(c.apply_id(2, "h:1;1").code, CONTROLLER_BROKER_ID_INVALID);
    assert_eq!(c.apply_id(1, "h:1;1").code, SUCCESS);
    let before = c.state.clone();
    // A retry after a crash, same check code: accepted, changes nothing.
    let r = c.apply_id(1, "h:1;1");
    assert_eq!(r.code, SUCCESS);
    assert_eq!(r.events.len(), 1);
    assert_eq!(c.state, before);
    assert_eq!(c.next_id(), 2);
    // Another broker asking for the taken id.
    let r = c.apply_id(1, "h:2;5");
    assert_eq!(r.code, CONTROLLER_BROKER_ID_INVALID);
    assert!(r.events.is_empty());
    assert_eq!(r.field(field::BROKER_NAME), Some(GROUP));
    assert_eq!(c.apply_id(0, "h:3;5").code, CONTROLLER_BROKER_ID_INVALID);
    // Registering before claiming an id, or electing an unknown group.
    assert_eq!(
        c.register(5, "h:5").code,
        CONTROLLER_BROKER_NEED_TO_BE_REGISTERED
    );
    assert_eq!(
        c.elect(Some(5), false).code,
        CONTROLLER_BROKER_NEED_TO_BE_REGISTERED
    );
    c.check_replay();
}

#[test]
fn clean_broker_data() {
    let mut c = two_replicas_in_sync();
    // Alive brokers, or the whole group while it has a master, are refused.
    assert_eq!(
        c.clean(Some("2"), false).code,
        CONTROLLER_INVALID_CLEAN_BROKER_METADATA
    );
    assert_eq!(
        c.clean(None, false).code,
        CONTROLLER_INVALID_CLEAN_BROKER_METADATA
    );
    assert_eq!(
        c.clean(Some(";"), false).code,
        CONTROLLER_INVALID_CLEAN_BROKER_METADATA
    );
    assert_eq!(
        c.clean(Some("2;x"), false).code,
        CONTROLLER_INVALID_CLEAN_BROKER_METADATA
    );

    c.live.set_dead(GROUP, 2);
    let r = c.clean(Some("2;"), false);
    assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
    let g = c.state.group(GROUP).unwrap();
    assert_eq!(g.replica_info.ids(), set(&[1]));
    assert_eq!(c.sync_state(), (Some(1), 1, 2, set(&[1])));

    let r =
        handlers::get_sync_state_data(&c.state, &c.live, &[GROUP.to_owned(), "nope".to_owned()]);
    let data: BrokerReplicasInfo = body::decode(r.body.as_ref().unwrap()).unwrap();
    assert_eq!(data.replicas_info_table.len(), 1);
    let entry = &data.replicas_info_table[GROUP];
    assert_eq!(entry.master_broker_id, Some(1));
    assert_eq!(entry.in_sync_replicas.len(), 1);
    assert!(entry.in_sync_replicas[0].alive);
    assert!(entry.not_in_sync_replicas.is_empty());

    assert_eq!(c.clean(None, true).code, SUCCESS);
    assert!(c.state.group(GROUP).is_none());
    assert_eq!(
        c.clean(None, true).code,
        CONTROLLER_INVALID_CLEAN_BROKER_METADATA
    );
    assert_eq!(c.next_id(), 1);
    c.check_replay();
}

#[test]
fn sync_state_data_body_has_rocketmq_field_names() {
    let c = two_replicas_in_sync();
    let r = handlers::get_sync_state_data(&c.state, &c.live, &[GROUP.to_owned()]);
    let text = String::from_utf8(r.body.unwrap()).unwrap();
    assert_eq!(
        text,
        concat!(
            r#"{"replicasInfoTable":{"broker-a":{"inSyncReplicas":["#,
            r#"{"alive":true,"brokerAddress":"10.0.0.1:10911","brokerId":1,"brokerName":"broker-a"},"#,
            r#"{"alive":true,"brokerAddress":"10.0.0.2:10911","brokerId":2,"brokerName":"broker-a"}],"#,
            r#""masterAddress":"10.0.0.1:10911","masterBrokerId":1,"masterEpoch":1,"#,
            r#""notInSyncReplicas":[],"syncStateSetEpoch":2}}}"#
        )
    );
}

#[test]
fn every_event_type_round_trips() {
    let events = [
        Event::AlterSyncStateSet(AlterSyncStateSetEvent {
            broker_name: GROUP.into(),
            new_sync_state_set: set(&[1, 2, 3]),
        }),
        Event::ApplyBrokerId(ApplyBrokerIdEvent {
            broker_address: "h:1".into(),
            broker_name: GROUP.into(),
            cluster_name: CLUSTER.into(),
            new_broker_id: 3,
            register_check_code: "h:1;17".into(),
        }),
        Event::ElectMaster(ElectMasterEvent::elected(GROUP, 3)),
        Event::ElectMaster(ElectMasterEvent::none_elected(GROUP)),
        Event::CleanBrokerData(CleanBrokerDataEvent {
            broker_id_set_to_clean: Some(set(&[1, 2])),
            broker_name: GROUP.into(),
        }),
        Event::CleanBrokerData(CleanBrokerDataEvent {
            broker_id_set_to_clean: None,
            broker_name: GROUP.into(),
        }),
        Event::UpdateBrokerAddress(UpdateBrokerAddressEvent {
            broker_address: "h:2".into(),
            broker_id: 3,
            broker_name: GROUP.into(),
            cluster_name: CLUSTER.into(),
        }),
    ];
    for event in events {
        let bytes = event.encode();
        assert_eq!(
            u16::from_be_bytes([bytes[0], bytes[1]]),
            event.event_type().id()
        );
        let json: serde_json::Value = serde_json::from_slice(&bytes[2..]).unwrap();
        assert_eq!(json["eventType"], event.event_type().java_name());
        assert_eq!(Event::decode(&bytes).unwrap(), event);
    }
}
