//! Replication at the store level: a slave store fed the master's CommitLog bytes in frames
//! of arbitrary sizes ends up byte-identical, with the same consume queues.

use std::path::Path;
use std::sync::Arc;

use rocketpy_store::replica::ReplicaWriter;
use rocketpy_store::{BrokerRole, MessageStore, StoreError};

use crate::common::{body_for, config, numbered};

const FILE: usize = 64 * 1024;

fn open(root: &Path, role: BrokerRole) -> Arc<MessageStore> {
    let mut c = config(root, FILE, 20 * 100);
    c.broker_role = role;
    MessageStore::open(c).unwrap()
}

/// Sends the master's bytes from the slave's offset in frames of `frame` bytes (as the HA
/// connection does: never across a file end); an empty slave from `empty_from`.
fn replicate(master: &MessageStore, writer: &mut ReplicaWriter<'_>, frame: usize, empty_from: i64) {
    let (_, end) = master.commit_log_range();
    let mut at = match writer.offset() {
        0 => empty_from,
        at => at,
    };
    while at < end {
        let data = master.commit_log_data(at, frame).expect("master bytes");
        writer.push(at, &data).unwrap();
        at += data.len() as i64;
    }
}

fn files(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root.join("commitlog")).unwrap() {
        let e = e.unwrap();
        out.push((
            e.file_name().to_string_lossy().into_owned(),
            std::fs::read(e.path()).unwrap(),
        ));
    }
    out.sort();
    out
}

fn queue_bodies(store: &MessageStore, topic: &str, queue: i32) -> Vec<Vec<u8>> {
    let mut offset = store.min_offset_in_queue(topic, queue);
    let mut out = Vec::new();
    while offset < store.max_offset_in_queue(topic, queue) {
        let r = store.get_message(topic, queue, offset, 32, None);
        out.extend(r.messages.iter().map(|m| crate::common::body_of(m)));
        assert!(r.next_begin_offset > offset);
        offset = r.next_begin_offset;
    }
    out
}

#[test]
fn slave_commit_log_is_byte_identical_across_file_rolls() {
    let (md, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let master = open(md.path(), BrokerRole::SyncMaster);
    let slave = open(sd.path(), BrokerRole::Slave);
    let mut writer = ReplicaWriter::new(&slave);
    // Frames of odd sizes split records anywhere; sizes 100 B .. 1 KB roll files often.
    for (round, frame) in [(0u32, 997usize), (1, 32 * 1024), (2, 13)].into_iter() {
        for i in round * 300..(round + 1) * 300 {
            master
                .put_message(numbered("T", (i % 3) as i32, i))
                .unwrap();
        }
        replicate(&master, &mut writer, frame, 0);
    }
    assert!(
        master.commit_log_files().len() > 3,
        "files should have rolled"
    );
    assert_eq!(writer.offset(), master.commit_log_range().1);
    slave.flush().unwrap();
    master.flush().unwrap();
    let (ours, theirs) = (files(sd.path()), files(md.path()));
    let names = |f: &[(String, Vec<u8>)]| f.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&ours), names(&theirs));
    for ((name, a), (_, b)) in ours.iter().zip(&theirs) {
        assert!(a == b, "{name} differs");
    }
    for q in 0..3 {
        assert_eq!(slave.max_offset_in_queue("T", q), 300);
        assert_eq!(queue_bodies(&slave, "T", q), queue_bodies(&master, "T", q));
    }
    // The index follows the slave's CommitLog as the master's.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while slave.query_message("T", "k5", 10, 0, i64::MAX).is_empty() {
        assert!(std::time::Instant::now() < deadline, "slave never indexed");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // A slave refuses writes of its own.
    let refused = slave.put_message(numbered("T", 0, 1)).unwrap_err();
    assert!(matches!(refused, StoreError::SlaveRole), "{refused}");
    master.shutdown().unwrap();
    slave.shutdown().unwrap();

    // After a restart the slave continues where its complete records end.
    let master = open(md.path(), BrokerRole::SyncMaster);
    let slave = open(sd.path(), BrokerRole::Slave);
    for i in 900..1000 {
        master.put_message(numbered("T", 0, i)).unwrap();
    }
    let mut writer = ReplicaWriter::new(&slave);
    replicate(&master, &mut writer, 5000, 0);
    assert_eq!(queue_bodies(&slave, "T", 0), queue_bodies(&master, "T", 0));
    assert_eq!(slave.max_offset_in_queue("T", 0), 400);
    master.shutdown().unwrap();
    slave.shutdown().unwrap();
}

#[test]
fn empty_slave_starts_at_the_masters_newest_file() {
    let (md, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let master = open(md.path(), BrokerRole::AsyncMaster);
    for i in 0..500 {
        master.put_message(numbered("T", 0, i)).unwrap();
    }
    let slave = open(sd.path(), BrokerRole::Slave);
    let mut writer = ReplicaWriter::new(&slave);
    assert_eq!(writer.offset(), 0);
    replicate(&master, &mut writer, 4096, master.replica_start_offset());
    let start = master.replica_start_offset();
    assert!(start > 0);
    assert_eq!(
        slave.commit_log_range(),
        (start, master.commit_log_range().1)
    );
    // Its queue starts where the newest file's first message is, with the master's numbers.
    let first = slave.min_offset_in_queue("T", 0);
    assert!(first > 0 && first < 500, "first {first}");
    assert_eq!(slave.max_offset_in_queue("T", 0), 500);
    let got = slave.get_message("T", 0, first, 1, None);
    assert_eq!(
        crate::common::body_of(&got.messages[0]),
        body_for(first as u32)
    );
    master.shutdown().unwrap();
    slave.shutdown().unwrap();
}

#[test]
fn frames_out_of_place_or_damaged_write_nothing() {
    let (md, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let master = open(md.path(), BrokerRole::AsyncMaster);
    for i in 0..10 {
        master.put_message(numbered("T", 0, i)).unwrap();
    }
    let slave = open(sd.path(), BrokerRole::Slave);
    let mut writer = ReplicaWriter::new(&slave);
    let data = master.commit_log_data(0, 1 << 20).unwrap();
    writer.push(0, &data[..500]).unwrap();
    // A frame that does not continue the last one.
    let err = writer.push(700, &data[700..900]).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::ReplicaOffset {
                expected: 500,
                got: 700
            }
        ),
        "{err}"
    );
    // A damaged byte in a body fails the record's CRC: nothing of it is written.
    let mut bad = data[500..].to_vec();
    let last = bad.len() - 1;
    bad[last] ^= 0xFF;
    let before = slave.commit_log_range().1;
    assert!(matches!(
        writer.push(500, &bad),
        Err(StoreError::Corrupt { .. })
    ));
    let written = slave.commit_log_range().1;
    assert!(written >= before && written < master.commit_log_range().1);
    assert!(slave.max_offset_in_queue("T", 0) < 10);
    master.shutdown().unwrap();
    slave.shutdown().unwrap();
}

#[test]
fn slave_ahead_of_its_master_cuts_back() {
    let (md, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let master = open(md.path(), BrokerRole::AsyncMaster);
    for i in 0..200 {
        master.put_message(numbered("T", 0, i)).unwrap();
    }
    let slave = open(sd.path(), BrokerRole::Slave);
    let mut writer = ReplicaWriter::new(&slave);
    replicate(&master, &mut writer, 8192, 0);
    // The master's record 150 starts where it will lose its tail.
    let cut = master
        .get_message("T", 0, 150, 1, None)
        .messages
        .first()
        .map(
            |m| match rocketpy_protocol::message::record::decode(m, false).unwrap() {
                rocketpy_protocol::message::record::Decoded::Message(v) => v.physical_offset,
                _ => unreachable!(),
            },
        )
        .unwrap();
    slave.truncate_replica(cut).unwrap();
    assert_eq!(slave.commit_log_range().1, cut);
    assert_eq!(slave.max_offset_in_queue("T", 0), 150);
    // New records from the (restarted) master continue the numbering from there.
    let mut writer = ReplicaWriter::new(&slave);
    assert_eq!(writer.offset(), cut);
    let mut at = cut;
    while at < master.commit_log_range().1 {
        let data = master.commit_log_data(at, 3000).unwrap();
        writer.push(at, &data).unwrap();
        at += data.len() as i64;
    }
    assert_eq!(slave.max_offset_in_queue("T", 0), 200);
    master.shutdown().unwrap();
    slave.shutdown().unwrap();
}

/// Controller mode: reads stop before the first record past the confirm offset (in queue
/// order) — not the broker's own, unconfirmed reads — and a role changed to slave refuses
/// puts at once.
#[test]
fn reads_stop_at_the_read_limit_and_a_deposed_master_refuses_puts() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), BrokerRole::SyncMaster);
    let limit = Arc::new(std::sync::atomic::AtomicI64::new(0));
    let l = limit.clone();
    assert!(store.set_read_limit(Arc::new(
        move || l.load(std::sync::atomic::Ordering::Acquire)
    )));
    let mut ends = Vec::new();
    for i in 0..3 {
        let r = store.put_message(numbered("T", 0, i)).unwrap();
        ends.push(r.append.wrote_offset + i64::from(r.append.wrote_bytes));
    }
    let read = |n| crate::common::read_all(&store, "T", 0).len() == n;
    assert!(read(0));
    // The broker's own services read everything the store holds.
    let own = store.get_message_unconfirmed("T", 0, 0, 32);
    assert_eq!(own.messages.len(), 3);
    limit.store(ends[1], std::sync::atomic::Ordering::Release);
    assert!(read(2));
    limit.store(ends[1] + 1, std::sync::atomic::Ordering::Release);
    assert!(read(2));
    limit.store(ends[2], std::sync::atomic::Ordering::Release);
    assert!(read(3));
    store.set_role(BrokerRole::Slave);
    assert!(matches!(
        store.put_message(numbered("T", 0, 9)),
        Err(StoreError::SlaveRole)
    ));
}
