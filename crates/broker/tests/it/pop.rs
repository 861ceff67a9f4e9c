//! Pop consumption (RocketMQ 5.x's POP_MESSAGE, ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME)
//! with frames written as RocketMQ's proxy writes them: invisibility, acks, revival into the
//! pop retry topic, a restart in the middle, FIFO holds and long polling.

use std::time::{Duration, Instant};

use crate::wire::{records, Frame, Record, Wire};
use crate::Servers;

const SEND_MESSAGE_V2: i32 = 310;
const POP_MESSAGE: i32 = 200050;
const ACK_MESSAGE: i32 = 200051;
const CHANGE_MESSAGE_INVISIBLETIME: i32 = 200053;
const SUCCESS: i32 = 0;
const TOPIC_NOT_EXIST: i32 = 17;
const INVALID_PARAMETER: i32 = 29;
const POLLING_TIMEOUT: i32 = 210;

use rocketpy_broker::Clock;

/// Sends `body` to `queue` of `topic` (auto-created with `queues` queues).
fn send(w: &mut Wire, topic: &str, queues: &str, queue: &str, body: &[u8]) {
    let fields = [
        ("a", "pop-producer"),
        ("b", topic),
        ("c", "TBW102"),
        ("d", queues),
        ("e", queue),
        ("f", "0"),
        ("g", "1700000000000"),
        ("h", "0"),
        ("i", ""),
        ("j", "0"),
        ("k", "0"),
    ];
    let r = w.call(SEND_MESSAGE_V2, &fields, body);
    assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
}

struct Pop<'a> {
    /// The broker's clock: a pop's bornTime is read on it, as a client's clock agrees
    /// with its broker's.
    clock: Clock,
    group: &'a str,
    topic: &'a str,
    max: &'a str,
    invisible: &'a str,
    poll: &'a str,
    order: bool,
    attempt: Option<&'a str>,
}

impl<'a> Pop<'a> {
    fn new(clock: &Clock, group: &'a str, topic: &'a str) -> Self {
        Pop {
            clock: clock.clone(),
            group,
            topic,
            max: "32",
            invisible: "60000",
            poll: "0",
            order: false,
            attempt: None,
        }
    }

    fn call(&self, w: &mut Wire) -> Frame {
        let born = self.clock.now_millis().to_string();
        let mut fields = vec![
            ("consumerGroup", self.group),
            ("topic", self.topic),
            ("queueId", "-1"),
            ("maxMsgNums", self.max),
            ("invisibleTime", self.invisible),
            ("pollTime", self.poll),
            ("bornTime", born.as_str()),
            ("initMode", "0"),
            ("expType", "TAG"),
            ("exp", "*"),
            ("order", if self.order { "true" } else { "false" }),
        ];
        if let Some(a) = self.attempt {
            fields.push(("attemptId", a));
        }
        w.call(POP_MESSAGE, &fields, b"")
    }
}

/// The POP_CK of a popped message, built as a proxy builds it from the pop's header.
fn extra_info(pop: &Frame, queue: i32, offset: i64) -> String {
    let start = pop
        .field("startOffsetInfo")
        .split(';')
        .find_map(|e| {
            let p: Vec<&str> = e.split(' ').collect();
            (p[1] == queue.to_string()).then(|| p[2].to_owned())
        })
        .unwrap();
    format!(
        "{start} {} {} {} 0 broker-a {queue} {offset}",
        pop.field("popTime"),
        pop.field("invisibleTime"),
        pop.field("reviveQid")
    )
}

fn ack(w: &mut Wire, group: &str, topic: &str, queue: i32, offset: i64, extra: &str) -> Frame {
    let (q, o) = (queue.to_string(), offset.to_string());
    w.call(
        ACK_MESSAGE,
        &[
            ("consumerGroup", group),
            ("topic", topic),
            ("queueId", &q),
            ("extraInfo", extra),
            ("offset", &o),
        ],
        b"",
    )
}

fn prop<'a>(r: &'a Record, name: &str) -> Option<&'a str> {
    r.properties.split('\u{2}').find_map(|p| {
        let (k, v) = p.split_once('\u{1}')?;
        (k == name).then_some(v)
    })
}

/// Pops until something comes or `timeout` passes.
fn pop_within(w: &mut Wire, pop: &Pop<'_>, timeout: Duration) -> Frame {
    let deadline = Instant::now() + timeout;
    loop {
        let r = pop.call(w);
        if r.code == SUCCESS || Instant::now() > deadline {
            return r;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Pops revived messages (delivered once before) until `n` came or 15 s passed, acking each
/// in the group's pop retry topic; their bodies.
fn ack_revived(w: &mut Wire, pop: &Pop<'_>, n: usize) -> Vec<String> {
    let retry = format!("%RETRY%{}_{}", pop.group, pop.topic);
    let mut bodies = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(15);
    while bodies.len() < n && Instant::now() < deadline {
        for m in records(&pop.call(w).body) {
            assert_eq!(m.reconsume_times, 1);
            let ck = prop(&m, "POP_CK").unwrap().to_owned();
            let f: Vec<&str> = ck.split(' ').collect();
            let a = ack(w, pop.group, &retry, 0, f[7].parse().unwrap(), &ck);
            assert_eq!(a.code, SUCCESS);
            bodies.push(String::from_utf8(m.body).unwrap());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bodies
}

#[test]
fn popped_messages_stay_invisible_until_acked_or_revived() {
    let servers = Servers::start();
    let mut w = Wire::connect(servers.broker_addr());
    for i in 0..3 {
        send(&mut w, "PopT", "1", "0", format!("m{i}").as_bytes());
    }
    let first = Pop::new(&servers.clock, "pop-g", "PopT").call(&mut w);
    assert_eq!(first.code, SUCCESS, "{:?}", first.remark);
    let msgs = records(&first.body);
    assert_eq!(
        msgs.iter().map(|r| r.body.clone()).collect::<Vec<_>>(),
        vec![b"m0".to_vec(), b"m1".to_vec(), b"m2".to_vec()]
    );
    assert_eq!(first.field("startOffsetInfo"), "0 0 0");
    assert_eq!(first.field("msgOffsetInfo"), "0 0 0,1,2");
    assert_eq!(first.field("invisibleTime"), "60000");
    let revive_qid: i32 = first.field("reviveQid").parse().unwrap();
    assert!((0..8).contains(&revive_qid));

    let again = Pop::new(&servers.clock, "pop-g", "PopT").call(&mut w);
    assert_eq!(again.code, POLLING_TIMEOUT, "all invisible");
    let other = Pop::new(&servers.clock, "pop-other", "PopT").call(&mut w);
    assert_eq!(
        records(&other.body).len(),
        3,
        "another group has its own offsets"
    );

    for o in 0..2 {
        let r = ack(&mut w, "pop-g", "PopT", 0, o, &extra_info(&first, 0, o));
        assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
    }
    // The third comes back a second from now.
    let r = w.call(
        CHANGE_MESSAGE_INVISIBLETIME,
        &[
            ("consumerGroup", "pop-g"),
            ("topic", "PopT"),
            ("queueId", "0"),
            ("extraInfo", &extra_info(&first, 0, 2)),
            ("offset", "2"),
            ("invisibleTime", "1000"),
        ],
        b"",
    );
    assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
    assert_eq!(r.field("invisibleTime"), "1000");
    assert!(r.field("popTime").parse::<i64>().unwrap() >= first.field("popTime").parse().unwrap());

    servers.advance(1000);
    let revived = pop_within(
        &mut w,
        &Pop::new(&servers.clock, "pop-g", "PopT"),
        Duration::from_secs(10),
    );
    assert_eq!(revived.code, SUCCESS, "{:?}", revived.remark);
    let [m] = &records(&revived.body)[..] else {
        panic!("one revived message")
    };
    assert_eq!((m.body.as_slice(), m.topic.as_str()), (&b"m2"[..], "PopT"));
    assert_eq!(m.reconsume_times, 1);
    let ck = prop(m, "POP_CK").expect("a retried message carries its POP_CK");
    let f: Vec<&str> = ck.split(' ').collect();
    assert_eq!(
        (f[4], f[5]),
        ("1", "broker-a"),
        "read from the pop retry topic"
    );
    assert!(prop(m, "1ST_POP_TIME").is_some());
    let r = ack(
        &mut w,
        "pop-g",
        "%RETRY%pop-g_PopT",
        f[6].parse().unwrap(),
        f[7].parse().unwrap(),
        ck,
    );
    assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
    servers.advance(2500);
    assert_eq!(
        Pop::new(&servers.clock, "pop-g", "PopT").call(&mut w).code,
        POLLING_TIMEOUT,
        "acked messages never come back"
    );

    let mut too_many = Pop::new(&servers.clock, "pop-g", "PopT");
    too_many.max = "33";
    assert_eq!(too_many.call(&mut w).code, INVALID_PARAMETER);
    assert_eq!(
        Pop::new(&servers.clock, "pop-g", "NoSuchTopic")
            .call(&mut w)
            .code,
        TOPIC_NOT_EXIST
    );
}

#[test]
fn popped_messages_are_revived_after_a_restart() {
    let mut servers = Servers::start();
    let mut w = Wire::connect(servers.broker_addr());
    for i in 0..4 {
        send(&mut w, "PopRestart", "1", "0", format!("r{i}").as_bytes());
    }
    let mut pop = Pop::new(&servers.clock, "pop-rg", "PopRestart");
    pop.invisible = "2000";
    let first = pop.call(&mut w);
    assert_eq!(records(&first.body).len(), 4);
    let r = ack(
        &mut w,
        "pop-rg",
        "PopRestart",
        0,
        1,
        &extra_info(&first, 0, 1),
    );
    assert_eq!(r.code, SUCCESS);
    servers.restart_broker();
    let mut w = Wire::connect(servers.broker_addr());
    assert_eq!(
        pop.call(&mut w).code,
        POLLING_TIMEOUT,
        "still invisible after the restart"
    );
    servers.advance(2000);
    let mut bodies = ack_revived(&mut w, &pop, 3);
    bodies.sort();
    assert_eq!(bodies, ["r0", "r2", "r3"], "the un-acked ones, once each");
}

#[test]
fn fifo_pops_hold_a_queue_until_its_messages_are_acked() {
    let servers = Servers::start();
    let mut w = Wire::connect(servers.broker_addr());
    for i in 0..3 {
        send(&mut w, "PopFifo", "1", "0", format!("f{i}").as_bytes());
    }
    let mut pop = Pop::new(&servers.clock, "fifo-g", "PopFifo");
    pop.order = true;
    pop.max = "2";
    pop.invisible = "3000";
    pop.attempt = Some("attempt-1");
    let first = pop.call(&mut w);
    assert_eq!(first.code, SUCCESS, "{:?}", first.remark);
    assert_eq!(first.field("reviveQid"), "999");
    assert_eq!(first.field("orderCountInfo"), "0 0 0");
    let bodies = |f: &Frame| {
        records(&f.body)
            .into_iter()
            .map(|r| r.body)
            .collect::<Vec<_>>()
    };
    assert_eq!(bodies(&first), vec![b"f0".to_vec(), b"f1".to_vec()]);
    // A receive retried with the same attempt id gets the same messages, under a new pop
    // time: only its handles ack them (the first answer never reached that client).
    let first = pop.call(&mut w);
    assert_eq!(
        bodies(&first),
        vec![b"f0".to_vec(), b"f1".to_vec()],
        "the same again"
    );
    pop.attempt = Some("attempt-2");
    assert_eq!(
        pop.call(&mut w).code,
        POLLING_TIMEOUT,
        "held: f2 must wait for f0 and f1"
    );
    let r = ack(&mut w, "fifo-g", "PopFifo", 0, 0, &extra_info(&first, 0, 0));
    assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
    assert_eq!(
        pop.call(&mut w).code,
        POLLING_TIMEOUT,
        "f1 is still invisible"
    );
    // f1 was not acked: it comes first again, delivered once before.
    servers.advance(3000);
    let again = pop_within(&mut w, &pop, Duration::from_secs(10));
    assert_eq!(bodies(&again), vec![b"f1".to_vec(), b"f2".to_vec()]);
    assert_eq!(again.field("orderCountInfo"), "0 qo0%1 1;0 0 0");
    for o in [1, 2] {
        let r = ack(&mut w, "fifo-g", "PopFifo", 0, o, &extra_info(&again, 0, o));
        assert_eq!(r.code, SUCCESS);
    }
    pop.attempt = Some("attempt-3");
    assert_eq!(pop.call(&mut w).code, POLLING_TIMEOUT, "all consumed");
}

#[test]
fn a_pop_waits_for_messages_up_to_its_poll_time() {
    let servers = Servers::start();
    let addr = servers.broker_addr();
    let mut w = Wire::connect(addr);
    send(&mut w, "PopWait", "1", "0", b"first");
    let mut drain = Pop::new(&servers.clock, "wait-g", "PopWait");
    assert_eq!(records(&drain.call(&mut w).body).len(), 1);
    let sender = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(400));
        let mut w = Wire::connect(addr);
        send(&mut w, "PopWait", "1", "0", b"late");
    });
    drain.poll = "5000";
    let started = Instant::now();
    let r = drain.call(&mut w);
    sender.join().unwrap();
    assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
    assert_eq!(records(&r.body)[0].body, b"late");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "woken by the arrival"
    );
    drain.poll = "300";
    let started = Instant::now();
    assert_eq!(drain.call(&mut w).code, POLLING_TIMEOUT);
    assert!(started.elapsed() >= Duration::from_millis(250));
}

#[test]
fn batch_acks_end_several_messages_of_a_pop_and_survive_a_restart() {
    const BATCH_ACK_MESSAGE: i32 = 200151;
    const NO_MESSAGE: i32 = 208;
    let mut servers = Servers::start();
    let mut w = Wire::connect(servers.broker_addr());
    for i in 0..5 {
        send(&mut w, "PopBatch", "1", "0", format!("b{i}").as_bytes());
    }
    let mut pop = Pop::new(&servers.clock, "pop-bg", "PopBatch");
    pop.invisible = "2000";
    let first = pop.call(&mut w);
    assert_eq!(records(&first.body).len(), 5);
    // As RocketMQ's client writes it: offsets 0, 1 and 3 of the pop starting at 0 are the
    // bits of 0b1011 (base64 "Cw=="); an entry for a topic the broker lacks is skipped.
    let body = format!(
        r#"{{"acks":[{{"b":"Cw==","c":"pop-bg","it":2000,"pt":{},"q":0,"r":"0","rq":{},"so":0,"t":"PopBatch"}},{{"b":"AQ==","c":"pop-bg","it":2000,"pt":1,"q":0,"r":"0","rq":0,"so":0,"t":"NoSuchTopic"}}],"brokerName":"broker-a"}}"#,
        first.field("popTime"),
        first.field("reviveQid"),
    );
    let r = w.call(BATCH_ACK_MESSAGE, &[], body.as_bytes());
    assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
    assert_eq!(w.call(BATCH_ACK_MESSAGE, &[], b"").code, NO_MESSAGE);
    assert_ne!(
        w.call(BATCH_ACK_MESSAGE, &[], b"{\"acks\":[{\"b\":\"?\"}]}")
            .code,
        SUCCESS,
        "an unreadable body is refused"
    );
    // The batch ack record is read again at start: only b2 and b4 come back.
    servers.restart_broker();
    let mut w = Wire::connect(servers.broker_addr());
    servers.advance(2000);
    let mut bodies = ack_revived(&mut w, &pop, 2);
    servers.advance(2500);
    for m in records(&pop.call(&mut w).body) {
        bodies.push(String::from_utf8(m.body).unwrap());
    }
    bodies.sort();
    assert_eq!(
        bodies,
        ["b2", "b4"],
        "the ones not in the batch ack, once each"
    );
}
