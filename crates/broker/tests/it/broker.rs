//! The broker: sends in both header spellings and both serialisations, batches, pulls that
//! return the stored records byte for byte, heartbeats as the C++ client writes them, offsets,
//! and bad input that is refused without harm.

use crate::wire::{batch_item, frame, records, Wire, JSON};
use crate::Servers;

const SEND_MESSAGE: i32 = 10;
const PULL_MESSAGE: i32 = 11;
const QUERY_CONSUMER_OFFSET: i32 = 14;
const UPDATE_CONSUMER_OFFSET: i32 = 15;
const GET_ALL_TOPIC_CONFIG: i32 = 21;
const GET_MAX_OFFSET: i32 = 30;
const HEART_BEAT: i32 = 34;
const GET_CONSUMER_LIST_BY_GROUP: i32 = 38;
const GET_ROUTEINFO_BY_TOPIC: i32 = 105;
const SEND_MESSAGE_V2: i32 = 310;
const SEND_BATCH_MESSAGE: i32 = 320;
const SUCCESS: i32 = 0;
const SYSTEM_ERROR: i32 = 1;
const REQUEST_CODE_NOT_SUPPORTED: i32 = 3;
const MESSAGE_ILLEGAL: i32 = 13;

fn props(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}\u{1}{v}\u{2}"))
        .collect()
}

/// SEND_MESSAGE_V2's one-letter header; `m` (batch) as the C++ client writes booleans.
pub fn v2_fields<'a>(
    topic: &'a str,
    queue: &'a str,
    props: &'a str,
    batch: &'a str,
) -> Vec<(&'a str, &'a str)> {
    vec![
        ("a", "raw-producer"),
        ("b", topic),
        ("c", "TBW102"),
        ("d", "4"),
        ("e", queue),
        ("f", "0"),
        ("g", "1700000000000"),
        ("h", "0"),
        ("i", props),
        ("j", "0"),
        ("k", "0"),
        ("m", batch),
    ]
}

pub fn pull(w: &mut Wire, topic: &str, queue: &str, offset: &str) -> crate::wire::Frame {
    w.call(
        PULL_MESSAGE,
        &[
            ("consumerGroup", "raw-group"),
            ("topic", topic),
            ("queueId", queue),
            ("queueOffset", offset),
            ("maxMsgNums", "32"),
            ("sysFlag", "4"), // SUBSCRIPTION: no registered consumer needed
            ("commitOffset", "0"),
            ("suspendTimeoutMillis", "0"),
            ("subscription", "*"),
            ("subVersion", "0"),
            ("expressionType", "TAG"),
        ],
        b"",
    )
}

#[test]
fn sends_in_both_spellings_and_pulls_the_records_back() {
    let servers = Servers::start();
    for serialize_type in [JSON, crate::wire::ROCKETMQ] {
        let mut w = Wire::connect(servers.broker_addr());
        w.serialize_type = serialize_type;
        let topic = format!("RawTopic{serialize_type}");
        let p = props(&[
            ("TAGS", "TagA"),
            ("KEYS", "k1"),
            ("UNIQ_KEY", "ID1"),
            ("WAIT", "true"),
        ]);
        // "0" for a boolean, as the C++ client writes it: Java reads it as false.
        let v2 = w.call(
            SEND_MESSAGE_V2,
            &v2_fields(&topic, "1", &p, "0"),
            b"first body",
        );
        assert_eq!(v2.code, SUCCESS, "{:?}", v2.remark);
        assert_eq!(v2.field("queueId"), "1");
        assert_eq!(v2.field("queueOffset"), "0");
        assert_eq!(
            v2.field("msgId").len(),
            32,
            "offset message id: 16 bytes in hex"
        );

        let v1 = w.call(
            SEND_MESSAGE,
            &[
                ("producerGroup", "raw-producer"),
                ("topic", &topic),
                ("defaultTopic", "TBW102"),
                ("defaultTopicQueueNums", "4"),
                ("queueId", "1"),
                ("sysFlag", "0"),
                ("bornTimestamp", "1700000000001"),
                ("flag", "7"),
                ("properties", &props(&[("TAGS", "TagB")])),
                ("reconsumeTimes", "0"),
                ("unitMode", "false"),
            ],
            b"second body",
        );
        assert_eq!(v1.code, SUCCESS, "{:?}", v1.remark);
        assert_eq!(v1.field("queueOffset"), "1");

        let got = pull(&mut w, &topic, "1", "0");
        assert_eq!(got.code, SUCCESS, "{:?}", got.remark);
        assert_eq!(got.field("nextBeginOffset"), "2");
        assert_eq!(got.field("maxOffset"), "2");
        let recs = records(&got.body);
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0].body, b"first body");
        assert_eq!(recs[1].body, b"second body");
        assert_eq!((recs[0].queue_offset, recs[1].queue_offset), (0, 1));
        assert_eq!(recs[0].topic, topic);
        assert!(recs[0].properties.contains("TAGS\u{1}TagA\u{2}"));
        assert!(recs[0].properties.contains("UNIQ_KEY\u{1}ID1\u{2}"));
        assert!(!recs[0].properties.contains("WAIT"), "WAIT is not stored");
        assert!(recs[0]
            .properties
            .contains("CLUSTER\u{1}DefaultCluster\u{2}"));

        let max = w.call(GET_MAX_OFFSET, &[("topic", &topic), ("queueId", "1")], b"");
        assert_eq!(max.field("offset"), "2");
    }
}

#[test]
fn batch_heartbeat_offsets_and_route() {
    let servers = Servers::start();
    let mut w = Wire::connect(servers.broker_addr());
    let mut body = Vec::new();
    for i in 0..3 {
        body.extend(batch_item(
            0,
            format!("b{i}").as_bytes(),
            &props(&[("UNIQ_KEY", &format!("U{i}"))]),
        ));
    }
    let batch = w.call(
        SEND_BATCH_MESSAGE,
        &v2_fields("RawBatch", "0", "", "true"),
        &body,
    );
    assert_eq!(batch.code, SUCCESS, "{:?}", batch.remark);
    assert_eq!(batch.field("msgId").split(',').count(), 3);
    let recs = records(&pull(&mut w, "RawBatch", "0", "0").body);
    let bodies: Vec<&[u8]> = recs.iter().map(|r| &r.body[..]).collect();
    assert_eq!(bodies, vec![&b"b0"[..], b"b1", b"b2"]);

    // A heartbeat as the C++ client writes it: enums as ordinals, numbers as strings.
    let heartbeat = br#"{"clientID":"127.0.0.1@cpp","consumerDataSet":[{"consumeFromWhere":4,
        "consumeType":1,"groupName":"cpp-group","messageModel":1,"subscriptionDataSet":[{
        "classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*",
        "subVersion":"1700000000000","tagsSet":[],"topic":"RawBatch"}],"unitMode":false}],
        "producerDataSet":[]}"#;
    let hb = w.call(HEART_BEAT, &[], heartbeat);
    assert_eq!(hb.code, SUCCESS, "{:?}", hb.remark);
    let members = w.call(
        GET_CONSUMER_LIST_BY_GROUP,
        &[("consumerGroup", "cpp-group")],
        b"",
    );
    assert_eq!(
        members.json()["consumerIdList"],
        serde_json::json!(["127.0.0.1@cpp"])
    );
    let topics = w.call(GET_ALL_TOPIC_CONFIG, &[], b"").json();
    assert!(
        topics["topicConfigTable"].get("%RETRY%cpp-group").is_some(),
        "the group's retry topic exists"
    );

    let q = [
        ("consumerGroup", "cpp-group"),
        ("topic", "RawBatch"),
        ("queueId", "0"),
    ];
    let update = [q.as_slice(), &[("commitOffset", "2")]].concat();
    assert_eq!(w.call(UPDATE_CONSUMER_OFFSET, &update, b"").code, SUCCESS);
    assert_eq!(w.call(QUERY_CONSUMER_OFFSET, &q, b"").field("offset"), "2");

    // The auto-created topic reaches the name server's routes.
    let mut ns = Wire::connect(servers.namesrv_addr());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let route = ns.call(GET_ROUTEINFO_BY_TOPIC, &[("topic", "RawBatch")], b"");
        if route.code == SUCCESS {
            let addr = route.json()["brokerDatas"][0]["brokerAddrs"]["0"].clone();
            assert_eq!(addr, serde_json::json!(servers.broker_addr().to_string()));
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no route for RawBatch"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn bad_input_is_refused_and_the_broker_keeps_serving() {
    let servers = Servers::start();
    let mut w = Wire::connect(servers.broker_addr());
    let mut missing = v2_fields("RawBad", "0", "", "false");
    missing.retain(|(k, _)| *k != "b");
    let resp = w.call(SEND_MESSAGE_V2, &missing, b"x");
    assert_eq!(resp.code, SYSTEM_ERROR);
    assert!(resp.remark.unwrap_or_default().contains("topic"));
    let bad_number = v2_fields("RawBad", "zero", "", "false");
    let resp = w.call(SEND_MESSAGE_V2, &bad_number, b"x");
    assert_eq!(resp.code, SYSTEM_ERROR);
    assert!(resp.remark.unwrap_or_default().contains("queueId"));
    let resp = w.call(
        SEND_MESSAGE_V2,
        &v2_fields("../evil", "0", "", "false"),
        b"x",
    );
    assert_ne!(resp.code, SUCCESS, "a topic is a directory name: refused");
    let resp = w.call(
        SEND_BATCH_MESSAGE,
        &v2_fields("RawBad", "0", "", "true"),
        b"\x00\x00\x00\x7fnot a batch",
    );
    assert_eq!(resp.code, MESSAGE_ILLEGAL);
    let resp = w.call(HEART_BEAT, &[], b"{\"clientID\":");
    assert_eq!(resp.code, SYSTEM_ERROR);
    assert_eq!(w.call(9999, &[], b"").code, REQUEST_CODE_NOT_SUPPORTED);

    // Framing lost: the connection closes; the broker serves new ones.
    let mut garbage = Wire::connect(servers.broker_addr());
    garbage.send_raw(&[0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
    assert!(
        garbage.closed_by_peer(),
        "a 2 GiB frame length closes the connection"
    );
    let mut lying = Wire::connect(servers.broker_addr());
    let mut bytes = frame(JSON, SEND_MESSAGE_V2, 1, 0, &[("a", "b")], b"");
    bytes[4..8].copy_from_slice(&(5000i32).to_be_bytes()); // header longer than the frame
    lying.send_raw(&bytes);
    assert!(lying.closed_by_peer());
    let ok = w.call(
        SEND_MESSAGE_V2,
        &v2_fields("RawBad", "0", "", "false"),
        b"still here",
    );
    assert_eq!(ok.code, SUCCESS, "{:?}", ok.remark);
}

#[test]
fn clients_silent_for_channel_expired_timeout_are_removed() {
    let servers = Servers::start_with(|namesrv| {
        vec![
            ("namesrvAddr", namesrv.to_string()),
            ("channelExpiredTimeout", "1000".into()),
        ]
    });
    let mut w = Wire::connect(servers.broker_addr());
    let heartbeat = br#"{"clientID":"127.0.0.1@short-lived","producerDataSet":[],
        "consumerDataSet":[{"groupName":"expiring","consumeType":"CONSUME_PASSIVELY",
        "messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",
        "subscriptionDataSet":[],"unitMode":false}]}"#;
    let members = |w: &mut Wire| {
        w.call(
            GET_CONSUMER_LIST_BY_GROUP,
            &[("consumerGroup", "expiring")],
            b"",
        )
        .code
    };
    assert_eq!(w.call(HEART_BEAT, &[], heartbeat).code, SUCCESS);
    servers.advance(800);
    // A heartbeat within the timeout keeps the member: 1600 ms after the first, 800 after it.
    assert_eq!(w.call(HEART_BEAT, &[], heartbeat).code, SUCCESS);
    servers.advance(800);
    assert_eq!(members(&mut w), SUCCESS, "heard from 800 ms ago: kept");
    // The connection stays open and silent: only expiry removes the member (and closes it).
    servers.advance(201);
    let mut other = Wire::connect(servers.broker_addr());
    assert_ne!(members(&mut other), SUCCESS, "silent for 1001 ms: removed");
}
