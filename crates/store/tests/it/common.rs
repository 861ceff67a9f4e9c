use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use rocketpy_store::{java_hash, properties, MessageStore, MessageToStore, StoreConfig};

pub fn config(root: &Path, commit_log_file: usize, cq_file: usize) -> StoreConfig {
    let mut c = StoreConfig::new(root);
    c.mapped_file_size_commit_log = commit_log_file;
    c.mapped_file_size_consume_queue = cq_file;
    c
}

pub fn open(root: &Path) -> Arc<MessageStore> {
    MessageStore::open(config(root, 64 * 1024, 20 * 100)).unwrap()
}

pub fn message(topic: &str, queue_id: i32, body: Vec<u8>, tags: &str) -> MessageToStore {
    MessageToStore {
        topic: topic.into(),
        queue_id,
        flag: 0,
        body: Bytes::from(body),
        properties: properties::encode([("TAGS", tags), ("KEYS", "k")]),
        tags_code: java_hash::tags_code(Some(tags)),
        sys_flag: 0,
        born_timestamp: 1,
        born_host: "127.0.0.1:5000".parse().unwrap(),
        store_host: "127.0.0.1:10911".parse().unwrap(),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

pub fn body_of(record: &[u8]) -> Vec<u8> {
    match rocketpy_store::record::decode(record, true).unwrap() {
        rocketpy_store::record::Decoded::Message(v) => v.body.to_vec(),
        other => panic!("not a message: {other:?}"),
    }
}
