//! SYNC_FLUSH: acknowledgement after the disk sync; concurrent puts share syncs; a slow disk
//! gives FLUSH_DISK_TIMEOUT with the message still stored.

use std::sync::Arc;
use std::time::Duration;

use rocketpy_store::sim::SimStorage;
use rocketpy_store::{FlushDiskType, PutStatus};

use crate::common::{numbered, open_sim, read_all, sim_config};

#[test]
fn concurrent_writers_all_acknowledged() {
    let sim = SimStorage::new();
    sim.set_sync_delay(Duration::from_millis(2));
    let c = sim_config(FlushDiskType::SyncFlush);
    let store = open_sim(&sim, &c);
    let started = std::time::Instant::now();
    let handles: Vec<_> = (0..16)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                for i in 0..25 {
                    let r = store.put_message(numbered("T", t, i)).unwrap();
                    assert_eq!(r.status, PutStatus::PutOk);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    // 400 puts at 2 ms a sync would take 800 ms one by one; shared syncs take far less.
    assert!(
        started.elapsed() < Duration::from_millis(700),
        "{:?}",
        started.elapsed()
    );
    for t in 0..16 {
        assert_eq!(read_all(&store, "T", t).len(), 25);
    }
}

#[test]
fn slow_disk_gives_flush_disk_timeout() {
    let sim = SimStorage::new();
    let mut c = sim_config(FlushDiskType::SyncFlush);
    c.sync_flush_timeout = 20;
    let store = open_sim(&sim, &c);
    sim.set_sync_delay(Duration::from_millis(200));
    let r = store.put_message(numbered("T", 0, 1)).unwrap();
    assert_eq!(r.status, PutStatus::FlushDiskTimeout);
    sim.set_sync_delay(Duration::ZERO);
    assert_eq!(read_all(&store, "T", 0).len(), 1, "stored all the same");
}

/// Explicit flushes from several threads, beside the flush thread: every one succeeds (they
/// all write the checkpoint through one temporary file, one writer at a time).
#[test]
fn concurrent_explicit_flushes_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::common::open(dir.path());
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                for i in 0..50 {
                    store.put_message(numbered("T", t, i)).unwrap();
                    store.flush().unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    store.shutdown().unwrap();
}
