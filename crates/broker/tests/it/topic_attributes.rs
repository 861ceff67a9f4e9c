//! RocketMQ 5's topic attributes on UPDATE_AND_CREATE_TOPIC (`+message.type=FIFO`, as
//! `mqadmin updateTopic -a` sends them): stored, answered by GET_TOPIC_CONFIG, kept across a
//! restart; changes rocketpy does not implement and MIXED (RocketMQ's default) refused.

use serde_json::Value;

use crate::wire::{Frame, Wire};
use crate::Servers;

const UPDATE_AND_CREATE_TOPIC: i32 = 17;
const GET_TOPIC_CONFIG: i32 = 351;
const SUCCESS: i32 = 0;
const TOPIC_NOT_EXIST: i32 = 17;
const INVALID_PARAMETER: i32 = 29;

fn create(w: &mut Wire, topic: &str, attributes: &str) -> Frame {
    w.call(
        UPDATE_AND_CREATE_TOPIC,
        &[
            ("topic", topic),
            ("defaultTopic", "TBW102"),
            ("readQueueNums", "2"),
            ("writeQueueNums", "2"),
            ("perm", "6"),
            ("topicFilterType", "SINGLE_TAG"),
            ("topicSysFlag", "0"),
            ("order", "false"),
            ("attributes", attributes),
        ],
        b"",
    )
}

fn attributes(w: &mut Wire, topic: &str) -> Value {
    let got = w.call(GET_TOPIC_CONFIG, &[("topic", topic)], b"");
    assert_eq!(got.code, SUCCESS, "{:?}", got.remark);
    let cfg: Value = serde_json::from_slice(&got.body).unwrap();
    assert_eq!(cfg["topicName"], topic);
    cfg["attributes"].clone()
}

#[test]
fn attributes_are_stored_checked_and_kept() {
    let mut servers = Servers::start();
    let mut w = Wire::connect(servers.broker_addr());
    assert_eq!(create(&mut w, "Typed", "+message.type=FIFO").code, SUCCESS);
    assert_eq!(attributes(&mut w, "Typed")["message.type"], "FIFO");
    // An update changes it; creating takes only additions.
    assert_eq!(create(&mut w, "Typed", "+message.type=DELAY").code, SUCCESS);
    assert_eq!(attributes(&mut w, "Typed")["message.type"], "DELAY");
    for (attrs, needle) in [
        (
            "+message.type=MIXED",
            "MIXED message type is not supported.",
        ),
        ("+message.type=LIFO", "not supported"),
        ("+queue.type=BatchCQ", "not supported"),
        ("+reserve.time=1000", "not supported"),
        ("message.type=FIFO", "format is wrong"),
    ] {
        let refused = create(&mut w, "Refused", attrs);
        assert_eq!(refused.code, INVALID_PARAMETER, "{attrs}");
        assert!(
            refused.remark.as_deref().unwrap().contains(needle),
            "{attrs}: {:?}",
            refused.remark
        );
    }
    let missing = w.call(GET_TOPIC_CONFIG, &[("topic", "Refused")], b"");
    assert_eq!(missing.code, TOPIC_NOT_EXIST, "nothing was created");
    // A topic made without attributes has none (it takes every type).
    assert_eq!(create(&mut w, "Plain", "").code, SUCCESS);
    assert_eq!(attributes(&mut w, "Plain"), serde_json::json!({}));

    servers.restart_broker();
    let mut w = Wire::connect(servers.broker_addr());
    assert_eq!(attributes(&mut w, "Typed")["message.type"], "DELAY");
    assert_eq!(create(&mut w, "Typed", "-message.type").code, SUCCESS);
    assert_eq!(attributes(&mut w, "Typed"), serde_json::json!({}));
}

#[test]
fn mixed_is_allowed_by_its_key() {
    let servers = Servers::start_with(|namesrv| {
        vec![
            ("namesrvAddr", namesrv.to_string()),
            ("enableMixedMessageType", "true".into()),
        ]
    });
    let mut w = Wire::connect(servers.broker_addr());
    assert_eq!(create(&mut w, "Mixed", "+message.type=MIXED").code, SUCCESS);
    assert_eq!(attributes(&mut w, "Mixed")["message.type"], "MIXED");
}
