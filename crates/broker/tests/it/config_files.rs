//! Damaged config files on a broker restart: an empty or unparseable `topics.json` or
//! `consumerOffset.json` falls back to its `.bak` (RocketMQ's ConfigManager), a damaged file
//! with no usable backup is kept aside and the broker starts, and the damaged file never
//! becomes the backup at the next write.

use std::path::Path;

use crate::wire::Wire;
use crate::Servers;

const UPDATE_CONSUMER_OFFSET: i32 = 15;
const UPDATE_AND_CREATE_TOPIC: i32 = 17;
const SUCCESS: i32 = 0;

fn create_topic(w: &mut Wire, topic: &str) {
    let fields = [
        ("topic", topic),
        ("defaultTopic", "TBW102"),
        ("readQueueNums", "2"),
        ("writeQueueNums", "2"),
        ("perm", "6"),
        ("topicFilterType", "SINGLE_TAG"),
    ];
    assert_eq!(w.call(UPDATE_AND_CREATE_TOPIC, &fields, b"").code, SUCCESS);
}

fn kept_aside(config: &Path, name: &str) -> usize {
    std::fs::read_dir(config)
        .unwrap()
        .filter(|e| {
            let n = e.as_ref().unwrap().file_name();
            n.to_string_lossy().starts_with(&format!("{name}.damaged-"))
        })
        .count()
}

#[test]
fn damaged_config_files_fall_back_to_their_backups_or_are_kept_aside() {
    let mut servers = Servers::start();
    let mut w = Wire::connect(servers.broker_addr());
    for t in ["CfgA", "CfgB"] {
        create_topic(&mut w, t);
    }
    let commit = |servers: &Servers, offset: &str| {
        let fields = [
            ("consumerGroup", "cfg-group"),
            ("topic", "CfgA"),
            ("queueId", "0"),
            ("commitOffset", offset),
        ];
        let mut w = Wire::connect(servers.broker_addr());
        assert_eq!(w.call(UPDATE_CONSUMER_OFFSET, &fields, b"").code, SUCCESS);
    };
    // Two restarts, each after a commit: the offsets file holds 8, its .bak 7; the topic
    // files hold both topics.
    commit(&servers, "7");
    servers.restart_broker();
    commit(&servers, "8");
    servers.restart_broker();
    let config = servers.settings.store.store_path_root_dir.join("config");

    servers.restart_broker_after(|store| {
        let config = store.join("config");
        std::fs::write(config.join("topics.json"), b"").unwrap();
        std::fs::write(
            config.join("consumerOffset.json"),
            b"{\"offsetTable\":{\"Cfg",
        )
        .unwrap();
        std::fs::write(config.join("subscriptionGroup.json"), b"\x00\x01garbage").unwrap();
        let _ = std::fs::remove_file(config.join("subscriptionGroup.json.bak"));
    });
    let inner = servers.broker.as_ref().unwrap().inner().clone();
    assert!(inner.topics.get("CfgA").is_some() && inner.topics.get("CfgB").is_some());
    assert_eq!(
        inner.offsets.query("cfg-group", "CfgA", 0),
        Some(7),
        "from the backup"
    );
    for name in [
        "topics.json",
        "consumerOffset.json",
        "subscriptionGroup.json",
    ] {
        assert_eq!(kept_aside(&config, name), 1, "{name} kept aside");
    }

    // The next writes did not make the damaged files the backups: damage the files again and
    // the tables come back once more.
    servers.restart_broker_after(|store| {
        std::fs::write(
            store.join("config").join("topics.json"),
            b"{\"topicConfigTable\"",
        )
        .unwrap();
    });
    let inner = servers.broker.as_ref().unwrap().inner().clone();
    assert!(inner.topics.get("CfgA").is_some());
    assert_eq!(kept_aside(&config, "topics.json"), 2);
}
