//! Reads: messages per second through the consume queue (32 per call, as a pull), and key
//! look-ups per second through the IndexFile.

use rocketpy_benches::measure::rate;
use rocketpy_benches::{message, open_store};
use rocketpy_protocol::message::properties;
use rocketpy_store::GetMessageStatus;

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_store(dir.path(), 1 << 30);
    let n = 400_000usize;
    for i in 0..n {
        let mut m = message("ReadTopic", (i % 4) as i32, 1024);
        m.properties = properties::encode([
            ("TAGS", "TagA"),
            ("KEYS", &format!("key-{i}")),
            ("UNIQ_KEY", &format!("U{i:031}")),
        ]);
        store.put_messages(std::slice::from_ref(&m)).expect("put");
    }
    let mut read = 0usize;
    let r = rate(n, || {
        for q in 0..4 {
            let mut offset = 0;
            loop {
                let got = store.get_message("ReadTopic", q, offset, 32, None);
                if got.status != GetMessageStatus::Found {
                    break;
                }
                read += got.messages.len();
                offset = got.next_begin_offset;
            }
        }
    });
    assert_eq!(read, n);
    println!(
        "consume-queue read, 1 KiB messages, 32 per call: {r:>10.0} msg/s ({:.0} MB/s)",
        r * 1188.0 / 1e6
    );

    store.query_message("ReadTopic", "key-0", 1, 0, i64::MAX); // waits for the index
    let lookups = 20_000usize;
    let mut found = 0usize;
    let r = rate(lookups, || {
        for j in 0..lookups {
            let key = format!("key-{}", (j * 7919) % n);
            found += store.query_message("ReadTopic", &key, 4, 0, i64::MAX).len();
        }
    });
    assert_eq!(found, lookups);
    println!("index look-up by key (message read included):    {r:>10.0} look-ups/s");
    store.shutdown().expect("shutdown");
}
