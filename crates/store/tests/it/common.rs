use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use rocketpy_protocol::message::java_hash;
use rocketpy_protocol::message::properties;
use rocketpy_protocol::message::record::MessageToStore;
use rocketpy_store::{MessageStore, StoreConfig};

/// A store on the real disk. The host disk may be shared and 90 % used by others (a CI run
/// was refused every put): its fullness is not what these tests are about, so the ratio
/// checks are off (the simulated disk of `sim_config` keeps RocketMQ's limits).
pub fn config(root: &Path, commit_log_file: usize, cq_file: usize) -> StoreConfig {
    let mut c = sized(root, commit_log_file, cq_file);
    c.disk_max_used_space_ratio = 100;
    c.disk_space_clean_forcibly_ratio = 100;
    c.disk_space_warning_level_ratio = 100;
    c
}

fn sized(root: &Path, commit_log_file: usize, cq_file: usize) -> StoreConfig {
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
    match rocketpy_protocol::message::record::decode(record, true).unwrap() {
        rocketpy_protocol::message::record::Decoded::Message(v) => v.body.to_vec(),
        other => panic!("not a message: {other:?}"),
    }
}

use rocketpy_protocol::message::record::MessageToStore as Msg;
use rocketpy_store::sim::SimStorage;
use rocketpy_store::{FlushDiskType, GetMessageStatus};

/// A small store on the simulated disk: 64 KiB CommitLog files, 100-unit consume-queue files,
/// a tiny index.
pub fn sim_config(flush: FlushDiskType) -> StoreConfig {
    let mut c = sized(Path::new("/sim/store"), 64 * 1024, 20 * 100);
    c.flush_disk_type = flush;
    c.max_hash_slot_num = 64;
    c.max_index_num = 400;
    c
}

pub fn open_sim(sim: &SimStorage, c: &StoreConfig) -> Arc<MessageStore> {
    MessageStore::open_with(c.clone(), sim.shared()).unwrap()
}

/// A message whose body encodes `i` (and is checkable), with UNIQ_KEY `u{i}` and KEYS.
pub fn numbered(topic: &str, queue_id: i32, i: u32) -> Msg {
    let mut m = message(topic, queue_id, body_for(i), "TagA");
    m.properties = properties::encode([
        ("TAGS", "TagA"),
        ("KEYS", &format!("k{i} common")),
        ("UNIQ_KEY", &format!("u{i}")),
    ]);
    m
}

pub fn body_for(i: u32) -> Vec<u8> {
    let mut b = i.to_be_bytes().to_vec();
    b.extend(std::iter::repeat_n(
        (i % 251) as u8,
        100 + (i as usize * 37) % 900,
    ));
    b
}

/// Every message of a queue, in offset order, as (queue offset, body).
pub fn read_all(store: &MessageStore, topic: &str, queue_id: i32) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut offset = store.min_offset_in_queue(topic, queue_id);
    loop {
        let r = store.get_message(topic, queue_id, offset, 32, None);
        match r.status {
            GetMessageStatus::Found => {
                for (m, q) in r.messages.iter().zip(&r.queue_offsets) {
                    out.push((*q, body_of(m)));
                }
            }
            GetMessageStatus::NoMatchedMessage | GetMessageStatus::MessageWasRemoving => {}
            _ => return out,
        }
        if r.next_begin_offset <= offset {
            return out;
        }
        offset = r.next_begin_offset;
    }
}

/// The number encoded in a body.
pub fn number_of(body: &[u8]) -> u32 {
    u32::from_be_bytes([body[0], body[1], body[2], body[3]])
}
