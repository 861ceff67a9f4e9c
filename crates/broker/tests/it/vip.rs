//! The "VIP channel": a broker also serves on its port - 2, where a 4.x slave's metadata sync
//! asks (GET_ALL_TOPIC_CONFIG and the rest), and the metadata bodies carry the fields 5.x
//! writes, which 5.x-shaped readers (rocketmq-rust's slave) require.

use std::net::{SocketAddr, TcpListener};

use crate::wire::Wire;
use crate::Servers;

const UPDATE_CONSUMER_OFFSET: i32 = 15;
const GET_ALL_TOPIC_CONFIG: i32 = 21;
const GET_ALL_CONSUMER_OFFSET: i32 = 43;
const GET_ALL_SUBSCRIPTIONGROUP_CONFIG: i32 = 201;
const SUCCESS: i32 = 0;

/// A free port whose port - 2 is free too.
fn port_with_free_vip() -> u16 {
    loop {
        let main = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = main.local_addr().unwrap().port();
        if port > 1026 && TcpListener::bind(("127.0.0.1", port - 2)).is_ok() {
            return port;
        }
    }
}

#[test]
fn the_vip_channel_serves_metadata_in_the_5x_shape() {
    let port = port_with_free_vip();
    let servers = Servers::start_with(|ns| {
        vec![
            ("namesrvAddr", ns.to_string()),
            ("listenPort", port.to_string()),
        ]
    });
    let mut main = Wire::connect(servers.broker_addr());
    let commit = [
        ("consumerGroup", "vip-group"),
        ("topic", "VipTopic"),
        ("queueId", "1"),
        ("commitOffset", "7"),
    ];
    assert_eq!(
        main.call(UPDATE_CONSUMER_OFFSET, &commit, b"").code,
        SUCCESS
    );

    let mut vip = Wire::connect(SocketAddr::from(([127, 0, 0, 1], port - 2)));
    let topics = vip.call(GET_ALL_TOPIC_CONFIG, &[], b"");
    assert_eq!(topics.code, SUCCESS);
    let topics = topics.json();
    let table = topics["topicConfigTable"].as_object().unwrap();
    assert!(!table.is_empty());
    assert!(table.values().all(|t| t["attributes"].is_object()));
    assert!(topics["dataVersion"]["stateVersion"].is_i64());
    assert!(topics["topicQueueMappingInfoMap"].is_object());
    assert!(topics["topicQueueMappingDetailMap"].is_object());
    assert!(topics["mappingDataVersion"]["counter"].is_i64());

    let offsets = vip.call(GET_ALL_CONSUMER_OFFSET, &[], b"").json();
    assert_eq!(offsets["offsetTable"]["VipTopic@vip-group"]["1"], 7);
    assert!(offsets["dataVersion"]["counter"].as_i64().unwrap() >= 1);
    assert!(offsets["dataVersion"]["timestamp"].as_i64().unwrap() > 0);

    let groups = vip.call(GET_ALL_SUBSCRIPTIONGROUP_CONFIG, &[], b"").json();
    assert!(groups["forbiddenTable"].is_object());
    assert!(groups["dataVersion"]["stateVersion"].is_i64());
}
