//! Query by key through the IndexFile, and look-up by offset message id.

use rocketpy_protocol::message::record::{self, Decoded};
use rocketpy_store::sim::{PowerLoss, SimStorage};
use rocketpy_store::{FlushDiskType, MessageStore};

use crate::common::{number_of, numbered, open_sim, sim_config};

fn numbers(records: &[bytes::Bytes]) -> Vec<u32> {
    records
        .iter()
        .map(|r| match record::decode(r, true).unwrap() {
            Decoded::Message(v) => number_of(v.body),
            other => panic!("{other:?}"),
        })
        .collect()
}

fn put(store: &MessageStore, n: u32) -> Vec<rocketpy_store::AppendResult> {
    (0..n)
        .map(|i| {
            store
                .put_message(numbered("T", (i % 3) as i32, i))
                .unwrap()
                .append
        })
        .collect()
}

#[test]
fn query_by_uniq_key_and_keys_newest_first() {
    let sim = SimStorage::new();
    let c = sim_config(FlushDiskType::AsyncFlush);
    let store = open_sim(&sim, &c);
    let appended = put(&store, 250); // 250 x 3 keys > 400 entries: the index rolls
    assert_eq!(
        numbers(&store.query_message("T", "u17", 10, 0, i64::MAX)),
        vec![17]
    );
    assert_eq!(
        numbers(&store.query_message("T", "k42", 10, 0, i64::MAX)),
        vec![42]
    );
    let common = numbers(&store.query_message("T", "common", 5, 0, i64::MAX));
    assert_eq!(
        common,
        vec![249, 248, 247, 246, 245],
        "newest first, at most max_num"
    );
    assert!(
        store
            .query_message("Other", "u17", 10, 0, i64::MAX)
            .is_empty(),
        "keys are per topic"
    );
    assert!(
        store.query_message("T", "u17", 10, 0, 1).is_empty(),
        "outside the time range"
    );

    let r = &appended[77];
    let by_id = store
        .look_message_by_offset_msg_id(&r.msg_id())
        .unwrap()
        .unwrap();
    assert_eq!(numbers(&[by_id]), vec![77]);
    assert!(store.look_message_by_offset_msg_id("not-an-id").is_err());
    assert!(
        std::fs::read_dir("/nonexistent").is_err(),
        "sanity: the simulated store wrote nothing to the real disk"
    );
}

#[test]
fn index_survives_clean_restart_and_is_rebuilt_after_a_crash() {
    let sim = SimStorage::new();
    let c = sim_config(FlushDiskType::SyncFlush);
    let store = open_sim(&sim, &c);
    put(&store, 150);
    store.shutdown().unwrap();
    drop(store);
    let store = open_sim(&sim, &c);
    assert_eq!(
        numbers(&store.query_message("T", "u3", 10, 0, i64::MAX)),
        vec![3]
    );
    put(&store, 0);
    for i in 150..200 {
        store.put_message(numbered("T", 0, i)).unwrap();
    }
    store.halt();
    drop(store);
    sim.power_loss(PowerLoss::DropUnsynced);
    let store = open_sim(&sim, &c);
    for i in [3u32, 120, 199] {
        assert_eq!(
            numbers(&store.query_message("T", &format!("u{i}"), 10, 0, i64::MAX)),
            vec![i],
            "u{i}"
        );
    }
    let common = store.query_message("T", "common", 1000, 0, i64::MAX);
    assert_eq!(common.len(), 200, "every message indexed exactly once");
}
