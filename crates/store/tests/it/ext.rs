//! The consume-queue ext file (`enableConsumeQueueExt`): units name their ext units, readers
//! see the real tags codes and the bit maps dispatch computed, and recovery keeps the two
//! files in step after a consume queue lost its tail.

use std::sync::Arc;

use rocketpy_protocol::message::java_hash::tags_code;
use rocketpy_store::consume_queue_ext::{is_ext_addr, CqExtUnit};
use rocketpy_store::dispatch::BitMapCalculator;
use rocketpy_store::{MessageFilter, MessageStore};

use crate::common::{config, message};

/// Bit map `[1]` for tag A, `[2]` for others.
struct ByTag;

impl BitMapCalculator for ByTag {
    fn bit_map(&self, _topic: &str, properties: &str) -> Option<Vec<u8>> {
        Some(vec![if properties.contains("TAGS\u{1}A") {
            1
        } else {
            2
        }])
    }
}

/// Keeps messages whose bit map is `[1]`, never reading others.
struct BitOne;

impl MessageFilter for BitOne {
    fn matches_unit(&self, _tags_code: i64, ext: Option<&CqExtUnit>) -> bool {
        ext.is_some_and(|e| e.bit_map.as_ref() == [1])
    }
}

fn open(root: &std::path::Path) -> Arc<MessageStore> {
    let mut c = config(root, 64 * 1024, 20 * 100);
    c.enable_consume_queue_ext = true;
    c.mapped_file_size_consume_queue_ext = 4096;
    MessageStore::open_with_bit_maps(c, Arc::new(ByTag)).unwrap()
}

#[test]
fn ext_units_carry_tags_codes_and_bit_maps_through_recovery() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    for i in 0..10u8 {
        let tag = if i % 2 == 0 { "A" } else { "B" };
        store.put_message(message("T", 0, vec![i], tag)).unwrap();
    }
    let check = |store: &MessageStore| {
        let cq = store.find_consume_queue("T", 0).unwrap();
        for i in 0..10 {
            let tag = if i % 2 == 0 { "A" } else { "B" };
            let (unit, ext) = cq.get_ext(i).unwrap();
            assert_eq!(unit.tags_code, tags_code(Some(tag)), "the real tags code");
            assert_eq!(
                ext.unwrap().bit_map.as_ref(),
                [if tag == "A" { 1 } else { 2 }]
            );
        }
        let got = store.get_message("T", 0, 0, 32, Some(&BitOne));
        assert_eq!(got.queue_offsets, [0, 2, 4, 6, 8]);
        assert_eq!(got.commit_log_bytes_read, got.total_bytes);
        // Tag filters see real tags codes.
        let code_b = tags_code(Some("B"));
        let by_tag = move |code: i64| code == code_b;
        let got = store.get_message("T", 0, 0, 32, Some(&by_tag));
        assert_eq!(got.queue_offsets, [1, 3, 5, 7, 9]);
    };
    check(&store);
    // On disk, the unit's tags-code field is the ext address.
    let cq_file = dir.path().join("consumequeue/T/0/00000000000000000000");
    let raw = std::fs::read(&cq_file).unwrap();
    let field = i64::from_be_bytes(raw[12..20].try_into().unwrap());
    assert!(is_ext_addr(field), "{field}");
    store.shutdown().unwrap();

    // A crash cost the consume queue its last four units: recovery rebuilds them from the
    // CommitLog, cutting the ext units they named and writing new ones.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&cq_file)
        .unwrap();
    f.set_len(6 * 20).unwrap();
    drop(f);
    let store = open(dir.path());
    check(&store);
    store.shutdown().unwrap();
}
