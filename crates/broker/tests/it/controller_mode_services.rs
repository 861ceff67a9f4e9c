//! The services a master runs besides taking writes — timer delivery and pop revival — move
//! with the master role in controller mode: a message held by the timer of a master that went
//! away is delivered by the replica that took over, and a message popped from the old master
//! and never acked comes back from the new one. Both brokers share one manual clock, moved
//! past the due times after the failover; the brokers' own loops do the work.

use rocketpy_broker::Clock;

use crate::broker::pull;
use crate::controller_mode::{broker_on, cluster, role_id, runtime, sync_state_set_len, wait_for};
use crate::wire::{records, Wire};

const POP_MESSAGE: i32 = 200050;
const SUCCESS: i32 = 0;

fn send(w: &mut Wire, topic: &str, body: &[u8], props: &[(&str, &str)]) {
    assert_eq!(crate::timer::send(w, topic, body, props), SUCCESS);
}

fn pop(w: &mut Wire, clock: &Clock, topic: &str) -> crate::wire::Frame {
    let born = clock.now_millis().to_string();
    w.call(
        POP_MESSAGE,
        &[
            ("consumerGroup", "services-group"),
            ("topic", topic),
            ("queueId", "-1"),
            ("maxMsgNums", "32"),
            ("invisibleTime", "60000"),
            ("pollTime", "0"),
            ("bornTime", &born),
            ("initMode", "0"),
            ("expType", "TAG"),
            ("exp", "*"),
            ("order", "false"),
        ],
        b"",
    )
}

fn bodies(w: &mut Wire, topic: &str) -> Vec<Vec<u8>> {
    let r = pull(w, topic, "0", "0");
    match r.code {
        SUCCESS => records(&r.body).into_iter().map(|r| r.body).collect(),
        _ => Vec::new(),
    }
}

#[test]
fn the_new_master_delivers_timer_messages_and_revives_pops_of_the_old_one() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (namesrv, controller, naddr, caddr) = cluster(&rt, dir.path());
    let clock = Clock::manual(Clock::system().now_millis());
    let start = |name: &str| {
        let store = dir.path().join(name);
        broker_on(&rt, &store, &naddr, &caddr, &[], clock.clone())
    };
    let a = start("a");
    wait_for("a to be master", || role_id(&a) == Some(0));
    let b = start("b");
    wait_for("b in the SyncStateSet", || sync_state_set_len(&a) == 2);

    let mut w = Wire::connect(a.broker_addr().parse().unwrap());
    send(&mut w, "Jobs", b"popped", &[]);
    let at = (clock.now_millis() + 60_000).to_string();
    send(&mut w, "Jobs", b"timed", &[("TIMER_DELIVER_MS", &at)]);
    let r = pop(&mut w, &clock, "Jobs");
    assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
    assert_eq!(records(&r.body).len(), 1);
    wait_for("a's timer to hold the message", || {
        a.inner().timer.pending() == 1
    });
    let end = a.inner().store.commit_log_range().1;
    wait_for("b to have a's checkpoint and timer message", || {
        b.inner().store.commit_log_range().1 >= end
    });
    assert_eq!(
        b.inner().pop.checkpoint_count(),
        0,
        "a replica revives nothing"
    );

    rt.block_on(a.shutdown()).unwrap();
    drop(a);
    wait_for("b to become master", || role_id(&b) == Some(0));
    assert_eq!(
        b.inner().pop.checkpoint_count(),
        1,
        "the new master replayed the revive log"
    );
    clock.advance(61_000);
    let mut w = Wire::connect(b.broker_addr().parse().unwrap());
    wait_for("the timer message in its topic", || {
        bodies(&mut w, "Jobs").iter().any(|m| m == b"timed")
    });
    wait_for("the popped message revived", || {
        bodies(&mut w, "%RETRY%services-group_Jobs") == [b"popped".to_vec()]
    });
    let timed = bodies(&mut w, "Jobs");
    assert_eq!(timed.iter().filter(|m| *m == b"timed").count(), 1, "once");
    assert_eq!(b.inner().timer.pending(), 0);

    rt.block_on(b.shutdown()).unwrap();
    rt.block_on(controller.shutdown());
    rt.block_on(namesrv.shutdown());
}
