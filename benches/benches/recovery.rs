//! Recovery time of a 1 GiB CommitLog: after a clean shutdown (the last three files are
//! validated, here the one file) and after a crash (abort file present, re-dispatch from the
//! checkpoint; with the checkpoint removed, from the first file).

use std::time::Instant;

use rocketpy_benches::{message, open_store_with};
use rocketpy_store::{MessageStore, StoreConfig};

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let file = 1usize << 30;
    let store = open_store_with(dir.path(), file, |_| {});
    let msg = message("RecoverTopic", 0, 1024);
    let per_file = file / msg.record_len().expect("len") - 1;
    for i in 0..per_file {
        let mut m = msg.clone();
        m.queue_id = (i % 8) as i32;
        store.put_messages(std::slice::from_ref(&m)).expect("put");
    }
    store.shutdown().expect("shutdown");
    drop(store);
    let gib = per_file as f64 * msg.record_len().expect("len") as f64 / (1u64 << 30) as f64;
    let open = |label: &str| {
        let mut c = StoreConfig::new(dir.path());
        c.mapped_file_size_commit_log = file;
        let started = Instant::now();
        let store = MessageStore::open(c).expect("open");
        let secs = started.elapsed().as_secs_f64();
        println!("  {label:<44}: {secs:>6.2} s ({:.2} GiB/s)", gib / secs);
        store
    };
    println!("recovery of a {gib:.2} GiB CommitLog ({per_file} messages of 1 KiB):");
    open("clean shutdown").shutdown().expect("shutdown");
    std::fs::write(dir.path().join("abort"), b"").expect("abort");
    open("crash (abort file), checkpoint present")
        .shutdown()
        .expect("shutdown");
    std::fs::write(dir.path().join("abort"), b"").expect("abort");
    std::fs::remove_file(dir.path().join("checkpoint")).expect("rm");
    let s = open("crash, checkpoint missing");
    s.shutdown().expect("shutdown");
}
