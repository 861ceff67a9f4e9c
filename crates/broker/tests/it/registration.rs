//! How a broker registers: with `forceRegister=false` the periodic registration becomes a
//! QUERY_DATA_VERSION while the name server has the broker's data version, topic changes still
//! register in full at once, and a name server that lost the broker gets it back.

use std::time::{Duration, Instant};

use crate::relay::Relay;
use crate::wire::Wire;
use crate::Servers;

const SEND_MESSAGE: i32 = 10;
const REGISTER_BROKER: i32 = 103;
const UNREGISTER_BROKER: i32 = 104;
const GET_ROUTEINFO_BY_TOPIC: i32 = 105;
const QUERY_DATA_VERSION: i32 = 322;
const SUCCESS: i32 = 0;

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn routed(servers: &Servers, topic: &str) -> bool {
    let mut w = Wire::connect(servers.namesrv_addr());
    w.call(GET_ROUTEINFO_BY_TOPIC, &[("topic", topic)], b"")
        .code
        == SUCCESS
}

#[test]
fn a_broker_without_force_register_asks_while_nothing_changed() {
    let mut relay = None;
    let servers = Servers::start_with(|namesrv| {
        let r = Relay::start(namesrv);
        let addr = r.addr().to_string();
        relay = Some(r);
        vec![
            ("namesrvAddr", addr),
            ("forceRegister", "false".into()),
            ("registerNameServerPeriod", "1000".into()),
        ]
    });
    let relay = relay.unwrap();
    // Let start-up registrations (system topics) settle, then watch three periods.
    std::thread::sleep(Duration::from_millis(1500));
    let (registers, queries) = (
        relay.count(REGISTER_BROKER),
        relay.count(QUERY_DATA_VERSION),
    );
    assert!(registers >= 1);
    std::thread::sleep(Duration::from_millis(3200));
    assert_eq!(relay.count(REGISTER_BROKER), registers, "nothing changed");
    assert!(relay.count(QUERY_DATA_VERSION) >= queries + 2);

    // A topic created by a send registers at once, in full.
    let mut w = Wire::connect(servers.broker_addr());
    let sent = w.call(
        SEND_MESSAGE,
        &[
            ("producerGroup", "p"),
            ("topic", "NewAfterStart"),
            ("defaultTopic", "TBW102"),
            ("defaultTopicQueueNums", "4"),
            ("queueId", "0"),
            ("sysFlag", "0"),
            ("bornTimestamp", "1700000000001"),
            ("flag", "0"),
            ("reconsumeTimes", "0"),
            ("unitMode", "false"),
        ],
        b"x",
    );
    assert_eq!(sent.code, SUCCESS, "{:?}", sent.remark);
    wait_for("the new topic's route", || {
        routed(&servers, "NewAfterStart")
    });
    assert!(relay.count(REGISTER_BROKER) > registers);

    // A name server that forgot the broker answers "changed": the broker registers again.
    let mut ns = Wire::connect(servers.namesrv_addr());
    let gone = ns.call(
        UNREGISTER_BROKER,
        &[
            ("brokerAddr", &servers.broker_addr().to_string()),
            ("brokerId", "0"),
            ("brokerName", "broker-a"),
            ("clusterName", "DefaultCluster"),
        ],
        b"",
    );
    assert_eq!(gone.code, SUCCESS);
    assert!(!routed(&servers, "NewAfterStart"));
    wait_for("the broker back", || routed(&servers, "NewAfterStart"));
}

#[test]
fn periodic_registration_keeps_a_broker_past_the_name_servers_expiry() {
    let servers = Servers::start_with(|namesrv| {
        vec![
            ("namesrvAddr", namesrv.to_string()),
            ("registerNameServerPeriod", "100".into()),
        ]
    });
    let routes = servers.namesrv.routes().clone();
    let addr = servers.broker_addr().to_string();
    // RocketMQ's brokerChannelExpiredTime: 120 s on the servers' (manual) clock.
    let expiry = Duration::from_secs(120);
    for _ in 0..2 {
        servers.advance(119_000);
        let now = servers.clock.now_millis();
        // The broker registers every 100 ms (of real time): the name server hears it at the
        // new time.
        wait_for("a registration after the clock moved", || {
            routes.last_heard(&addr) == Some(now)
        });
    }
    // 238 s after it first registered, heard from just now: live (without the periodic
    // registration it would have expired; the name server's own unit test shows that).
    assert!(routes.scan_not_active(expiry).is_empty());
}
