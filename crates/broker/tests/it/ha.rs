//! Master/slave replication between two brokers in this process: a SYNC_MASTER acknowledges
//! once its slave has the bytes, the slave's CommitLog is the master's byte for byte, the
//! slave refuses writes, and its metadata follows the master's.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use rocketpy_broker::{Broker, BrokerSettings};

use crate::wire::Wire;
use crate::Servers;

const SEND_MESSAGE: i32 = 10;
const UPDATE_CONSUMER_OFFSET: i32 = 15;
const QUERY_CONSUMER_OFFSET: i32 = 14;
const SUCCESS: i32 = 0;
const SLAVE_NOT_AVAILABLE: i32 = 11;
const SERVICE_NOT_AVAILABLE: i32 = 14;

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn send(w: &mut Wire, topic: &str, queue: i32, body: &[u8]) -> crate::wire::Frame {
    let queue = queue.to_string();
    w.call(
        SEND_MESSAGE,
        &[
            ("producerGroup", "p"),
            ("topic", topic),
            ("defaultTopic", "TBW102"),
            ("defaultTopicQueueNums", "4"),
            ("queueId", &queue),
            ("sysFlag", "0"),
            ("bornTimestamp", "1700000000001"),
            ("flag", "0"),
            ("reconsumeTimes", "0"),
            ("unitMode", "false"),
        ],
        body,
    )
}

fn start_broker(servers: &Servers, store: &Path, extra: &[(&str, &str)]) -> Broker {
    let mut settings = BrokerSettings::new(store);
    let period = [("registerNameServerPeriod", "1000")];
    for (k, v) in crate::BROKER_TEST_SETTINGS
        .iter()
        .chain(&period)
        .chain(extra)
    {
        settings.set(k, v).unwrap();
    }
    settings
        .set("namesrvAddr", &servers.namesrv_addr().to_string())
        .unwrap();
    servers.rt.block_on(Broker::start(settings)).unwrap()
}

fn start_slave(servers: &Servers, store: &Path) -> Broker {
    start_broker(
        servers,
        store,
        &[("brokerId", "1"), ("brokerRole", "SLAVE")],
    )
}

fn commit_log(store: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(store.join("commitlog"))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).unwrap())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_sync_master_acknowledges_what_its_slave_has() {
    let servers = Servers::start_with(|namesrv| {
        vec![
            ("namesrvAddr", namesrv.to_string()),
            ("brokerRole", "SYNC_MASTER".into()),
            ("slaveTimeout", "3000".into()),
        ]
    });
    let master = servers.broker.as_ref().unwrap();
    let master_addr: SocketAddr = servers.broker_addr();
    let mut w = Wire::connect(master_addr);
    // No slave yet: stored, but the producer is told no slave has it.
    let lone = send(&mut w, "HaTopic", 0, b"before any slave");
    assert_eq!(lone.code, SLAVE_NOT_AVAILABLE, "{:?}", lone.remark);
    assert!(!lone.field("msgId").is_empty());

    let slave_dir = tempfile::tempdir().unwrap();
    let slave = start_slave(&servers, slave_dir.path());
    wait_for("the slave to connect", || {
        master.inner().ha.slave_count() == 1
    });

    // Bodies of many sizes roll the 1 MiB CommitLog files several times.
    for i in 0..600usize {
        let body = vec![(i % 251) as u8; 100 + (i * 7919) % 9000];
        let r = send(&mut w, "HaTopic", (i % 4) as i32, &body);
        assert_eq!(r.code, SUCCESS, "send {i}: {:?}", r.remark);
    }
    let end = master.inner().store.commit_log_range().1;
    assert!(end > 2 * 1048576, "files should have rolled ({end})");
    // Acknowledged means the slave reported it; its dispatch follows the same write.
    assert!(master.inner().ha.acked_offset() >= end);
    assert_eq!(slave.inner().store.commit_log_range().1, end);
    for q in 0..4 {
        assert_eq!(
            slave.inner().store.max_offset_in_queue("HaTopic", q),
            master.inner().store.max_offset_in_queue("HaTopic", q)
        );
    }
    // The empty slave started at the master's newest file at the time; from there on the
    // files are the master's, byte for byte.
    master.inner().store.flush().unwrap();
    slave.inner().store.flush().unwrap();
    let ours = commit_log(slave_dir.path());
    let theirs = commit_log(&master.inner().settings.store.store_path_root_dir);
    assert!(!ours.is_empty());
    let first = theirs.iter().position(|(n, _)| *n == ours[0].0).unwrap();
    assert_eq!(ours.len(), theirs.len() - first);
    for ((name, a), (_, b)) in ours.iter().zip(&theirs[first..]) {
        assert!(a == b, "{name} differs");
    }

    // The slave refuses writes of its own.
    let mut ws = Wire::connect(slave.local_addr());
    let refused = send(&mut ws, "HaTopic", 0, b"to the slave");
    assert_eq!(refused.code, SERVICE_NOT_AVAILABLE, "{:?}", refused.remark);

    // Metadata: an offset committed on the master reaches the slave's sync.
    let committed = w.call(
        UPDATE_CONSUMER_OFFSET,
        &[
            ("consumerGroup", "g"),
            ("topic", "HaTopic"),
            ("queueId", "1"),
            ("commitOffset", "42"),
        ],
        b"",
    );
    assert_eq!(committed.code, SUCCESS);
    wait_for("the slave's metadata sync", || {
        let r = ws.call(
            QUERY_CONSUMER_OFFSET,
            &[
                ("consumerGroup", "g"),
                ("topic", "HaTopic"),
                ("queueId", "1"),
            ],
            b"",
        );
        r.code == SUCCESS && r.field("offset") == "42"
    });
    assert!(slave.inner().topics.get("HaTopic").is_some());

    // The slave gone, the master says so at once.
    servers.rt.block_on(slave.shutdown()).unwrap();
    wait_for("the master to notice", || {
        master.inner().ha.slave_count() == 0
    });
    let r = send(&mut w, "HaTopic", 0, b"after the slave left");
    assert_eq!(r.code, SLAVE_NOT_AVAILABLE);
}

const PULL_MESSAGE: i32 = 11;
const PULL_RETRY_IMMEDIATELY: i32 = 20;

fn pull(w: &mut Wire, topic: &str, offset: i64) -> crate::wire::Frame {
    let offset = offset.to_string();
    w.call(
        PULL_MESSAGE,
        &[
            ("consumerGroup", "readers"),
            ("topic", topic),
            ("queueId", "0"),
            ("queueOffset", &offset),
            ("maxMsgNums", "32"),
            ("sysFlag", "4"),
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
fn a_slave_serves_readers_while_its_master_is_away() {
    let mut servers = Servers::start_with(|namesrv| {
        vec![
            ("namesrvAddr", namesrv.to_string()),
            ("slaveReadEnable", "true".into()),
            // Every reader counts as behind: the suggestion to read from the slave shows.
            ("accessMessageInMemoryMaxRatio", "0".into()),
        ]
    });
    let slave_dir = tempfile::tempdir().unwrap();
    let slave = start_slave(&servers, slave_dir.path());
    let master = servers.broker.as_ref().unwrap();
    wait_for("the slave to connect", || {
        master.inner().ha.slave_count() == 1
    });
    let mut w = Wire::connect(servers.broker_addr());
    for i in 0..20 {
        assert_eq!(
            send(&mut w, "ReadTopic", 0, format!("m{i}").as_bytes()).code,
            SUCCESS
        );
    }
    wait_for("the slave to catch up", || {
        slave.inner().store.max_offset_in_queue("ReadTopic", 0) == 20
    });
    let from_master = pull(&mut w, "ReadTopic", 0);
    assert_eq!(from_master.code, SUCCESS);
    assert_eq!(from_master.field("suggestWhichBrokerId"), "1");
    let mut ws = Wire::connect(slave.local_addr());
    let from_slave = pull(&mut ws, "ReadTopic", 0);
    assert_eq!(from_slave.code, SUCCESS);
    // Caught up, a reader of the slave is sent back to its live master.
    let caught_up = pull(&mut ws, "ReadTopic", 20);
    assert_eq!(caught_up.code, PULL_RETRY_IMMEDIATELY);
    assert_eq!(caught_up.field("suggestWhichBrokerId"), "0");

    // The master gone, the slave serves everyone.
    let master = servers.broker.take().unwrap();
    servers.rt.block_on(master.shutdown()).unwrap();
    wait_for("the slave to lose its master", || {
        !slave.inner().ha.master_connected()
    });
    let served = pull(&mut ws, "ReadTopic", 0);
    assert_eq!(served.code, SUCCESS);
    let caught_up = pull(&mut ws, "ReadTopic", 20);
    assert_eq!(caught_up.code, 19, "PULL_NOT_FOUND: {:?}", caught_up.remark);
    servers.rt.block_on(slave.shutdown()).unwrap();
}

/// The master loses its tail (as an unflushed page cache does in a power loss: here its last
/// records are zeroed while it is down) and restarts shorter than its slave: the slave cuts
/// itself back to the master's end, and what follows is byte-identical again. A slave that was
/// down while the master rolled several files catches up.
#[test]
fn a_slave_follows_a_master_that_lost_its_tail() {
    let mut servers = Servers::start_with(|namesrv| {
        vec![
            ("namesrvAddr", namesrv.to_string()),
            ("registerNameServerPeriod", "1000".into()),
        ]
    });
    let master_dir = servers
        .broker
        .as_ref()
        .unwrap()
        .inner()
        .settings
        .store
        .store_path_root_dir
        .clone();
    let slave_dir = tempfile::tempdir().unwrap();
    let slave = start_slave(&servers, slave_dir.path());
    let master = servers.broker.take().unwrap();
    wait_for("the slave to connect", || {
        master.inner().ha.slave_count() == 1
    });
    let mut w = Wire::connect(master.local_addr());
    for i in 0..100 {
        assert_eq!(
            send(&mut w, "TailTopic", 0, format!("a{i}").as_bytes()).code,
            SUCCESS
        );
    }
    let end = master.inner().store.commit_log_range().1;
    wait_for("the slave to copy", || {
        slave.inner().store.commit_log_range().1 == end
    });
    // The 91st record starts where the master will lose its tail.
    let r = master
        .inner()
        .store
        .get_message("TailTopic", 0, 90, 1, None);
    let cut = match rocketpy_protocol::message::record::decode(&r.messages[0], false).unwrap() {
        rocketpy_protocol::message::record::Decoded::Message(v) => v.physical_offset,
        other => panic!("not a message: {other:?}"),
    };
    servers.rt.block_on(master.shutdown()).unwrap();
    // Zero the master's records from `cut` on (the files are 1 MiB: all in the first).
    let file = master_dir.join("commitlog").join(format!("{:020}", 0));
    let mut bytes = std::fs::read(&file).unwrap();
    for b in &mut bytes[cut as usize..end as usize] {
        *b = 0;
    }
    std::fs::write(&file, &bytes).unwrap();
    let master = start_broker(&servers, &master_dir, &[]);
    assert_eq!(master.inner().store.commit_log_range().1, cut);
    // The CommitLog is cut first and its queues right after (under the put lock, which a
    // reader of the two ends does not take): wait for both.
    wait_for("the slave to cut back", || {
        slave.inner().store.commit_log_range().1 == cut
            && slave.inner().store.max_offset_in_queue("TailTopic", 0) == 90
    });
    wait_for("the slave to reconnect", || {
        master.inner().ha.slave_count() == 1
    });
    let mut w = Wire::connect(master.local_addr());
    for i in 0..50 {
        assert_eq!(
            send(&mut w, "TailTopic", 0, format!("b{i}").as_bytes()).code,
            SUCCESS
        );
    }
    let end = master.inner().store.commit_log_range().1;
    // The slave's consume queue follows its commit log: wait for both.
    wait_for("the slave to copy again", || {
        slave.inner().store.commit_log_range().1 == end
            && slave.inner().store.max_offset_in_queue("TailTopic", 0) == 140
    });

    // Far behind: the slave down while the master rolls several files.
    servers.rt.block_on(slave.shutdown()).unwrap();
    for i in 0..400usize {
        let body = vec![b'x'; 8000 + i];
        assert_eq!(send(&mut w, "TailTopic", 1, &body).code, SUCCESS);
    }
    let end = master.inner().store.commit_log_range().1;
    assert!(end > 3 * 1048576);
    let slave = start_slave(&servers, slave_dir.path());
    wait_for("the slave to catch up", || {
        slave.inner().store.commit_log_range().1 == end
    });
    master.inner().store.flush().unwrap();
    slave.inner().store.flush().unwrap();
    let (ours, theirs) = (commit_log(slave_dir.path()), commit_log(&master_dir));
    assert_eq!(ours.len(), theirs.len());
    for ((name, a), (_, b)) in ours.iter().zip(&theirs) {
        assert!(a == b, "{name} differs");
    }
    servers.rt.block_on(slave.shutdown()).unwrap();
    servers.rt.block_on(master.shutdown()).unwrap();
}

/// The HA port serves only the slaves `haAllowedAddresses` names: anyone else is closed before
/// a byte of the CommitLog is sent, and its offsets acknowledge nothing.
#[test]
fn an_unlisted_peer_gets_no_bytes_from_the_ha_port() {
    use std::io::{Read, Write};

    let servers = Servers::start_with(|namesrv| {
        vec![
            ("namesrvAddr", namesrv.to_string()),
            ("brokerRole", "SYNC_MASTER".into()),
            ("haAllowedAddresses", "192.0.2.10;198.51.100.*".into()),
        ]
    });
    let master = servers.broker.as_ref().unwrap();
    let mut w = Wire::connect(servers.broker_addr());
    assert_eq!(
        send(&mut w, "HaTopic", 0, b"secret").code,
        SLAVE_NOT_AVAILABLE
    );
    let ha: SocketAddr = master.inner().ha_addr.clone().unwrap().parse().unwrap();
    let mut peer = std::net::TcpStream::connect(ha).unwrap();
    peer.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    // Offset 0, then a report past everything stored: a slave's first words.
    let _ = peer.write_all(&0i64.to_be_bytes());
    let _ = peer.write_all(&i64::MAX.to_be_bytes());
    let mut got = Vec::new();
    let _ = peer.read_to_end(&mut got);
    assert!(got.is_empty(), "an unlisted peer read {} bytes", got.len());
    assert_eq!(master.inner().ha.slave_count(), 0);
    assert_eq!(master.inner().ha.acked_offset(), 0);
    // A broker started with the ACL on, bound beyond loopback and without the list, refuses.
    let dir = tempfile::tempdir().unwrap();
    let mut open = BrokerSettings::new(dir.path());
    for (k, v) in [
        ("aclEnable", "true"),
        ("bindAddress", "0.0.0.0"),
        ("listenPort", "0"),
    ] {
        open.set(k, v).unwrap();
    }
    let refused = servers.rt.block_on(Broker::start(open)).err().unwrap();
    assert!(
        refused.to_string().contains("haAllowedAddresses"),
        "{refused}"
    );
}
