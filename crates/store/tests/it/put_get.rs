use proptest::prelude::*;
use rocketpy_store::{GetMessageStatus, MessageStore, PutStatus};

use crate::common::{body_of, config, message, open};

#[test]
fn put_and_get_across_file_boundaries() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut expected = [Vec::new(), Vec::new()];
    for i in 0..2000usize {
        let q = (i % 2) as i32;
        let body = format!("message-{i}-{}", "x".repeat(i % 300)).into_bytes();
        let r = store
            .put_message(message("T", q, body.clone(), "TagA"))
            .unwrap();
        assert_eq!(r.status, PutStatus::PutOk);
        assert_eq!(r.append.logics_offset, expected[q as usize].len() as i64);
        expected[q as usize].push(body);
    }
    assert!(
        store.commit_log_files().len() > 3,
        "files should have rolled"
    );
    for q in 0..2 {
        assert_eq!(store.max_offset_in_queue("T", q), 1000);
        let mut offset = 0;
        let mut got = Vec::new();
        while offset < 1000 {
            let r = store.get_message("T", q, offset, 32, None);
            assert_eq!(r.status, GetMessageStatus::Found);
            for m in &r.messages {
                got.push(body_of(m));
            }
            assert!(r.next_begin_offset > offset);
            offset = r.next_begin_offset;
        }
        assert_eq!(got, expected[q as usize]);
    }
    let r = store.get_message("T", 0, 1000, 32, None);
    assert_eq!(r.status, GetMessageStatus::OffsetOverflowOne);
    assert_eq!(
        store.get_message("T", 0, 5000, 32, None).status,
        GetMessageStatus::OffsetOverflowBadly
    );
    assert_eq!(
        store.get_message("Nope", 0, 0, 32, None).status,
        GetMessageStatus::NoMatchedLogicQueue
    );
    store.shutdown().unwrap();
}

#[test]
fn tag_filter_skips_units() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    for i in 0..10 {
        let tag = if i % 2 == 0 { "A" } else { "B" };
        store.put_message(message("T", 0, vec![i], tag)).unwrap();
    }
    let code_a = rocketpy_protocol::message::java_hash::tags_code(Some("A"));
    let filter = move |code: i64| code == code_a;
    let r = store.get_message("T", 0, 0, 32, Some(&filter));
    assert_eq!(r.messages.len(), 5);
    assert_eq!(r.queue_offsets, vec![0, 2, 4, 6, 8]);
    assert_eq!(r.next_begin_offset, 10);
    let none = |_: i64| false;
    let r = store.get_message("T", 0, 0, 32, Some(&none));
    assert_eq!(r.status, GetMessageStatus::NoMatchedMessage);
    assert_eq!(r.next_begin_offset, 10);
}

#[test]
fn refuses_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    for topic in ["../x", "a/b", "", "a\0b"] {
        assert!(
            store.put_message(message(topic, 0, vec![1], "A")).is_err(),
            "{topic:?}"
        );
    }
    assert!(store.put_message(message("T", -1, vec![1], "A")).is_err());
    assert!(store
        .put_message(message("T", 0, vec![0; 5 * 1024 * 1024], "A"))
        .is_err());
    // A message that cannot fit in one 64 KiB CommitLog file.
    assert!(store
        .put_message(message("T", 0, vec![0; 70 * 1024], "A"))
        .is_err());
    assert!(!dir.path().join("x").exists());
    assert!(!dir
        .path()
        .join("consumequeue")
        .join("..")
        .join("x")
        .exists());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Random sizes and counts across file boundaries: every message comes back identical,
    /// offsets contiguous, before and after a restart.
    #[test]
    fn random_messages_round_trip(sizes in proptest::collection::vec(0usize..6000, 1..300)) {
        let dir = tempfile::tempdir().unwrap();
        let bodies: Vec<Vec<u8>> = sizes.iter().enumerate().map(|(i, n)| (0..*n).map(|j| (i + j) as u8).collect()).collect();
        {
            let store = open(dir.path());
            for (i, b) in bodies.iter().enumerate() {
                let r = store.put_message(message("P", 0, b.clone(), "T")).unwrap();
                prop_assert_eq!(r.append.logics_offset, i as i64);
            }
            store.shutdown().unwrap();
        }
        let store = open(dir.path());
        let mut offset = 0i64;
        let mut got = Vec::new();
        while (offset as usize) < bodies.len() {
            let r = store.get_message("P", 0, offset, 32, None);
            prop_assert_eq!(r.status, GetMessageStatus::Found);
            for (m, q) in r.messages.iter().zip(&r.queue_offsets) {
                prop_assert_eq!(*q, got.len() as i64);
                got.push(body_of(m));
            }
            offset = r.next_begin_offset;
        }
        prop_assert_eq!(got, bodies);
    }
}

#[test]
fn offset_by_time_and_earliest_time() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut times = Vec::new();
    for i in 0..30u8 {
        let r = store.put_message(message("T", 0, vec![i], "A")).unwrap();
        times.push(r.append.store_timestamp);
        if i % 10 == 9 {
            std::thread::sleep(std::time::Duration::from_millis(15));
        }
    }
    assert_eq!(store.offset_by_time("T", 0, 0), 0);
    assert_eq!(
        store.offset_by_time("T", 0, i64::MAX),
        30,
        "after everything: the end"
    );
    for probe in [10usize, 20, 25] {
        let at = store.offset_by_time("T", 0, times[probe]);
        assert_eq!(times[at as usize], times[probe]);
        assert!(
            at == 0 || times[at as usize - 1] < times[probe],
            "the first stored at or after"
        );
    }
    assert_eq!(store.earliest_message_time_in_queue("T", 0), Some(times[0]));
    assert_eq!(store.earliest_message_time(), Some(times[0]));
    assert_eq!(store.offset_by_time("Nope", 0, 5), 0);
}

#[test]
fn prepared_queues_have_their_file_before_the_first_message() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    for i in 0..3u8 {
        store
            .put_message(message("T", 0, vec![i; 10], "A"))
            .unwrap();
    }
    store.prepare_queues("T", 3).unwrap();
    store.prepare_queues("T", 3).unwrap(); // twice: nothing changes
    for q in 1..3 {
        let file = dir
            .path()
            .join(format!("consumequeue/T/{q}/00000000000000000000"));
        assert!(file.exists(), "queue {q} prepared");
        assert_eq!(store.max_offset_in_queue("T", q), 0);
    }
    assert_eq!(
        store.max_offset_in_queue("T", 0),
        3,
        "a queue in use is left alone"
    );
    let r = store
        .put_message(message("T", 2, b"first".to_vec(), "A"))
        .unwrap();
    assert_eq!(r.append.logics_offset, 0);
    let got = store.get_message("T", 2, 0, 10, None);
    assert_eq!(got.messages.len(), 1);
    assert_eq!(body_of(&got.messages[0]), b"first");
    assert!(
        store.prepare_queues("../x", 1).is_err(),
        "topic names are checked"
    );
    store.shutdown().unwrap();

    let store = open(dir.path());
    assert_eq!(store.max_offset_in_queue("T", 1), 0);
    assert_eq!(store.max_offset_in_queue("T", 2), 1);
    store.shutdown().unwrap();
}

/// Pages of `path` in the page cache.
fn resident_pages(path: &std::path::Path) -> usize {
    let file = std::fs::File::open(path).unwrap();
    let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
    let pages = map.len().div_ceil(4096);
    let mut vec = vec![0u8; pages];
    // SAFETY: mincore over exactly our own mapping, into a vector of one byte per page.
    let rc = unsafe {
        libc::mincore(
            map.as_ptr() as *mut libc::c_void,
            map.len(),
            vec.as_mut_ptr(),
        )
    };
    assert_eq!(rc, 0);
    vec.iter().filter(|b| **b & 1 == 1).count()
}

#[test]
fn a_new_queue_and_index_file_hold_only_the_pages_they_use() {
    // RocketMQ's sizes: a 6 MB consume-queue file and a 400 MB index file. The kernel's
    // read-around would fill the page cache with up to read_ahead_kb of zero pages at the
    // first fault in each (1.5 ms for a queue's first message, and memory for nothing).
    let dir = tempfile::tempdir().unwrap();
    let store = MessageStore::open(config(dir.path(), 1 << 20, 300_000 * 20)).unwrap();
    store
        .put_message(message("Fresh", 3, b"one".to_vec(), "A"))
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while store.query_message("Fresh", "k", 1, 0, i64::MAX).is_empty() {
        assert!(std::time::Instant::now() < deadline, "never indexed");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let cq = dir.path().join("consumequeue/Fresh/3/00000000000000000000");
    assert!(resident_pages(&cq) <= 2, "{} pages", resident_pages(&cq));
    let index = std::fs::read_dir(dir.path().join("index"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert!(
        resident_pages(&index) <= 8,
        "{} pages",
        resident_pages(&index)
    );
    store.shutdown().unwrap();
}
