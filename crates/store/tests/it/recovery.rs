use std::fs::OpenOptions;
use std::io::{Seek, SeekFrom, Write};

use rocketpy_store::{GetMessageStatus, MessageStore, StoreError};

use crate::common::{body_of, config, message, open};

#[test]
fn second_open_is_refused_while_locked() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let err = MessageStore::open(config(dir.path(), 64 * 1024, 2000)).unwrap_err();
    assert!(matches!(err, StoreError::Locked(_)), "{err}");
    assert!(err.to_string().contains("locked"));
    store.shutdown().unwrap();
    open(dir.path()).shutdown().unwrap();
}

#[test]
fn clean_restart_keeps_offsets_and_appends_after() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path());
        for i in 0..500u32 {
            store
                .put_message(message("T", 0, i.to_be_bytes().to_vec(), "A"))
                .unwrap();
        }
        store.shutdown().unwrap();
        assert!(!dir.path().join("abort").exists());
    }
    let store = open(dir.path());
    assert!(!store.was_abnormal_shutdown());
    assert_eq!(store.max_offset_in_queue("T", 0), 500);
    let r = store
        .put_message(message("T", 0, b"after".to_vec(), "A"))
        .unwrap();
    assert_eq!(r.append.logics_offset, 500);
    let got = store.get_message("T", 0, 500, 1, None);
    assert_eq!(body_of(&got.messages[0]), b"after");
}

#[test]
fn torn_tail_is_truncated_and_consume_queue_follows() {
    let dir = tempfile::tempdir().unwrap();
    let last_offset;
    {
        let store = open(dir.path());
        let mut r = None;
        for i in 0..100u32 {
            r = Some(
                store
                    .put_message(message("T", 0, vec![i as u8; 100], "A"))
                    .unwrap(),
            );
        }
        last_offset = r.unwrap().append.wrote_offset;
        store.shutdown().unwrap();
    }
    // Corrupt the body of the last record (as a torn write would) and pretend a crash.
    let log = dir.path().join("commitlog").join(format!("{:020}", 0));
    let mut f = OpenOptions::new().write(true).open(&log).unwrap();
    f.seek(SeekFrom::Start(last_offset as u64 + 100)).unwrap();
    f.write_all(&[0xEE; 16]).unwrap();
    std::fs::write(dir.path().join("abort"), b"").unwrap();

    let store = open(dir.path());
    assert!(store.was_abnormal_shutdown());
    assert_eq!(
        store.max_offset_in_queue("T", 0),
        99,
        "the torn record is gone from the queue"
    );
    let r = store
        .put_message(message("T", 0, b"new".to_vec(), "A"))
        .unwrap();
    assert_eq!(r.append.logics_offset, 99);
    assert_eq!(r.append.wrote_offset, last_offset);
    let got = store.get_message("T", 0, 98, 32, None);
    assert_eq!(got.status, GetMessageStatus::Found);
    assert_eq!(body_of(&got.messages[1]), b"new");
}

#[test]
fn lost_consume_queue_is_rebuilt_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path());
        for i in 0..300u32 {
            store
                .put_message(message("T", (i % 3) as i32, vec![i as u8; 50], "A"))
                .unwrap();
        }
        store.shutdown().unwrap();
    }
    std::fs::remove_dir_all(dir.path().join("consumequeue").join("T").join("1")).unwrap();
    let store = open(dir.path());
    assert_eq!(store.max_offset_in_queue("T", 1), 100);
    let r = store.get_message("T", 1, 0, 32, None);
    assert_eq!(body_of(&r.messages[0]), vec![1u8; 50]);
}
