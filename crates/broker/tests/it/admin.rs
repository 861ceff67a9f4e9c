//! mqadmin's requests, written as the Java admin writes them: topic and consume statistics in
//! fastjson's shape (maps keyed by a MessageQueue object), connections, an offset reset that
//! reaches the group's member, topic deletion, and the name server's write-permission switches.

use crate::wire::Wire;
use crate::Servers;

const UPDATE_CONSUMER_OFFSET: i32 = 15;
const GET_MAX_OFFSET: i32 = 30;
const HEART_BEAT: i32 = 34;
const NOTIFY_CONSUMER_IDS_CHANGED: i32 = 40;
const GET_ROUTEINFO_BY_TOPIC: i32 = 105;
const GET_TOPIC_STATS_INFO: i32 = 202;
const GET_CONSUMER_CONNECTION_LIST: i32 = 203;
const WIPE_WRITE_PERM_OF_BROKER: i32 = 205;
const GET_CONSUME_STATS: i32 = 208;
const DELETE_TOPIC_IN_BROKER: i32 = 215;
const RESET_CONSUMER_CLIENT_OFFSET: i32 = 220;
const INVOKE_BROKER_TO_RESET_OFFSET: i32 = 222;
const GET_BROKER_RUNTIME_INFO: i32 = 28;
const SEND_MESSAGE_V2: i32 = 310;
const ADD_WRITE_PERM_OF_BROKER: i32 = 327;
const SUCCESS: i32 = 0;
const TOPIC_NOT_EXIST: i32 = 17;

fn send(w: &mut Wire, topic: &str, queue: &str) {
    let fields = [
        ("a", "adm-producer"),
        ("b", topic),
        ("c", "TBW102"),
        ("d", "2"),
        ("e", queue),
        ("f", "0"),
        ("g", "1700000000000"),
        ("h", "0"),
        ("i", ""),
        ("j", "0"),
        ("k", "0"),
    ];
    let r = w.call(SEND_MESSAGE_V2, &fields, b"body");
    assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
}

/// The value of the entry whose fastjson object key is queue `q` of `topic`.
fn mq_entry<'a>(body: &'a str, topic: &str, q: i32) -> &'a str {
    let key = format!(r#"{{"brokerName":"broker-a","queueId":{q},"topic":"{topic}"}}:"#);
    let at = body
        .find(&key)
        .unwrap_or_else(|| panic!("no {key} in {body}"));
    let rest = &body[at + key.len()..];
    &rest[..=rest.find('}').unwrap()]
}

#[test]
fn statistics_connections_reset_and_deletion() {
    let servers = Servers::start();
    let mut member = Wire::connect(servers.broker_addr());
    let mut admin = Wire::connect(servers.broker_addr());
    for _ in 0..3 {
        send(&mut admin, "AdmRaw", "0");
    }
    let stats = admin.call(GET_TOPIC_STATS_INFO, &[("topic", "AdmRaw")], b"");
    assert_eq!(stats.code, SUCCESS);
    let text = String::from_utf8(stats.body).unwrap();
    let q0: serde_json::Value = serde_json::from_str(mq_entry(&text, "AdmRaw", 0)).unwrap();
    assert_eq!(
        (q0["minOffset"].as_i64(), q0["maxOffset"].as_i64()),
        (Some(0), Some(3))
    );
    assert!(q0["lastUpdateTimestamp"].as_i64().unwrap() > 0);
    assert!(text.contains(r#""queueId":1,"topic":"AdmRaw"}:{"minOffset":0,"maxOffset":0"#));
    let missing = admin.call(GET_TOPIC_STATS_INFO, &[("topic", "NoSuch")], b"");
    assert_eq!(missing.code, TOPIC_NOT_EXIST);

    let heartbeat = br#"{"clientID":"127.0.0.1@adm","consumerDataSet":[{"consumeFromWhere":
        "CONSUME_FROM_FIRST_OFFSET","consumeType":"CONSUME_PASSIVELY","groupName":"adm-group",
        "messageModel":"CLUSTERING","subscriptionDataSet":[{"classFilterMode":false,"codeSet":[],
        "expressionType":"TAG","subString":"*","subVersion":1,"tagsSet":[],"topic":"AdmRaw"}],
        "unitMode":false}],"producerDataSet":[]}"#;
    assert_eq!(member.call(HEART_BEAT, &[], heartbeat).code, SUCCESS);
    for q in ["0", "1"] {
        let commit = [
            ("consumerGroup", "adm-group"),
            ("topic", "AdmRaw"),
            ("queueId", q),
            ("commitOffset", if q == "0" { "1" } else { "0" }),
        ];
        assert_eq!(
            admin.call(UPDATE_CONSUMER_OFFSET, &commit, b"").code,
            SUCCESS
        );
    }
    let consume = admin.call(GET_CONSUME_STATS, &[("consumerGroup", "adm-group")], b"");
    assert_eq!(consume.code, SUCCESS, "{:?}", consume.remark);
    let text = String::from_utf8(consume.body).unwrap();
    let q0: serde_json::Value = serde_json::from_str(mq_entry(&text, "AdmRaw", 0)).unwrap();
    assert_eq!(q0["brokerOffset"], 3);
    assert_eq!(q0["consumerOffset"], 1);

    let conns = admin.call(
        GET_CONSUMER_CONNECTION_LIST,
        &[("consumerGroup", "adm-group")],
        b"",
    );
    let conns = conns.json();
    assert_eq!(conns["connectionSet"][0]["clientId"], "127.0.0.1@adm");
    assert_eq!(conns["connectionSet"][0]["language"], "JAVA");
    assert_eq!(conns["messageModel"], "CLUSTERING");
    assert_eq!(conns["subscriptionTable"]["AdmRaw"]["subString"], "*");

    // Reset to the start: the answer and the member's notice carry the new offsets.
    let reset = [
        ("topic", "AdmRaw"),
        ("group", "adm-group"),
        ("timestamp", "0"),
        ("isForce", "true"),
    ];
    let answer = admin.call(INVOKE_BROKER_TO_RESET_OFFSET, &reset, b"");
    assert_eq!(answer.code, SUCCESS, "{:?}", answer.remark);
    let text = String::from_utf8(answer.body).unwrap();
    assert!(
        text.contains(r#""queueId":0,"topic":"AdmRaw"}:0"#),
        "{text}"
    );
    // (A NOTIFY_CONSUMER_IDS_CHANGED from joining may come first.)
    let notice = loop {
        let frame = member.read_frame();
        if frame.code != NOTIFY_CONSUMER_IDS_CHANGED {
            break frame;
        }
    };
    assert_eq!(notice.code, RESET_CONSUMER_CLIENT_OFFSET);
    assert_eq!(notice.field("group"), "adm-group");
    assert!(String::from_utf8(notice.body)
        .unwrap()
        .contains(r#""topic":"AdmRaw"}:0"#));

    let runtime = admin.call(GET_BROKER_RUNTIME_INFO, &[], b"").json();
    assert_eq!(runtime["table"]["msgPutTotalTodayNow"], "3");

    assert_eq!(
        admin
            .call(DELETE_TOPIC_IN_BROKER, &[("topic", "AdmRaw")], b"")
            .code,
        SUCCESS
    );
    let gone = admin.call(GET_TOPIC_STATS_INFO, &[("topic", "AdmRaw")], b"");
    assert_eq!(gone.code, TOPIC_NOT_EXIST);
    let max = admin.call(
        GET_MAX_OFFSET,
        &[("topic", "AdmRaw"), ("queueId", "0")],
        b"",
    );
    assert_eq!(max.field("offset"), "0");
}

#[test]
fn the_name_server_takes_and_gives_back_write_permission() {
    let servers = Servers::start();
    let mut admin = Wire::connect(servers.broker_addr());
    send(&mut admin, "AdmPerm", "0");
    let mut ns = Wire::connect(servers.namesrv_addr());
    let perm = |ns: &mut Wire| loop {
        let route = ns.call(GET_ROUTEINFO_BY_TOPIC, &[("topic", "AdmPerm")], b"");
        if route.code == SUCCESS {
            return route.json()["queueDatas"][0]["perm"].as_i64().unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(perm(&mut ns), 6);
    let wipe = ns.call(
        WIPE_WRITE_PERM_OF_BROKER,
        &[("brokerName", "broker-a")],
        b"",
    );
    assert!(wipe.field("wipeTopicCount").parse::<i32>().unwrap() >= 1);
    assert_eq!(perm(&mut ns), 4);
    let add = ns.call(ADD_WRITE_PERM_OF_BROKER, &[("brokerName", "broker-a")], b"");
    assert!(add.field("addTopicCount").parse::<i32>().unwrap() >= 1);
    assert_eq!(perm(&mut ns), 6);
}

#[test]
fn broker_permission_changes_while_running() {
    const UPDATE_BROKER_CONFIG: i32 = 25;
    const GET_BROKER_CONFIG: i32 = 26;
    const NO_PERMISSION: i32 = 16;
    const INVALID_PARAMETER: i32 = 29;
    let servers = Servers::start();
    let mut w = Wire::connect(servers.broker_addr());
    send(&mut w, "AdmLive", "0");
    let r = w.call(UPDATE_BROKER_CONFIG, &[], b"brokerPermission=4\n");
    assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
    let config = String::from_utf8(w.call(GET_BROKER_CONFIG, &[], b"").body).unwrap();
    assert!(
        config.lines().any(|l| l == "brokerPermission=4"),
        "{config}"
    );
    let fields = [
        ("a", "adm-producer"),
        ("b", "AdmLive"),
        ("c", "TBW102"),
        ("d", "2"),
        ("e", "0"),
        ("f", "0"),
        ("g", "1700000000000"),
        ("h", "0"),
        ("i", ""),
        ("j", "0"),
        ("k", "0"),
    ];
    assert_eq!(w.call(SEND_MESSAGE_V2, &fields, b"x").code, NO_PERMISSION);
    // The name servers learn the read-only permission for every topic.
    let mut ns = Wire::connect(servers.namesrv_addr());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let route = ns.call(GET_ROUTEINFO_BY_TOPIC, &[("topic", "AdmLive")], b"");
        if route.code == SUCCESS && route.json()["queueDatas"][0]["perm"] == 4 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "route kept its write permission"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let refused = w.call(UPDATE_BROKER_CONFIG, &[], b"listenPort=1\n");
    assert_eq!(refused.code, INVALID_PARAMETER);
    assert!(refused.remark.unwrap().contains("listenPort"));
    assert_eq!(
        w.call(UPDATE_BROKER_CONFIG, &[], b"brokerPermission=6")
            .code,
        SUCCESS
    );
    send(&mut w, "AdmLive", "0");
}

#[test]
fn query_consume_queue_lists_units_as_mqadmin_reads_them() {
    const QUERY_CONSUME_QUEUE: i32 = 321;
    const SYSTEM_ERROR: i32 = 1;
    let servers = Servers::start();
    let mut admin = Wire::connect(servers.broker_addr());
    for _ in 0..5 {
        send(&mut admin, "AdmCq", "1");
    }
    let query = |w: &mut Wire, index: &str, count: &str, group: Option<&str>| {
        let mut fields = vec![
            ("topic", "AdmCq"),
            ("queueId", "1"),
            ("index", index),
            ("count", count),
        ];
        fields.extend(group.map(|g| ("consumerGroup", g)));
        w.call(QUERY_CONSUME_QUEUE, &fields, b"")
    };
    let r = query(&mut admin, "1", "3", None);
    assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(body["maxQueueIndex"], 5);
    assert_eq!(body["minQueueIndex"], 0);
    assert!(body.get("subscriptionData").is_none() && body.get("filterData").is_none());
    let units = body["queueData"].as_array().unwrap();
    assert_eq!(units.len(), 3, "count limits the answer");
    let size = units[0]["physicSize"].as_i64().unwrap();
    assert!(size > 4, "a record's size, not the body's: {size}");
    for pair in units.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert_eq!(b["physicSize"].as_i64(), Some(size), "same-sized sends");
        assert_eq!(
            b["physicOffset"].as_i64().unwrap(),
            a["physicOffset"].as_i64().unwrap() + size,
            "one queue's records back to back: {units:?}"
        );
        assert_eq!(b["eval"], false);
    }
    assert_eq!(units[0]["tagsCode"], 0, "no tag");

    let past = query(&mut admin, "5", "10", None);
    assert_eq!(past.code, SUCCESS);
    assert!(past.body.is_empty());
    assert_eq!(
        past.remark.as_deref(),
        Some("Index 5 of 1@AdmCq is not exist!")
    );
    let offline = query(&mut admin, "0", "10", Some("nobody"));
    let body: serde_json::Value = serde_json::from_slice(&offline.body).unwrap();
    assert_eq!(body["filterData"], "nobody@AdmCq is not online!");
    assert_eq!(body["queueData"].as_array().unwrap().len(), 5);

    let unknown = admin.call(
        QUERY_CONSUME_QUEUE,
        &[
            ("topic", "AdmCq"),
            ("queueId", "99"),
            ("index", "0"),
            ("count", "1"),
        ],
        b"",
    );
    assert_eq!(unknown.code, SYSTEM_ERROR);
    assert_eq!(unknown.remark.as_deref(), Some("99@AdmCq is not exist!"));
}

/// Topics the broker keeps for itself are neither created nor deleted by an admin (RocketMQ's
/// TopicValidator: "The topic[X] is conflict with system topic.").
#[test]
fn system_topics_are_neither_created_nor_deleted() {
    const UPDATE_AND_CREATE_TOPIC: i32 = 17;
    const SYSTEM_ERROR: i32 = 1;
    let servers = Servers::start();
    let mut admin = Wire::connect(servers.broker_addr());
    let cluster = servers.settings.broker.broker_cluster_name.clone();
    let reply = format!("{cluster}_REPLY_TOPIC");
    for topic in [
        "SCHEDULE_TOPIC_XXXX",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "rmq_sys_wheel_timer",
        "TBW102",
        cluster.as_str(),
        reply.as_str(),
    ] {
        let fields = [
            ("topic", topic),
            ("defaultTopic", "TBW102"),
            ("readQueueNums", "4"),
            ("writeQueueNums", "4"),
            ("perm", "6"),
            ("topicFilterType", "SINGLE_TAG"),
        ];
        for (code, fields) in [
            (UPDATE_AND_CREATE_TOPIC, &fields[..]),
            (DELETE_TOPIC_IN_BROKER, &fields[..1]),
        ] {
            let r = admin.call(code, fields, b"");
            assert_eq!(r.code, SYSTEM_ERROR, "{code} {topic}");
            assert_eq!(
                r.remark.as_deref(),
                Some(format!("The topic[{topic}] is conflict with system topic.").as_str())
            );
        }
    }
}
