//! Pulls with an SQL92 filter that keeps 1 % of a 1,000,000-message backlog, with and without
//! the bloom-filter bit map (consume-queue ext), beside the unfiltered pull of the same
//! backlog: messages delivered per second, backlog scanned per second, and CommitLog bytes
//! read. The filter and its bit maps are the broker's own (`rocketpy_broker::filter`).

use std::sync::Arc;
use std::time::Instant;

use rocketpy_benches::message;
use rocketpy_broker::filter::{ConsumerFilterManager, ExpressionFilter, SQL92};
use rocketpy_filter::bloom::BloomFilter;
use rocketpy_protocol::message::properties;
use rocketpy_protocol::subscription::build_typed_subscription;
use rocketpy_store::{GetMessageStatus, MessageFilter, MessageStore, StoreConfig};

const N: usize = 1_000_000;
const TOPIC: &str = "FilteredPull";
/// `a` runs 0..100: `a = 7` keeps 1 %.
const SQL: &str = "a = 7";

struct Pass {
    delivered: usize,
    bytes_read: usize,
    secs: f64,
}

fn pull_all(store: &MessageStore, filter: Option<&dyn MessageFilter>) -> Pass {
    let start = Instant::now();
    let (mut delivered, mut bytes_read, mut offset) = (0, 0, 0);
    loop {
        let got = store.get_message(TOPIC, 0, offset, 32, filter);
        delivered += got.messages.len();
        bytes_read += got.commit_log_bytes_read;
        if !matches!(
            got.status,
            GetMessageStatus::Found | GetMessageStatus::NoMatchedMessage
        ) || got.next_begin_offset <= offset
        {
            break;
        }
        offset = got.next_begin_offset;
    }
    Pass {
        delivered,
        bytes_read,
        secs: start.elapsed().as_secs_f64(),
    }
}

fn report(name: &str, p: &Pass) {
    println!(
        "{name:<32} {:>8} delivered {:>12.0} msg/s delivered {:>12.0} msg/s scanned {:>8.1} MB read",
        p.delivered,
        p.delivered as f64 / p.secs,
        N as f64 / p.secs,
        p.bytes_read as f64 / 1e6
    );
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = StoreConfig::new(dir.path());
    config.mapped_file_size_commit_log = 1 << 30;
    config.enable_consume_queue_ext = true;
    config.disk_max_used_space_ratio = 100;
    config.disk_space_clean_forcibly_ratio = 100;
    config.disk_space_warning_level_ratio = 100;
    // The broker's filters, computing bit maps at dispatch; the group registered first.
    let filters = Arc::new(ConsumerFilterManager::new(
        BloomFilter::create(20, 32).expect("RocketMQ's defaults"),
        true,
    ));
    let sub = build_typed_subscription(TOPIC, SQL, Some(SQL92), 1);
    filters.register("bench-group", std::slice::from_ref(&sub), 0);
    let store = MessageStore::open_with_bit_maps(config, filters.clone()).expect("open");
    let start = Instant::now();
    for i in 0..N {
        let mut m = message(TOPIC, 0, 256);
        m.properties = properties::encode([
            ("TAGS", "TagA"),
            ("a", &(i % 100).to_string()),
            ("UNIQ_KEY", &format!("U{i:031}")),
        ]);
        store.put_messages(std::slice::from_ref(&m)).expect("put");
    }
    println!(
        "backlog: {N} messages of 256 B, stored with bit maps at {:.0} msg/s",
        N as f64 / start.elapsed().as_secs_f64()
    );
    let registered = ExpressionFilter::registered(
        &filters,
        filters.get(TOPIC, "bench-group").expect("registered"),
    );
    let unregistered =
        ExpressionFilter::compile(&filters, (TOPIC, "other-group"), SQL, Some(SQL92))
            .expect("compiles");
    // One warm-up pass, then the measured ones (the backlog is in the page cache for all).
    pull_all(&store, None);
    let all = pull_all(&store, None);
    let plain = pull_all(&store, Some(&unregistered));
    let bits = pull_all(&store, Some(&registered));
    assert_eq!(all.delivered, N);
    assert_eq!(plain.delivered, N / 100);
    assert_eq!(bits.delivered, N / 100);
    report("unfiltered", &all);
    report("SQL92 1 %, no bit map", &plain);
    report("SQL92 1 %, bit map", &bits);
    println!(
        "bit map: {:.1}x the filtered pull's rate, {:.2} % of its CommitLog bytes",
        plain.secs / bits.secs,
        100.0 * bits.bytes_read as f64 / plain.bytes_read as f64
    );
    store.shutdown().expect("shutdown");
}
