//! Power loss on the simulated disk: unsynced bytes lost or torn, media corruption, damaged
//! consume queues, a missing checkpoint. After every case: each acknowledged message is
//! present and intact, no queue offset is handed out twice, and writing continues.

use std::path::Path;

use rocketpy_store::sim::{PowerLoss, SimStorage};
use rocketpy_store::{FlushDiskType, MessageStore, PutStatus};

use crate::common::{body_for, number_of, numbered, open_sim, read_all, sim_config};

/// Writes `acked` messages under SYNC_FLUSH (acknowledged), then `unacked` more that do not
/// wait for the disk, then "loses power". Returns the disk.
fn run(loss: PowerLoss, acked: u32, unacked: u32) -> (SimStorage, rocketpy_store::StoreConfig) {
    let sim = SimStorage::new();
    let c = sim_config(FlushDiskType::SyncFlush);
    let store = open_sim(&sim, &c);
    for i in 0..acked {
        let r = store.put_message(numbered("T", 0, i)).unwrap();
        assert_eq!(r.status, PutStatus::PutOk);
        assert_eq!(r.append.logics_offset, i as i64);
    }
    for i in acked..acked + unacked {
        let mut m = numbered("T", 0, i);
        m.properties.push_str("WAIT\u{1}false\u{2}");
        store.put_message(m).unwrap();
    }
    store.halt();
    drop(store);
    sim.power_loss(loss);
    (sim, c)
}

/// The invariants after recovery.
fn check(store: &MessageStore, acked: u32) -> Vec<u32> {
    let all = read_all(store, "T", 0);
    let numbers: Vec<u32> = all.iter().map(|(_, b)| number_of(b)).collect();
    for (q, body) in &all {
        assert_eq!(*body, body_for(number_of(body)), "message intact");
        assert_eq!(
            *q,
            number_of(body) as i64,
            "offset matches what the put returned"
        );
    }
    for i in 0..acked {
        assert!(numbers.contains(&i), "acknowledged message {i} lost");
    }
    let next = store.max_offset_in_queue("T", 0);
    let r = store.put_message(numbered("T", 0, 999_999)).unwrap();
    assert_eq!(r.append.logics_offset, next, "writing continues at the end");
    assert!(next >= acked as i64, "no acknowledged offset reused");
    numbers
}

#[test]
fn unsynced_bytes_dropped() {
    let (sim, c) = run(PowerLoss::DropUnsynced, 120, 40);
    let store = open_sim(&sim, &c);
    assert!(store.was_abnormal_shutdown());
    let numbers = check(&store, 120);
    assert_eq!(
        numbers,
        (0..120).collect::<Vec<_>>(),
        "exactly the synced messages survive"
    );
}

#[test]
fn torn_tail_at_every_length() {
    for keep in [1usize, 7, 50, 91, 300, 1000, 2500] {
        let (sim, c) = run(PowerLoss::KeepFirst(keep), 60, 5);
        let store = open_sim(&sim, &c);
        let numbers = check(&store, 60);
        assert!(
            numbers.len() >= 60 && numbers.len() <= 65,
            "keep={keep}: {}",
            numbers.len()
        );
        store.shutdown().unwrap();
        assert_eq!(sim.unreserved_writes(), 0, "a write without disk blocks");
    }
}

#[test]
fn random_page_loss() {
    for seed in 1..=12u64 {
        let (sim, c) = run(PowerLoss::RandomPages(seed), 80, 60);
        let store = open_sim(&sim, &c);
        check(&store, 80);
        store.shutdown().unwrap();
        assert_eq!(sim.unreserved_writes(), 0, "a write without disk blocks");
    }
}

#[test]
fn flipped_byte_in_the_middle_keeps_what_follows() {
    let sim = SimStorage::new();
    let c = sim_config(FlushDiskType::SyncFlush);
    let store = open_sim(&sim, &c);
    let mut victim = None;
    for i in 0..200 {
        let r = store.put_message(numbered("T", 0, i)).unwrap();
        if i == 150 {
            victim = Some(r.append);
        }
    }
    store.shutdown().unwrap();
    drop(store);
    let victim = victim.unwrap();
    let file_size = c.mapped_file_size_commit_log as i64;
    let path = Path::new("/sim/store/commitlog").join(format!(
        "{:020}",
        victim.wrote_offset / file_size * file_size
    ));
    // A byte inside the body: the CRC no longer matches.
    sim.corrupt(
        &path,
        (victim.wrote_offset % file_size) as usize + 100,
        0x40,
    );

    let store = open_sim(&sim, &c);
    assert_eq!(
        store.bad_ranges().len(),
        1,
        "the damaged record is reported"
    );
    let numbers: Vec<u32> = read_all(&store, "T", 0)
        .iter()
        .map(|(_, b)| number_of(b))
        .collect();
    let expected: Vec<u32> = (0..200).filter(|i| *i != 150).collect();
    assert_eq!(
        numbers, expected,
        "only the damaged message is missing; RocketMQ would cut 151..199 too"
    );
    let r = store.put_message(numbered("T", 0, 500)).unwrap();
    assert_eq!(r.append.logics_offset, 200);

    // A damaged size field: resynchronisation finds the next record by its own offset.
    store.shutdown().unwrap();
    drop(store);
    sim.corrupt(&path, (victim.wrote_offset % file_size) as usize + 1, 0x7F);
    let store = open_sim(&sim, &c);
    let numbers: Vec<u32> = read_all(&store, "T", 0)
        .iter()
        .map(|(_, b)| number_of(b))
        .collect();
    assert!(numbers.contains(&199) && numbers.contains(&500) && !numbers.contains(&150));
}

#[test]
fn empty_or_truncated_last_consume_queue_file() {
    for cut in [0usize, 15, 20 * 37 + 3] {
        let sim = SimStorage::new();
        let c = sim_config(FlushDiskType::SyncFlush);
        let store = open_sim(&sim, &c);
        for i in 0..250 {
            store.put_message(numbered("T", 0, i)).unwrap();
        }
        store.shutdown().unwrap();
        drop(store);
        // 100 units per file: files 0, 2000, 4000; the last holds units 200..249.
        let last = Path::new("/sim/store/consumequeue/T/0").join(format!("{:020}", 4000));
        sim.truncate(&last, cut);
        let store = open_sim(&sim, &c);
        let numbers: Vec<u32> = read_all(&store, "T", 0)
            .iter()
            .map(|(_, b)| number_of(b))
            .collect();
        assert_eq!(numbers, (0..250).collect::<Vec<_>>(), "cut={cut}");
        assert_eq!(
            store
                .put_message(numbered("T", 0, 250))
                .unwrap()
                .append
                .logics_offset,
            250
        );
        store.shutdown().unwrap();
    }
}

#[test]
fn missing_checkpoint_after_a_crash() {
    let (sim, c) = run(PowerLoss::DropUnsynced, 300, 0);
    sim.remove_path(Path::new("/sim/store/checkpoint"));
    let store = open_sim(&sim, &c);
    assert!(store.was_abnormal_shutdown());
    check(&store, 300);
}

#[test]
fn lost_consume_queue_files_are_rebuilt_from_the_whole_log() {
    let sim = SimStorage::new();
    let c = sim_config(FlushDiskType::SyncFlush);
    let store = open_sim(&sim, &c);
    for i in 0..600 {
        store.put_message(numbered("T", (i % 2) as i32, i)).unwrap();
    }
    store.shutdown().unwrap();
    drop(store);
    assert!(
        sim.paths()
            .iter()
            .filter(|p| p.starts_with("/sim/store/commitlog"))
            .count()
            > 4
    );
    for p in sim.paths() {
        if p.starts_with("/sim/store/consumequeue/T/1") {
            sim.remove_path(&p);
        }
    }
    let store = open_sim(&sim, &c);
    let odd: Vec<u32> = read_all(&store, "T", 1)
        .iter()
        .map(|(_, b)| number_of(b))
        .collect();
    assert_eq!(odd, (0..600).filter(|i| i % 2 == 1).collect::<Vec<_>>());
}

mod garbage {
    use std::path::PathBuf;

    use proptest::prelude::*;
    use rocketpy_store::sim::SimStorage;
    use rocketpy_store::{FlushDiskType, MessageStore};

    use crate::common::{numbered, open_sim, sim_config};

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Random bytes written over store files: opening reports or recovers, reading every
        /// queue works, and nothing panics.
        #[test]
        fn random_damage_never_panics(
            damage in proptest::collection::vec((0usize..3, 0usize..70_000, proptest::collection::vec(any::<u8>(), 1..64)), 1..12),
        ) {
            let sim = SimStorage::new();
            let c = sim_config(FlushDiskType::SyncFlush);
            let store = open_sim(&sim, &c);
            for i in 0..300 {
                store.put_message(numbered("T", (i % 2) as i32, i)).unwrap();
            }
            store.shutdown().unwrap();
            drop(store);
            let files: Vec<PathBuf> = sim.paths().into_iter().filter(|p| {
                p.starts_with("/sim/store/commitlog") || p.starts_with("/sim/store/consumequeue") || p.starts_with("/sim/store/index")
            }).collect();
            for (which, at, bytes) in damage {
                let path = &files[which * 7 % files.len()];
                let len = sim.durable(path).map(|d| d.len()).unwrap_or(0);
                for (k, b) in bytes.iter().enumerate() {
                    if len > 0 {
                        sim.corrupt(path, (at + k) % len, b | 1);
                    }
                }
            }
            if let Ok(store) = MessageStore::open_with(c.clone(), sim.shared()) {
                for q in 0..2 {
                    let mut offset = store.min_offset_in_queue("T", q);
                    for _ in 0..50 {
                        let r = store.get_message("T", q, offset, 32, None);
                        if r.next_begin_offset <= offset { break; }
                        offset = r.next_begin_offset;
                    }
                }
                let _ = store.query_message("T", "k1", 10, 0, i64::MAX);
                let _ = store.put_message(numbered("T", 0, 9999));
            }
        }
    }
}
