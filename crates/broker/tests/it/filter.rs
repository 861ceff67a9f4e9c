//! SQL92 subscriptions as RocketMQ's broker treats them: refused with
//! `enablePropertyFilter=false` (never served unfiltered, never read as a tag); with it on,
//! filtered on each message's properties in PULL (the request's expression, or the group's
//! from its heartbeats with their version) and in POP; an expression that does not compile
//! refused naming where.

use rocketpy_protocol::message::record::decode_all;

use crate::broker::v2_fields;
use crate::wire::{Frame, Wire};
use crate::Servers;

const PULL_MESSAGE: i32 = 11;
const HEART_BEAT: i32 = 34;
const POP_MESSAGE: i32 = 200050;
const CHECK_CLIENT_CONFIG: i32 = 46;
const SEND_MESSAGE_V2: i32 = 310;
const SUCCESS: i32 = 0;
const SYSTEM_ERROR: i32 = 1;
const SUBSCRIPTION_PARSE_FAILED: i32 = 23;
const FILTER_DATA_NOT_EXIST: i32 = 27;
const FILTER_DATA_NOT_LATEST: i32 = 28;
const POLLING_TIMEOUT: i32 = 210;
const REFUSED: &str = "The broker does not support consumer to filter message by SQL92";
/// PULL's sysFlag with the SUBSCRIPTION bit (the expression travels in the request).
const WITH_SUBSCRIPTION: &str = "4";

fn pull(w: &mut Wire, group: &str, sys_flag: &str, expr: &str, ty: &str, version: i64) -> Frame {
    w.call(
        PULL_MESSAGE,
        &[
            ("consumerGroup", group),
            ("topic", "SqlTopic"),
            ("queueId", "0"),
            ("queueOffset", "0"),
            ("maxMsgNums", "32"),
            ("sysFlag", sys_flag),
            ("commitOffset", "0"),
            ("suspendTimeoutMillis", "0"),
            ("subscription", expr),
            ("subVersion", &version.to_string()),
            ("expressionType", ty),
        ],
        b"",
    )
}

fn pop(w: &mut Wire, servers: &Servers, group: &str, expr: &str) -> Frame {
    w.call(
        POP_MESSAGE,
        &[
            ("consumerGroup", group),
            ("topic", "SqlTopic"),
            ("queueId", "-1"),
            ("maxMsgNums", "32"),
            ("invisibleTime", "60000"),
            ("pollTime", "0"),
            ("bornTime", &servers.clock.now_millis().to_string()),
            ("initMode", "0"),
            ("expType", "SQL92"),
            ("exp", expr),
        ],
        b"",
    )
}

/// CHECK_CLIENT_CONFIG of a subscription (as RocketMQ's Java client sends it at start).
fn check(w: &mut Wire, expr: &str, ty: &str) -> Frame {
    let body = format!(
        r#"{{"clientId":"127.0.0.1@c","group":"g","subscriptionData":{{"topic":"SqlTopic",
        "subString":"{expr}","expressionType":"{ty}","tagsSet":[],"codeSet":[],"subVersion":1,
        "classFilterMode":false}}}}"#
    );
    w.call(CHECK_CLIENT_CONFIG, &[], body.as_bytes())
}

fn heartbeat(w: &mut Wire, group: &str, expr: &str, version: i64) {
    let body = format!(
        r#"{{"clientID":"127.0.0.1@{group}","producerDataSet":[],"consumerDataSet":[{{
        "groupName":"{group}","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING",
        "consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","unitMode":false,"subscriptionDataSet":[{{
        "topic":"SqlTopic","subString":"{expr}","expressionType":"SQL92","tagsSet":[],
        "codeSet":[],"subVersion":{version},"classFilterMode":false}}]}}]}}"#
    );
    assert_eq!(w.call(HEART_BEAT, &[], body.as_bytes()).code, SUCCESS);
}

/// Ten messages in queue 0, `a` = 0..9, tags A for even and B for odd `a`.
fn send_ten(w: &mut Wire) {
    for a in 0..10 {
        let tag = if a % 2 == 0 { "A" } else { "B" };
        let props = format!("a\u{1}{a}\u{2}TAGS\u{1}{tag}\u{2}UNIQ_KEY\u{1}U{a}\u{2}");
        let send = v2_fields("SqlTopic", "0", &props, "false");
        assert_eq!(w.call(SEND_MESSAGE_V2, &send, b"m").code, SUCCESS);
    }
}

/// The `a` values of an answer's messages.
fn values(f: &Frame) -> Vec<String> {
    assert_eq!(f.code, SUCCESS, "{:?}", f.remark);
    decode_all(&f.body)
        .unwrap()
        .iter()
        .map(|v| {
            rocketpy_protocol::message::properties::find(v.properties, "a")
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[test]
fn sql92_is_refused_when_the_broker_does_not_filter_by_properties() {
    let servers = Servers::start();
    let mut w = Wire::connect(servers.broker_addr());
    send_ten(&mut w);
    let g = "sql-off";
    let refused = pull(&mut w, g, WITH_SUBSCRIPTION, "a > 5", "SQL92", 0);
    assert_eq!(
        (refused.code, refused.remark.as_deref()),
        (SYSTEM_ERROR, Some(REFUSED))
    );
    // The same text as a tag expression is a tag ("a > 5"): nothing matches it.
    assert_ne!(
        pull(&mut w, g, WITH_SUBSCRIPTION, "a > 5", "TAG", 0).code,
        SYSTEM_ERROR
    );
    // The expression registered by a heartbeat.
    heartbeat(&mut w, g, "a > 5", 1);
    let refused = pull(&mut w, g, "0", "", "SQL92", 1);
    assert_eq!(
        (refused.code, refused.remark.as_deref()),
        (SYSTEM_ERROR, Some(REFUSED))
    );
    // POP (what the 5.x proxy sends for a FilterExpression of type SQL).
    let refused = pop(&mut w, &servers, "sql-off-pop", "a > 5");
    assert_eq!(
        (refused.code, refused.remark.as_deref()),
        (SYSTEM_ERROR, Some(REFUSED))
    );
}

#[test]
fn sql92_filters_pull_and_pop_by_properties() {
    let servers = Servers::start_with(|namesrv| {
        vec![
            ("namesrvAddr", namesrv.to_string()),
            ("enablePropertyFilter", "true".into()),
        ]
    });
    let mut w = Wire::connect(servers.broker_addr());
    send_ten(&mut w);

    // The request's expression; TAGS is a property like the others.
    let got = pull(&mut w, "g1", WITH_SUBSCRIPTION, "a > 5", "SQL92", 0);
    assert_eq!(values(&got), ["6", "7", "8", "9"]);
    let got = pull(
        &mut w,
        "g1",
        WITH_SUBSCRIPTION,
        "TAGS = 'B' AND a BETWEEN 2 AND 7",
        "SQL92",
        0,
    );
    assert_eq!(values(&got), ["3", "5", "7"]);
    // Nothing matches: the queue is scanned and the pull says where to go on from.
    let none = pull(&mut w, "g1", WITH_SUBSCRIPTION, "a > 100", "SQL92", 0);
    assert_ne!(none.code, SUCCESS);
    assert_eq!(
        none.fields.get("nextBeginOffset").map(String::as_str),
        Some("10")
    );

    // An expression that does not compile: refused with where.
    let bad = pull(&mut w, "g1", WITH_SUBSCRIPTION, "a > ", "SQL92", 0);
    assert_eq!(bad.code, SUBSCRIPTION_PARSE_FAILED);
    assert!(
        bad.remark.as_deref().unwrap().contains("character"),
        "{:?}",
        bad.remark
    );

    // A client's check at start: served, or not compiled (with where).
    assert_eq!(check(&mut w, "a > 5", "SQL92").code, SUCCESS);
    let bad = check(&mut w, "a > ", "SQL92");
    assert_eq!(bad.code, SUBSCRIPTION_PARSE_FAILED);
    assert!(bad.remark.unwrap().contains("character"));

    // The group's expression from its heartbeats, by version.
    heartbeat(&mut w, "g2", "a < 3", 5);
    assert_eq!(
        values(&pull(&mut w, "g2", "0", "", "SQL92", 5)),
        ["0", "1", "2"]
    );
    let stale = pull(&mut w, "g2", "0", "", "SQL92", 6);
    assert_eq!(stale.code, FILTER_DATA_NOT_LATEST, "{:?}", stale.remark);
    heartbeat(&mut w, "g2", "a = 4", 6);
    assert_eq!(values(&pull(&mut w, "g2", "0", "", "SQL92", 6)), ["4"]);
    // A heartbeat whose expression does not compile leaves no filter to serve.
    heartbeat(&mut w, "g3", "a >", 1);
    let missing = pull(&mut w, "g3", "0", "", "SQL92", 1);
    assert_eq!(missing.code, FILTER_DATA_NOT_EXIST, "{:?}", missing.remark);

    // POP: only matching messages are popped; a bad expression is refused.
    assert_eq!(
        values(&pop(&mut w, &servers, "p1", "a IN ('1', '8')")),
        ["1", "8"]
    );
    let again = pop(&mut w, &servers, "p1", "a IN ('1', '8')");
    assert_eq!(
        again.code, POLLING_TIMEOUT,
        "the group is past the filtered-out messages"
    );
    let bad = pop(&mut w, &servers, "p2", "a IN (");
    assert_eq!(bad.code, SUBSCRIPTION_PARSE_FAILED, "{:?}", bad.remark);
}

/// The bloom-filter bit map of the seed: with `enableCalcFilterBitMap` and
/// `enableConsumeQueueExt`, a group's registered SQL92 filter rules messages out by their
/// consume-queue ext units, so a pull reads only the matching records from the CommitLog —
/// before and after a restart (the filters kept in consumerFilter.json, the ext files
/// recovered).
#[test]
fn the_bit_map_skips_messages_without_reading_them_through_a_restart() {
    use rocketpy_broker::filter::ExpressionFilter;

    let mut servers = Servers::start_with(|namesrv| {
        vec![
            ("namesrvAddr", namesrv.to_string()),
            ("enablePropertyFilter", "true".into()),
            ("enableCalcFilterBitMap", "true".into()),
            ("enableConsumeQueueExt", "true".into()),
            ("mappedFileSizeConsumeQueueExt", "4096".into()),
        ]
    });
    let mut w = Wire::connect(servers.broker_addr());
    heartbeat(&mut w, "bits", "a = 3 OR a = 13", 1);
    let send = |w: &mut Wire, range: std::ops::Range<i32>| {
        for a in range {
            let props = format!("a\u{1}{a}\u{2}UNIQ_KEY\u{1}B{a}\u{2}");
            let fields = v2_fields("SqlTopic", "0", &props, "false");
            assert_eq!(w.call(SEND_MESSAGE_V2, &fields, b"bit-map").code, SUCCESS);
        }
    };
    send(&mut w, 0..200);
    // What the store read for the group's filter: only the matching records.
    let read = |servers: &Servers, from: i64| {
        let inner = servers.broker.as_ref().unwrap().inner();
        let data = inner.filters.get("SqlTopic", "bits").expect("registered");
        let filter = ExpressionFilter::registered(&inner.filters, data);
        let got = inner
            .store
            .get_message("SqlTopic", 0, from, 32, Some(&filter));
        let values: Vec<String> = got
            .messages
            .iter()
            .map(
                |m| match rocketpy_protocol::message::record::decode(m, false).unwrap() {
                    rocketpy_protocol::message::record::Decoded::Message(v) => {
                        rocketpy_protocol::message::properties::find(v.properties, "a")
                            .unwrap()
                            .to_owned()
                    }
                    _ => unreachable!(),
                },
            )
            .collect();
        (
            values,
            got.total_bytes,
            got.commit_log_bytes_read,
            got.next_begin_offset,
        )
    };
    let (got, kept, read_bytes, next) = read(&servers, 0);
    assert_eq!(got, ["3", "13"]);
    assert_eq!(
        read_bytes, kept,
        "no other record was read from the CommitLog"
    );
    assert_eq!(next, 200);
    // The same expression without registered bits reads every record to judge it.
    let inner = servers.broker.as_ref().unwrap().inner();
    let unregistered = ExpressionFilter::compile(
        &inner.filters,
        ("SqlTopic", "no-heartbeat"),
        "a = 3 OR a = 13",
        Some("SQL92"),
    )
    .unwrap();
    let all = inner
        .store
        .get_message("SqlTopic", 0, 0, 32, Some(&unregistered));
    assert_eq!(all.messages.len(), 2);
    assert!(
        all.commit_log_bytes_read >= 90 * all.total_bytes,
        "all 200 records read"
    );
    // The wire agrees (the group's subscription from its heartbeat).
    assert_eq!(
        values(&pull(&mut w, "bits", "0", "", "SQL92", 1)),
        ["3", "13"]
    );
    // Ext files exist, sparse and only where units were written.
    let inner = servers.broker.as_ref().unwrap().inner();
    let store_dir = inner.settings.store.store_path_root_dir.clone();
    let ext_dir = store_dir.join("consumequeue_ext/SqlTopic/0");
    assert!(
        ext_dir.join("00000000000000000000").exists(),
        "{}",
        ext_dir.display()
    );

    servers.restart_broker();
    let mut w = Wire::connect(servers.broker_addr());
    // Before the group's heartbeat: its filter came back from consumerFilter.json (dead, as
    // RocketMQ loads them), the ext units from their files; new messages get bit maps too.
    send(&mut w, 200..220);
    let (got, kept, read_bytes, _) = read(&servers, 0);
    assert_eq!(got, ["3", "13"]);
    assert_eq!(read_bytes, kept, "the bit maps still rule the others out");
    let (got, kept, read_bytes, _) = read(&servers, 200);
    assert_eq!(
        (got.len(), read_bytes),
        (0, kept),
        "dispatched after the restart"
    );
    // The request's own expression (SUBSCRIPTION flag) is the registered filter: served too.
    let got = pull(
        &mut w,
        "bits",
        WITH_SUBSCRIPTION,
        "a = 3 OR a = 13",
        "SQL92",
        1,
    );
    assert_eq!(values(&got), ["3", "13"]);
}
