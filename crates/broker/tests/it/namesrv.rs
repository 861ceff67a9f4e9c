//! The name server: registration as a Java broker sends it, routes, cluster info, topic list,
//! unregistration, and refusals.

use crate::wire::Wire;
use crate::Servers;

const REGISTER_BROKER: i32 = 103;
const UNREGISTER_BROKER: i32 = 104;
const GET_ROUTEINFO_BY_TOPIC: i32 = 105;
const GET_BROKER_CLUSTER_INFO: i32 = 106;
const GET_ALL_TOPIC_LIST_FROM_NAMESERVER: i32 = 206;
const QUERY_DATA_VERSION: i32 = 322;
const SUCCESS: i32 = 0;
const SYSTEM_ERROR: i32 = 1;
const REQUEST_CODE_NOT_SUPPORTED: i32 = 3;
const TOPIC_NOT_EXIST: i32 = 17;

/// A RegisterBrokerBody as a Java 4.9 broker writes it with fastjson (integer map keys
/// unquoted are fastjson's; none here, but the counter is a number and order is fastjson's).
fn register_body(topic: &str) -> Vec<u8> {
    format!(
        r#"{{"filterServerList":[],"topicConfigSerializeWrapper":{{"dataVersion":{{"counter":1,"timestamp":1700000000000}},"topicConfigTable":{{"{topic}":{{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"{topic}","topicSysFlag":0,"writeQueueNums":4}}}}}}}}"#
    )
    .into_bytes()
}

fn crc(body: &[u8]) -> String {
    (crc32fast::hash(body) & 0x7FFF_FFFF).to_string()
}

#[test]
fn java_broker_registration_routes_and_unregistration() {
    let servers = Servers::start();
    let mut w = Wire::connect(servers.namesrv_addr());
    let body = register_body("JavaTopic");
    let crc = crc(&body);
    let fields = [
        ("brokerAddr", "127.0.0.1:20911"),
        ("brokerId", "0"),
        ("brokerName", "java-broker"),
        ("clusterName", "JavaCluster"),
        ("haServerAddr", "127.0.0.1:20912"),
        ("compressed", "false"),
        ("bodyCrc32", crc.as_str()),
    ];
    let resp = w.call(REGISTER_BROKER, &fields, &body);
    assert_eq!(resp.code, SUCCESS, "{:?}", resp.remark);

    let route = w.call(GET_ROUTEINFO_BY_TOPIC, &[("topic", "JavaTopic")], b"");
    assert_eq!(route.code, SUCCESS);
    let r = route.json();
    assert_eq!(r["queueDatas"][0]["brokerName"], "java-broker");
    assert_eq!(r["queueDatas"][0]["writeQueueNums"], 4);
    assert_eq!(r["brokerDatas"][0]["brokerAddrs"]["0"], "127.0.0.1:20911");

    let info = w.call(GET_BROKER_CLUSTER_INFO, &[], b"").json();
    assert_eq!(
        info["brokerAddrTable"]["java-broker"]["brokerAddrs"]["0"],
        "127.0.0.1:20911"
    );
    let clusters = info["clusterAddrTable"]["JavaCluster"].as_array().unwrap();
    assert_eq!(clusters, &vec![serde_json::json!("java-broker")]);

    let topics = w.call(GET_ALL_TOPIC_LIST_FROM_NAMESERVER, &[], b"").json();
    let list = topics["topicList"].as_array().unwrap();
    assert!(list.contains(&serde_json::json!("JavaTopic")), "{list:?}");
    assert!(
        list.contains(&serde_json::json!("TBW102")),
        "the real broker's topics too"
    );

    let gone = w.call(
        UNREGISTER_BROKER,
        &[
            ("brokerAddr", "127.0.0.1:20911"),
            ("brokerId", "0"),
            ("brokerName", "java-broker"),
            ("clusterName", "JavaCluster"),
        ],
        b"",
    );
    assert_eq!(gone.code, SUCCESS);
    let route = w.call(GET_ROUTEINFO_BY_TOPIC, &[("topic", "JavaTopic")], b"");
    assert_eq!(route.code, TOPIC_NOT_EXIST);
}

#[test]
fn java_broker_data_version_query() {
    let servers = Servers::start();
    let mut w = Wire::connect(servers.namesrv_addr()).binary();
    let who = [
        ("brokerAddr", "127.0.0.1:20911"),
        ("brokerId", "0"),
        ("brokerName", "java-broker"),
        ("clusterName", "JavaCluster"),
    ];
    // As a Java broker encodes its DataVersion with fastjson (5.x adds stateVersion).
    let version = br#"{"counter":1,"stateVersion":0,"timestamp":1700000000000}"#;
    let unknown = w.call(QUERY_DATA_VERSION, &who, version);
    assert_eq!(unknown.code, SUCCESS);
    assert_eq!(unknown.field("changed"), "true");
    assert!(unknown.body.is_empty(), "no version known");

    let body = register_body("JavaTopic");
    let crc = crc(&body);
    let mut fields = who.to_vec();
    fields.push(("bodyCrc32", &crc));
    assert_eq!(w.call(REGISTER_BROKER, &fields, &body).code, SUCCESS);
    let same = w.call(QUERY_DATA_VERSION, &who, version);
    assert_eq!(same.field("changed"), "false");
    assert_eq!(same.json()["counter"], 1);
    assert_eq!(same.json()["timestamp"], 1700000000000i64);
    let newer = w.call(
        QUERY_DATA_VERSION,
        &who,
        br#"{"counter":"2","timestamp":1700000000000}"#,
    );
    assert_eq!(
        newer.field("changed"),
        "true",
        "numbers as strings are read"
    );
    let garbage = w.call(QUERY_DATA_VERSION, &who, b"{not json");
    assert_eq!(garbage.code, SYSTEM_ERROR);
    assert!(garbage.remark.unwrap_or_default().contains("DataVersion"));
}

#[test]
fn refusals_name_the_problem_and_keep_serving() {
    let servers = Servers::start();
    let mut w = Wire::connect(servers.namesrv_addr()).binary();
    let body = register_body("T");
    let missing = w.call(
        REGISTER_BROKER,
        &[("brokerAddr", "a:1"), ("brokerId", "0")],
        &body,
    );
    assert_eq!(missing.code, SYSTEM_ERROR);
    assert!(missing
        .remark
        .as_deref()
        .unwrap_or_default()
        .contains("brokerName"));
    let bad_crc = w.call(
        REGISTER_BROKER,
        &[
            ("brokerAddr", "a:1"),
            ("brokerId", "0"),
            ("brokerName", "b"),
            ("clusterName", "c"),
            ("bodyCrc32", "12345"),
        ],
        &body,
    );
    assert_eq!(bad_crc.code, SYSTEM_ERROR);
    let garbage = w.call(
        REGISTER_BROKER,
        &[
            ("brokerAddr", "a:1"),
            ("brokerId", "0"),
            ("brokerName", "b"),
            ("clusterName", "c"),
        ],
        b"{not json",
    );
    assert_eq!(garbage.code, SYSTEM_ERROR);
    assert_eq!(w.call(9999, &[], b"").code, REQUEST_CODE_NOT_SUPPORTED);
    let missing_topic = w.call(GET_ROUTEINFO_BY_TOPIC, &[], b"");
    assert_eq!(missing_topic.code, SYSTEM_ERROR);
    // Still serving on the same connection.
    let info = w.call(GET_BROKER_CLUSTER_INFO, &[], b"");
    assert_eq!(info.code, SUCCESS);
}
