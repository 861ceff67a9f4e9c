//! CommitLog append against a raw mmap write of the same bytes, in the same run.
//!
//! `store` appends through `MessageStore::put_message` (lock, record encoding with CRC,
//! consume-queue dispatch, async flush in the background); `raw_mmap` copies the same
//! record-sized bytes into a mapped file of the same size. The ratio store/raw printed at the
//! end is the number to watch (target >= 0.6 for 1 KiB).

use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion, Throughput};
use memmap2::MmapMut;
use rocketpy_benches::{message, open_store};

const FILE_SIZE: usize = 256 * 1024 * 1024;

fn raw_mmap_rate(record_len: usize, n: usize) -> f64 {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(dir.path().join("raw"))
        .expect("open");
    file.set_len(FILE_SIZE as u64).expect("set_len");
    // SAFETY: the file is private to this benchmark.
    let mut map = unsafe { MmapMut::map_mut(&file).expect("map") };
    let record = vec![b'x'; record_len];
    let start = Instant::now();
    let mut pos = 0;
    for _ in 0..n {
        if pos + record_len > FILE_SIZE {
            pos = 0;
        }
        map[pos..pos + record_len].copy_from_slice(&record);
        pos += record_len;
    }
    n as f64 / start.elapsed().as_secs_f64()
}

fn store_rate(body_len: usize, n: usize) -> (f64, usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_store(dir.path(), FILE_SIZE);
    let msg = message("BenchTopic", 0, body_len);
    let record_len = msg.record_len().expect("len");
    let start = Instant::now();
    for i in 0..n {
        let mut m = msg.clone();
        m.queue_id = (i % 4) as i32;
        store.put_message(m).expect("put");
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    store.shutdown().expect("shutdown");
    (rate, record_len)
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("commitlog_append");
    group.measurement_time(Duration::from_secs(3));
    for body_len in [100usize, 1024] {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_store(dir.path(), FILE_SIZE);
        let msg = message("BenchTopic", 0, body_len);
        group.throughput(Throughput::Bytes(msg.record_len().expect("len") as u64));
        group.bench_function(format!("store_{body_len}B"), |b| {
            b.iter(|| store.put_message(msg.clone()).expect("put"))
        });
        store.shutdown().expect("shutdown");
    }
    group.finish();
}

fn summary() {
    println!("\nstore append vs raw mmap write of the same bytes (same run):");
    for body_len in [100usize, 1024] {
        let n = 300_000;
        let (store, record_len) = store_rate(body_len, n);
        let raw = raw_mmap_rate(record_len, n);
        println!(
            "  {body_len:>5} B body ({record_len} B record): store {:>10.0} msg/s ({:>7.1} MB/s), raw {:>11.0} msg/s, store/raw = {:.3}",
            store,
            store * record_len as f64 / 1e6,
            raw,
            store / raw
        );
    }
}

criterion_group!(benches, bench);

fn main() {
    benches();
    summary();
    Criterion::default().configure_from_args().final_summary();
}
