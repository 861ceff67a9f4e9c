//! Shared fixtures of the benchmarks.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use rocketpy_store::{java_hash, properties, MessageStore, MessageToStore, StoreConfig};

/// A store in `dir` with CommitLog files of `file_size` bytes.
pub fn open_store(dir: &Path, file_size: usize) -> Arc<MessageStore> {
    let mut config = StoreConfig::new(dir);
    config.mapped_file_size_commit_log = file_size;
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
