//! The epoch table: RocketMQ's text and checksum, its rules, and damaged text.

use super::*;

fn cache(pairs: &[(i32, i64)]) -> EpochCache {
    EpochCache::from_pairs(pairs).unwrap()
}

#[test]
fn the_text_is_rocketmqs_with_its_masked_crc32() {
    let c = cache(&[(1, 0), (2, 5120), (3, 10240)]);
    // zlib.crc32(b"1-0\n2-5120\n3-10240\n") & 0x7FFFFFFF, computed outside this crate.
    assert_eq!(c.encode(), "3\n1354917489\n1-0\n2-5120\n3-10240\n");
    assert_eq!(EpochCache::parse(c.encode().as_bytes()).unwrap(), c);
    // Windows line ends and an unchecked (0) checksum read too, as Java's readLine does.
    assert_eq!(
        EpochCache::parse(b"1\r\n0\r\n7-100\r\n").unwrap(),
        cache(&[(7, 100)])
    );
}

#[test]
fn ends_follow_the_next_start() {
    let c = cache(&[(1, 0), (2, 5120), (3, 10240)]);
    let ends: Vec<i64> = c.entries().iter().map(|e| e.end_offset).collect();
    assert_eq!(ends, [5120, 10240, i64::MAX]);
    assert_eq!(c.entry_at(5119).unwrap().epoch, 1);
    assert_eq!(c.entry_at(5120).unwrap().epoch, 2);
    assert_eq!(c.next_entry(1).unwrap().epoch, 2);
    assert_eq!(c.next_entry(3), None);
    assert_eq!(c.last_epoch(), 3);
    assert_eq!(EpochCache::default().last_epoch(), -1);
}

#[test]
fn appends_must_increase_in_epoch_and_offset() {
    let mut c = cache(&[(2, 100)]);
    assert!(!c.append(2, 200), "same epoch");
    assert!(!c.append(3, 100), "same offset");
    assert!(!c.append(1, 300), "older epoch");
    assert!(c.append(5, 300));
    assert!(EpochCache::from_pairs(&[(2, 100), (1, 200)]).is_err());
}

#[test]
fn the_consistent_point_is_the_newest_shared_epoch_cut_at_the_smaller_end() {
    // The replica was master of epoch 2 and wrote to 9000; the new master took over at 7000.
    let mut replica = cache(&[(1, 0), (2, 5000)]);
    replica.set_last_end_offset(9000);
    let master = cache(&[(1, 0), (2, 5000), (3, 7000)]);
    assert_eq!(replica.consistent_point(&master), 7000);
    // No epoch in common: nothing agreed.
    assert_eq!(cache(&[(4, 10)]).consistent_point(&master), -1);
    // Same epoch number, another start: not the same epoch.
    assert_eq!(cache(&[(1, 0), (2, 6000)]).consistent_point(&master), 5000);
}

#[test]
fn truncations_keep_the_table_well_formed() {
    let mut c = cache(&[(1, 0), (2, 5120), (3, 10240)]);
    c.truncate_suffix_by_offset(7000);
    assert_eq!(c.entries().last().unwrap().end_offset, i64::MAX);
    assert_eq!(c.last_epoch(), 2);
    c.truncate_prefix_by_offset(5120);
    assert_eq!(c, cache(&[(2, 5120)]));
    c.truncate_suffix_by_epoch(2);
    assert!(c.is_empty());
}

#[test]
fn damaged_text_is_refused_without_panicking() {
    for bad in [
        &b""[..],
        b"x\n0\n",
        b"2\n0\n1-0\n",
        b"1\n12345\n1-0\n",
        b"1\n0\n1_0\n",
        b"1\n0\n1-x\n",
        b"2\n0\n2-10\n1-20\n",
        b"-1\n0\n",
        b"999999999\n0\n",
        b"\xff\xfe",
    ] {
        assert!(EpochCache::parse(bad).is_err(), "{bad:?}");
    }
    let huge = vec![b'1'; MAX_FILE_BYTES + 1];
    assert!(EpochCache::parse(&huge).is_err());
}
