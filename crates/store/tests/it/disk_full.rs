//! A store whose disk runs out of space: puts are refused with an error (never a signal:
//! every byte written through a mapping had its blocks reserved first), a refused batch
//! stores nothing, everything acknowledged stays readable (also after a restart), and puts
//! work again once space returns. Also: the disk footprint follows the data.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rocketpy_store::sim::SimStorage;
use rocketpy_store::{FlushDiskType, GetMessageStatus, MessageStore, StoreError};

use crate::common::{body_for, numbered, open_sim, sim_config};

fn queue_of(i: u32) -> (String, i32) {
    (format!("T{}", i % 7), (i % 3) as i32)
}

/// Reads every message of every queue and checks it against what was acknowledged.
fn check_acked(store: &MessageStore, acked: &[u32]) {
    let mut by_queue: std::collections::BTreeMap<(String, i32), Vec<u32>> = Default::default();
    for &i in acked {
        by_queue.entry(queue_of(i)).or_default().push(i);
    }
    for ((topic, queue), ids) in by_queue {
        assert_eq!(
            store.max_offset_in_queue(&topic, queue),
            ids.len() as i64,
            "{topic}/{queue}: a unit per acknowledged message, none for refused ones"
        );
        let mut got = Vec::new();
        while got.len() < ids.len() {
            let r = store.get_message(&topic, queue, got.len() as i64, 32, None);
            assert_eq!(
                r.status,
                GetMessageStatus::Found,
                "{topic}/{queue} at {}",
                got.len()
            );
            for m in &r.messages {
                let body = crate::common::body_of(m);
                let id = u32::from_be_bytes(body[..4].try_into().unwrap());
                assert!(
                    body == body_for(id),
                    "{topic}/{queue}: body of {id} damaged"
                );
                got.push(id);
            }
        }
        assert_eq!(got, ids, "{topic}/{queue}");
    }
}

#[test]
fn full_disk_refuses_puts_keeps_data_and_recovers() {
    let sim = SimStorage::new();
    let mut c = sim_config(FlushDiskType::SyncFlush);
    // Only the failed reservation refuses (not the usage ratio), and retention deletes
    // nothing unexpired: every acknowledged message must stay.
    c.disk_space_warning_level_ratio = 100;
    c.clean_file_forcibly_enable = false;
    sim.set_foreign_usage(1 << 20, 0);
    let store = open_sim(&sim, &c);

    let mut acked = Vec::new();
    let mut refused = None;
    let mut i = 0u32;
    while refused.is_none() && i < 100_000 {
        // Singles and batches of 5 to one queue, alternating.
        let batch: Vec<u32> = if i % 2 == 0 {
            vec![i]
        } else {
            (0..5).map(|k| i + 7 * 3 * k).collect()
        };
        let msgs: Vec<_> = batch
            .iter()
            .map(|&n| {
                let (t, q) = queue_of(n);
                numbered(&t, q, n)
            })
            .collect();
        match store.put_messages(&msgs) {
            Ok(_) => acked.extend(&batch),
            Err(e) => refused = Some(e),
        }
        i += if i % 2 == 0 { 1 } else { 5 * 21 };
    }
    let err = refused.expect("the disk filled up");
    assert!(err.is_no_space(), "{err}");
    assert!(acked.len() > 100, "{} acknowledged", acked.len());
    assert!(
        matches!(
            store.put_message(numbered("T0", 0, 1)).unwrap_err(),
            StoreError::DiskFull { .. }
        ),
        "later puts are refused at once"
    );
    check_acked(&store, &acked);
    assert_eq!(sim.unreserved_writes(), 0, "every write had its blocks");

    // Space returns; a clean-up round sees it and puts are accepted again.
    sim.set_foreign_usage(1 << 30, 0);
    let ratio = store.disk_used_ratio().unwrap();
    store.clean_files(1, ratio, false).unwrap();
    let n = 1_000_000;
    let (t, q) = queue_of(n);
    store.put_message(numbered(&t, q, n)).unwrap();
    acked.push(n);
    check_acked(&store, &acked);
    store.shutdown().unwrap();

    let store = open_sim(&sim, &c);
    check_acked(&store, &acked);
    store.shutdown().unwrap();
    assert_eq!(sim.unreserved_writes(), 0);
}

/// Bytes of disk used under `dir`, as `du` counts them.
fn du(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        total += meta.blocks() * 512;
        if meta.is_dir() {
            total += du(&entry.path());
        }
    }
    total
}

#[test]
fn footprint_follows_the_data() {
    let dir = tempfile::tempdir().unwrap();
    // RocketMQ's file sizes except a 64 MiB CommitLog (`rocketpy dev`'s).
    let mut c = rocketpy_store::StoreConfig::new(dir.path());
    c.mapped_file_size_commit_log = 64 << 20;
    let store = MessageStore::open(c).unwrap();
    let queues = 1000;
    for q in 0..queues {
        store
            .put_message(numbered(&format!("Topic{}", q / 4), q % 4, q as u32))
            .unwrap();
    }
    store.shutdown().unwrap();
    let used = du(dir.path());
    // Per queue: one 4 KiB page (RocketMQ's 5.7 MiB per file, written as zeroes, before);
    // the CommitLog: the window reserved ahead of the writer; the index: its slot table.
    let cq = du(&dir.path().join("consumequeue"));
    assert!(
        cq <= queues as u64 * 3 * 4096,
        "consume queues use {cq} bytes for {queues} queues"
    );
    assert!(used < 64 << 20, "store uses {used} bytes");
}
