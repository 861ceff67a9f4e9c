//! Delayed messages: stored in SCHEDULE_TOPIC_XXXX, delivered on their real topic once due,
//! exactly once across a crash.

use std::time::{Duration, Instant};

use rocketpy_protocol::message::properties;
use rocketpy_protocol::message::record::{self, Decoded};
use rocketpy_protocol::topic::SCHEDULE_TOPIC;
use rocketpy_store::sim::{PowerLoss, SimStorage};
use rocketpy_store::{FlushDiskType, GetMessageStatus, MessageStore};

use crate::common::{number_of, numbered, open_sim, read_all, sim_config};

fn delayed(i: u32, level: u32) -> rocketpy_protocol::message::record::MessageToStore {
    let mut m = numbered("Real", 2, i);
    m.properties
        .push_str(&properties::encode([("DELAY", level.to_string().as_str())]));
    m
}

fn wait_for(store: &MessageStore, n: usize, timeout: Duration) -> Vec<(i64, Vec<u8>)> {
    let deadline = Instant::now() + timeout;
    loop {
        let got = read_all(store, "Real", 2);
        if got.len() >= n || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn delayed_message_reappears_on_its_topic_once_due() {
    let sim = SimStorage::new();
    let mut c = sim_config(FlushDiskType::AsyncFlush);
    c.message_delay_level = "1s 2s 3s".into();
    let store = open_sim(&sim, &c);
    let started = Instant::now();
    let r = store.put_message(delayed(7, 2)).unwrap();
    assert_eq!(
        store.max_offset_in_queue("Real", 2),
        0,
        "not on the real topic yet"
    );
    assert_eq!(
        store.max_offset_in_queue(SCHEDULE_TOPIC, 1),
        1,
        "level 2 -> queue 1"
    );
    let sched = store.get_message(SCHEDULE_TOPIC, 1, 0, 1, None);
    let Decoded::Message(v) = record::decode(&sched.messages[0], true).unwrap() else {
        panic!()
    };
    assert_eq!(properties::find(v.properties, "REAL_TOPIC"), Some("Real"));
    assert_eq!(properties::find(v.properties, "REAL_QID"), Some("2"));
    let unit = store
        .find_consume_queue(SCHEDULE_TOPIC, 1)
        .unwrap()
        .get(0)
        .unwrap();
    assert_eq!(
        unit.tags_code,
        r.append.store_timestamp + 2000,
        "tags code = delivery time"
    );

    let got = wait_for(&store, 1, Duration::from_secs(10));
    assert!(
        started.elapsed() >= Duration::from_millis(1900),
        "not before it is due"
    );
    assert_eq!(got.len(), 1);
    assert_eq!(number_of(&got[0].1), 7);
    let delivered = store.get_message("Real", 2, 0, 1, None);
    let Decoded::Message(v) = record::decode(&delivered.messages[0], true).unwrap() else {
        panic!()
    };
    assert_eq!(v.topic, "Real");
    assert!(properties::find(v.properties, "DELAY").is_none());
    assert_eq!(properties::find(v.properties, "UNIQ_KEY"), Some("u7"));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(store.max_offset_in_queue("Real", 2), 1, "delivered once");
    assert_eq!(
        store.get_message("Real", 2, 1, 1, None).status,
        GetMessageStatus::OffsetOverflowOne
    );
}

#[test]
fn delivery_is_not_repeated_after_a_crash() {
    let sim = SimStorage::new();
    let mut c = sim_config(FlushDiskType::SyncFlush);
    c.message_delay_level = "1s".into();
    c.flush_delay_offset_interval = 3_600_000; // never saved while running
    let store = open_sim(&sim, &c);
    for i in 0..5 {
        store.put_message(delayed(i, 1)).unwrap();
    }
    assert_eq!(wait_for(&store, 5, Duration::from_secs(10)).len(), 5);
    store.flush().unwrap();
    store.halt();
    drop(store);
    sim.power_loss(PowerLoss::DropUnsynced);
    let store = open_sim(&sim, &c);
    std::thread::sleep(Duration::from_millis(1500));
    let got: Vec<u32> = read_all(&store, "Real", 2)
        .iter()
        .map(|(_, b)| number_of(b))
        .collect();
    assert_eq!(got, vec![0, 1, 2, 3, 4], "each delivered exactly once");
    assert_eq!(store.delay_offsets().get(&1), Some(&5));
}
