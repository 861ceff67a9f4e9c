//! Controller mode end to end in this process: a controller, a name server and two brokers of
//! one group. The first broker is elected master and the second follows it over the AutoSwitch
//! HA protocol and joins the SyncStateSet; a SYNC write is acknowledged once both have it; the
//! master stops and the controller makes the replica master, which takes writes with every
//! acknowledged message; the old master comes back as a replica of the new one.

use std::path::Path;
use std::time::{Duration, Instant};

use rocketpy_broker::{Broker, BrokerSettings, Clock};
use rocketpy_controller::server::{ControllerServer, ControllerSettings};
use rocketpy_namesrv::{NameServer, NamesrvConfig};

use crate::wire::Wire;

const SEND_MESSAGE: i32 = 10;
const SUCCESS: i32 = 0;

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub(crate) fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn send(addr: &str, body: &[u8]) -> crate::wire::Frame {
    let mut w = Wire::connect(addr.parse().unwrap());
    w.call(
        SEND_MESSAGE,
        &[
            ("producerGroup", "p"),
            ("topic", "Orders"),
            ("defaultTopic", "TBW102"),
            ("defaultTopicQueueNums", "1"),
            ("queueId", "0"),
            ("sysFlag", "0"),
            ("bornTimestamp", "1700000000001"),
            ("flag", "0"),
            ("reconsumeTimes", "0"),
            ("unitMode", "false"),
        ],
        body,
    )
}

fn broker(rt: &tokio::runtime::Runtime, store: &Path, namesrv: &str, controller: &str) -> Broker {
    broker_with(rt, store, namesrv, controller, &[])
}

fn broker_with(
    rt: &tokio::runtime::Runtime,
    store: &Path,
    namesrv: &str,
    controller: &str,
    extra: &[(&str, &str)],
) -> Broker {
    broker_on(rt, store, namesrv, controller, extra, Clock::system())
}

/// A broker of group `broker-a` in controller mode, on `clock`.
pub(crate) fn broker_on(
    rt: &tokio::runtime::Runtime,
    store: &Path,
    namesrv: &str,
    controller: &str,
    extra: &[(&str, &str)],
    clock: Clock,
) -> Broker {
    let mut settings = BrokerSettings::new(store);
    for (k, v) in crate::BROKER_TEST_SETTINGS {
        settings.set(k, v).unwrap();
    }
    for (k, v) in [
        ("namesrvAddr", namesrv),
        ("brokerName", "broker-a"),
        ("brokerRole", "SLAVE"),
        ("brokerId", "-1"),
        ("enableControllerMode", "true"),
        ("controllerAddr", controller),
        ("allAckInSyncStateSet", "true"),
        ("syncBrokerMetadataPeriod", "200"),
        ("checkSyncStateSetPeriod", "200"),
        ("brokerHeartbeatInterval", "100"),
        ("registerNameServerPeriod", "1000"),
        ("haSendHeartbeatInterval", "200"),
        ("slaveTimeout", "5000"),
    ]
    .iter()
    .chain(extra)
    {
        settings.set(k, v).unwrap();
    }
    rt.block_on(Broker::start_with_clock(settings, clock))
        .unwrap()
}

/// How many brokers the master `b` counts in its SyncStateSet (0 for a broker not master).
pub(crate) fn sync_state_set_len(b: &Broker) -> usize {
    b.inner()
        .replicas
        .as_ref()
        .and_then(|r| r.ha_master().cloned())
        .map_or(0, |m| m.sync_state_set().len())
}

pub(crate) fn role_id(b: &Broker) -> Option<i64> {
    b.inner().registration_id()
}

/// A name server and one controller, in `dir`.
pub(crate) fn cluster(
    rt: &tokio::runtime::Runtime,
    dir: &Path,
) -> (NameServer, ControllerServer, String, String) {
    let namesrv = rt
        .block_on(NameServer::start(NamesrvConfig {
            bind_address: "127.0.0.1".into(),
            listen_port: 0,
            ..NamesrvConfig::default()
        }))
        .unwrap();
    let mut cs = ControllerSettings::default();
    let peers = format!("n0-127.0.0.1:{}", free_port());
    for (k, v) in [
        ("controllerDLegerPeers", peers.as_str()),
        ("controllerDLegerSelfId", "n0"),
        (
            "controllerStorePath",
            &dir.join("controller").display().to_string(),
        ),
        ("electionWarmUpMillis", "0"),
        ("scanNotActiveBrokerInterval", "200"),
        ("scanInactiveMasterInterval", "200"),
    ] {
        cs.set(k, v).unwrap();
    }
    let controller = rt
        .block_on(ControllerServer::start(cs, Default::default()))
        .unwrap();
    let caddr = controller.local_addr().to_string();
    let naddr = namesrv.local_addr().to_string();
    (namesrv, controller, naddr, caddr)
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_group_fails_over_to_its_in_sync_replica() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (namesrv, controller, naddr, caddr) = cluster(&rt, dir.path());

    let a = broker(&rt, &dir.path().join("a"), &naddr, &caddr);
    wait_for("a to be master", || role_id(&a) == Some(0));
    let b = broker(&rt, &dir.path().join("b"), &naddr, &caddr);
    wait_for("b to follow", || role_id(&b) == Some(2));
    wait_for("b in the SyncStateSet", || sync_state_set_len(&a) == 2);
    for i in 0..5 {
        let r = send(a.broker_addr(), format!("m{i}").as_bytes());
        assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
    }
    let acked_end = a.inner().store.commit_log_range().1;
    wait_for("b to have every acknowledged byte", || {
        b.inner().store.commit_log_range().1 >= acked_end
    });

    // The master goes away: its connections to the controller close.
    rt.block_on(a.shutdown()).unwrap();
    drop(a);
    wait_for("b to become master", || role_id(&b) == Some(0));
    // The topic was created on a moments ago, before b's first copy of a's topic table: b
    // knows it from its store, and serves its acknowledged messages.
    assert!(b.inner().topics.get("Orders").is_some());
    let read = b.inner().store.get_message("Orders", 0, 0, 32, None);
    assert_eq!(read.messages.len(), 5);
    let r = send(b.broker_addr(), b"after failover");
    assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
    assert!(b.inner().store.commit_log_range().1 > acked_end);

    // The old master returns as a replica of the new one, with the same id.
    let a = broker(&rt, &dir.path().join("a"), &naddr, &caddr);
    wait_for("a to follow b", || role_id(&a) == Some(1));
    let end = b.inner().store.commit_log_range().1;
    wait_for("a to catch up", || {
        a.inner().store.commit_log_range().1 >= end
    });

    rt.block_on(a.shutdown()).unwrap();
    rt.block_on(b.shutdown()).unwrap();
    rt.block_on(controller.shutdown());
    rt.block_on(namesrv.shutdown());
}

/// With `minInSyncReplicas=2`, a master alone refuses SYNC writes (nothing is stored) until a
/// replica joins its SyncStateSet.
#[test]
fn a_master_without_enough_in_sync_replicas_refuses_writes() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (namesrv, controller, naddr, caddr) = cluster(&rt, dir.path());
    let min = [("minInSyncReplicas", "2")];
    let a = broker_with(&rt, &dir.path().join("a"), &naddr, &caddr, &min);
    wait_for("a to be master", || role_id(&a) == Some(0));
    let before = a.inner().store.commit_log_range().1;
    let r = send(a.broker_addr(), b"alone");
    assert_ne!(r.code, SUCCESS);
    assert!(
        r.remark
            .as_deref()
            .unwrap_or("")
            .contains("in-sync replicas not enough"),
        "{:?}",
        r.remark
    );
    assert_eq!(a.inner().store.commit_log_range().1, before);
    let b = broker_with(&rt, &dir.path().join("b"), &naddr, &caddr, &min);
    wait_for("b in the SyncStateSet", || sync_state_set_len(&a) == 2);
    let r = send(a.broker_addr(), b"with a replica");
    assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
    rt.block_on(b.shutdown()).unwrap();
    rt.block_on(a.shutdown()).unwrap();
    rt.block_on(controller.shutdown());
    rt.block_on(namesrv.shutdown());
}
