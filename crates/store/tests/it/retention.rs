//! Retention: expired CommitLog files go, consume queues and index follow, reads below the
//! new minimum are told the offset moved; a full disk refuses puts.

use rocketpy_store::sim::SimStorage;
use rocketpy_store::{FlushDiskType, GetMessageStatus, StoreError};

use crate::common::{number_of, numbered, open_sim, read_all, sim_config};

const HOUR: i64 = 3_600_000;

#[test]
fn expired_files_are_deleted_and_reads_below_report_moved() {
    let sim = SimStorage::new();
    let mut c = sim_config(FlushDiskType::AsyncFlush);
    c.delete_when = (0..24)
        .map(|h| format!("{h:02}"))
        .collect::<Vec<_>>()
        .join(";");
    let store = open_sim(&sim, &c);
    for i in 0..400 {
        store.put_message(numbered("T", 0, i)).unwrap();
    }
    let files = store.commit_log_files().len();
    assert!(files >= 5);
    let now = rocketpy_protocol::clock::now_millis();

    let report = store.clean_files(now, 0.10, false).unwrap();
    assert_eq!(report.commit_log_files, 0, "nothing is 72 h old yet");

    let report = store.clean_files(now + 73 * HOUR, 0.10, false).unwrap();
    assert_eq!(
        report.commit_log_files,
        files - 1,
        "all but the file being written"
    );
    assert!(report.consume_queue_files >= 1);
    let min = store.min_offset_in_queue("T", 0);
    assert!(min > 0);
    let r = store.get_message("T", 0, 0, 32, None);
    assert_eq!(r.status, GetMessageStatus::OffsetTooSmall);
    assert_eq!(r.next_begin_offset, min);
    let left: Vec<u32> = read_all(&store, "T", 0)
        .iter()
        .map(|(_, b)| number_of(b))
        .collect();
    assert_eq!(
        left,
        (min as u32..400).collect::<Vec<_>>(),
        "what is left is intact and contiguous"
    );
    let r = store.put_message(numbered("T", 0, 400)).unwrap();
    assert_eq!(r.append.logics_offset, 400);
}

#[test]
fn deletion_waits_for_the_hour_unless_the_disk_is_full() {
    let sim = SimStorage::new();
    let mut c = sim_config(FlushDiskType::AsyncFlush);
    c.delete_when = "99".into(); // never the hour
    let store = open_sim(&sim, &c);
    for i in 0..300 {
        store.put_message(numbered("T", 0, i)).unwrap();
    }
    let now = rocketpy_protocol::clock::now_millis();
    assert_eq!(
        store
            .clean_files(now + 100 * HOUR, 0.10, false)
            .unwrap()
            .commit_log_files,
        0
    );
    assert!(
        store
            .clean_files(now + 100 * HOUR, 0.80, false)
            .unwrap()
            .commit_log_files
            > 0,
        "> 75%: expired files go at once"
    );

    for i in 300..600 {
        store.put_message(numbered("T", 0, i)).unwrap();
    }
    let before = store.commit_log_files().len();
    assert_eq!(
        store
            .clean_files(now, 0.80, false)
            .unwrap()
            .commit_log_files,
        0,
        "75..85%: only expired files"
    );
    let forced = store
        .clean_files(now, 0.86, false)
        .unwrap()
        .commit_log_files;
    assert!(
        forced > 0 && forced < before,
        "> 85%: even unexpired files, never the last"
    );

    store.clean_files(now, 0.95, false).unwrap();
    let err = store.put_message(numbered("T", 0, 9)).unwrap_err();
    assert!(matches!(err, StoreError::DiskFull { .. }), "{err}");
    store.clean_files(now, 0.50, false).unwrap();
    store.put_message(numbered("T", 0, 9)).unwrap();
}
