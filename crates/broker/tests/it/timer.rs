//! Timer messages (RocketMQ 5.x's TIMER_DELIVER_MS / TIMER_DELAY_SEC): held in the timer
//! topic until their time, then delivered to their topic once — also across a restart.

use std::time::{Duration, Instant};

use crate::broker::pull;
use crate::wire::{records, Record, Wire};
use crate::Servers;

const SEND_MESSAGE_V2: i32 = 310;
const SUCCESS: i32 = 0;
const MESSAGE_ILLEGAL: i32 = 13;

/// Sends `body` with `props` to queue 0 of `topic` (auto-created); the answer's code.
pub(crate) fn send(w: &mut Wire, topic: &str, body: &[u8], props: &[(&str, &str)]) -> i32 {
    let props: String = props
        .iter()
        .map(|(k, v)| format!("{k}\u{1}{v}\u{2}"))
        .collect();
    let fields = [
        ("a", "timer-producer"),
        ("b", topic),
        ("c", "TBW102"),
        ("d", "1"),
        ("e", "0"),
        ("f", "0"),
        ("g", "1700000000000"),
        ("h", "0"),
        ("i", props.as_str()),
        ("j", "0"),
        ("k", "0"),
    ];
    w.call(SEND_MESSAGE_V2, &fields, body).code
}

fn stored(w: &mut Wire, topic: &str) -> Vec<Record> {
    let r = pull(w, topic, "0", "0");
    if r.code == SUCCESS {
        records(&r.body)
    } else {
        Vec::new()
    }
}

fn prop<'a>(r: &'a Record, name: &str) -> Option<&'a str> {
    r.properties.split('\u{2}').find_map(|p| {
        let (k, v) = p.split_once('\u{1}')?;
        (k == name).then_some(v)
    })
}

fn wait_for(w: &mut Wire, topic: &str, n: usize, timeout: Duration) -> Vec<Record> {
    let deadline = Instant::now() + timeout;
    loop {
        let got = stored(w, topic);
        if got.len() >= n || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn timer_messages_arrive_at_their_time_once() {
    let servers = Servers::start();
    let mut w = Wire::connect(servers.broker_addr());
    assert_eq!(send(&mut w, "TimerT", b"now", &[]), SUCCESS);
    let at = (servers.clock.now_millis() + 1500).to_string();
    assert_eq!(
        send(
            &mut w,
            "TimerT",
            b"at",
            &[("TIMER_DELIVER_MS", &at), ("UNIQ_KEY", "u-at")]
        ),
        SUCCESS
    );
    assert_eq!(
        send(
            &mut w,
            "TimerT",
            b"in",
            &[("TIMER_DELAY_SEC", "1"), ("UNIQ_KEY", "u-in")]
        ),
        SUCCESS
    );
    let past = (servers.clock.now_millis() - 5000).to_string();
    assert_eq!(
        send(&mut w, "TimerT", b"past", &[("TIMER_DELIVER_MS", &past)]),
        SUCCESS
    );
    let bodies = |rs: &[Record]| rs.iter().map(|r| r.body.clone()).collect::<Vec<_>>();
    assert_eq!(
        bodies(&stored(&mut w, "TimerT")),
        vec![b"now".to_vec(), b"past".to_vec()],
        "a time in the past is delivered at once; the others wait"
    );
    servers.advance(999);
    assert_eq!(
        stored(&mut w, "TimerT").len(),
        2,
        "not before its time (1 s and 1.5 s from the send)"
    );
    servers.advance(501);
    let got = wait_for(&mut w, "TimerT", 4, Duration::from_secs(10));
    assert_eq!(
        bodies(&got),
        vec![
            b"now".to_vec(),
            b"past".to_vec(),
            b"in".to_vec(),
            b"at".to_vec()
        ]
    );
    let at_msg = &got[3];
    assert_eq!(prop(at_msg, "TIMER_OUT_MS"), Some(at.as_str()));
    assert!(
        prop(at_msg, "TIMER_ENQUEUE_MS").is_some() && prop(at_msg, "TIMER_DEQUEUE_MS").is_some()
    );
    assert!(prop(at_msg, "REAL_TOPIC").is_none() && prop(at_msg, "REAL_QID").is_none());
    servers.advance(500);
    assert_eq!(stored(&mut w, "TimerT").len(), 4, "delivered once");

    let too_far = (servers.clock.now_millis() + 4 * 86_400_000).to_string();
    assert_eq!(
        send(&mut w, "TimerT", b"far", &[("TIMER_DELIVER_MS", &too_far)]),
        MESSAGE_ILLEGAL
    );
    assert_eq!(
        send(&mut w, "TimerT", b"bad", &[("TIMER_DELAY_SEC", "soon")]),
        MESSAGE_ILLEGAL
    );
}

#[test]
fn timer_messages_survive_a_restart_and_are_not_delivered_twice() {
    let mut servers = Servers::start();
    let mut w = Wire::connect(servers.broker_addr());
    let soon = (servers.clock.now_millis() + 800).to_string();
    let later = (servers.clock.now_millis() + 2500).to_string();
    assert_eq!(
        send(
            &mut w,
            "TimerR",
            b"soon",
            &[("TIMER_DELIVER_MS", &soon), ("UNIQ_KEY", "r-soon")]
        ),
        SUCCESS
    );
    assert_eq!(
        send(
            &mut w,
            "TimerR",
            b"later",
            &[("TIMER_DELIVER_MS", &later), ("UNIQ_KEY", "r-later")]
        ),
        SUCCESS
    );
    servers.advance(800);
    assert_eq!(
        wait_for(&mut w, "TimerR", 1, Duration::from_secs(10)).len(),
        1
    );
    // As a crash would leave it: the timer's saved progress from before "soon" was delivered.
    servers.restart_broker_after(|store| {
        let path = store.join("config").join("consumerOffset.json");
        let mut offsets: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        offsets["offsetTable"]["rmq_sys_wheel_timer@CID_RMQ_SYS_TIMER"]["0"] = 0.into();
        std::fs::write(&path, serde_json::to_vec(&offsets).unwrap()).unwrap();
    });
    let mut w = Wire::connect(servers.broker_addr());
    servers.advance(1700);
    let got = wait_for(&mut w, "TimerR", 2, Duration::from_secs(10));
    servers.advance(600);
    let got_after = stored(&mut w, "TimerR");
    assert_eq!(got.len(), 2);
    assert_eq!(
        got_after.iter().map(|r| r.body.clone()).collect::<Vec<_>>(),
        vec![b"soon".to_vec(), b"later".to_vec()],
        "the one delivered before the crash is found in the index, not delivered again"
    );
}
