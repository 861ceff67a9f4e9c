//! Shared fixtures of the benchmarks.

pub mod driver;
pub mod measure;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use rocketpy_protocol::message::java_hash;
use rocketpy_protocol::message::properties;
use rocketpy_protocol::message::record::MessageToStore;
use rocketpy_store::{MessageStore, StoreConfig};

/// A store in `dir` with CommitLog files of `file_size` bytes.
pub fn open_store(dir: &Path, file_size: usize) -> Arc<MessageStore> {
    open_store_with(dir, file_size, |_| {})
}

/// [`open_store`] with more settings.
pub fn open_store_with(
    dir: &Path,
    file_size: usize,
    tune: impl FnOnce(&mut StoreConfig),
) -> Arc<MessageStore> {
    let mut config = StoreConfig::new(dir);
    config.mapped_file_size_commit_log = file_size;
    tune(&mut config);
    MessageStore::open(config).expect("open store")
}

/// A message of `body_len` bytes on `topic`/`queue_id` with a tag and a key.
pub fn message(topic: &str, queue_id: i32, body_len: usize) -> MessageToStore {
    let host: SocketAddr = "127.0.0.1:10911".parse().expect("addr");
    MessageToStore {
        topic: topic.into(),
        queue_id,
        flag: 0,
        body: Bytes::from(vec![b'x'; body_len]),
        properties: properties::encode([
            ("TAGS", "TagA"),
            ("KEYS", "key-1"),
            ("UNIQ_KEY", "0123456789ABCDEF0123456789ABCDEF"),
        ]),
        tags_code: java_hash::tags_code(Some("TagA")),
        sys_flag: 0,
        born_timestamp: 1,
        born_host: host,
        store_host: host,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

/// Writes `n` records of `record_len` bytes into a fresh mapped file of `file_size` bytes from
/// `writers` threads (each claims its slot with one atomic add); returns records per second.
pub fn raw_mmap_rate(record_len: usize, n: usize, writers: usize, file_size: usize) -> f64 {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let dir = tempfile::tempdir().expect("tempdir");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(dir.path().join("raw"))
        .expect("open");
    file.set_len(file_size as u64).expect("set_len");
    let map = memmap2::MmapRaw::map_raw(&file).expect("map");
    let next = AtomicUsize::new(0);
    let record = vec![b'x'; record_len];
    let per_file = file_size / record_len;
    measure::rate(n, || {
        std::thread::scope(|s| {
            for _ in 0..writers {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        return;
                    }
                    let pos = (i % per_file) * record_len;
                    // SAFETY: every index is claimed by one thread; slots are disjoint and in range.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            record.as_ptr(),
                            map.as_mut_ptr().add(pos),
                            record_len,
                        )
                    };
                });
            }
        })
    })
}

/// Appends `n` messages of `body_len` bytes from `writers` threads to a fresh store whose
/// CommitLog files are `file_size` bytes; returns (messages per second, record length).
pub fn store_rate(
    body_len: usize,
    n: usize,
    writers: usize,
    file_size: usize,
    tune: impl FnOnce(&mut StoreConfig),
) -> (f64, usize) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_store_with(dir.path(), file_size, tune);
    let msgs: Vec<_> = (0..8).map(|q| message("BenchTopic", q, body_len)).collect();
    let record_len = msgs[0].record_len().expect("len");
    let next = AtomicUsize::new(0);
    let rate = measure::rate(n, || {
        std::thread::scope(|s| {
            for _ in 0..writers {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        return;
                    }
                    store
                        .put_messages(std::slice::from_ref(&msgs[i % 8]))
                        .expect("put");
                });
            }
        })
    });
    store.shutdown().expect("shutdown");
    (rate, record_len)
}
