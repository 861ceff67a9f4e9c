//! ConsumeQueue's unit tests.

use super::*;

fn unit(i: i64) -> CqUnit {
    CqUnit {
        commit_log_offset: i * 100,
        size: 100,
        tags_code: i,
    }
}

#[test]
fn unit_layout() {
    let u = CqUnit {
        commit_log_offset: 0x0102,
        size: 0x0304,
        tags_code: -1,
    };
    let b = u.encode();
    assert_eq!(&b[0..8], &[0, 0, 0, 0, 0, 0, 1, 2]);
    assert_eq!(&b[8..12], &[0, 0, 3, 4]);
    assert_eq!(&b[12..20], &[0xFF; 8]);
    assert_eq!(CqUnit::decode(&b), u);
}

/// Found by `make fuzz` (consume_queue_load): a unit of a damaged file ending past
/// i64::MAX made recovery's truncation overflow.
#[test]
fn units_with_any_numbers_do_not_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let cq = ConsumeQueue::new(
        crate::io::FsStorage::shared(),
        dir.path(),
        "T",
        0,
        10 * CQ_UNIT_SIZE,
    );
    let huge = CqUnit {
        commit_log_offset: i64::MAX - 10,
        size: i32::MAX,
        tags_code: 0,
    };
    assert_eq!(huge.end(), i64::MAX);
    cq.put(0, huge).unwrap();
    cq.truncate_dirty(i64::MAX).unwrap();
    assert_eq!(cq.max_offset(), 1, "a unit ending at the end is kept");
    cq.truncate_dirty(0).unwrap();
    assert_eq!(cq.max_offset(), 0);
}

#[test]
fn put_get_roll_and_recover() {
    let dir = tempfile::tempdir().unwrap();
    let cq = ConsumeQueue::new(
        crate::io::FsStorage::shared(),
        dir.path(),
        "T",
        1,
        10 * CQ_UNIT_SIZE,
    );
    for i in 0..25 {
        cq.put(i, unit(i)).unwrap();
    }
    cq.put(3, unit(99)).unwrap(); // duplicate: ignored
    assert_eq!(cq.max_offset(), 25);
    assert_eq!(cq.get(3), Some(unit(3)));
    assert_eq!(cq.get(24), Some(unit(24)));
    assert_eq!(cq.files().files().len(), 3);
    let buf = cq.units_from(12).unwrap();
    assert_eq!((buf.start_offset, buf.len()), (12, 8));
    assert_eq!(buf.get(0), unit(12));
    assert_eq!(cq.roll_next_file(12), 20);
    drop(cq);

    let cq = ConsumeQueue::new(
        crate::io::FsStorage::shared(),
        dir.path(),
        "T",
        1,
        10 * CQ_UNIT_SIZE,
    );
    cq.load().unwrap();
    cq.recover().unwrap();
    assert_eq!(cq.max_offset(), 25);
    cq.truncate_dirty(2100).unwrap(); // units 21.. point past the end
    assert_eq!(cq.max_offset(), 21);
    cq.put(23, unit(23)).unwrap(); // gap: blanks at 21, 22
    assert!(cq.get(21).unwrap().is_blank());
    assert_eq!(cq.get(23), Some(unit(23)));
}
