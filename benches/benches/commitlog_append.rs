//! CommitLog append against a raw mmap write of the same bytes, in the same run.
//!
//! `store`: `MessageStore::put_messages` with default settings (async flush every 500 ms,
//! consume-queue dispatch, indexing on its thread); `raw`: the same record-sized copies into
//! a mapped file of the same size, writers claiming slots with one atomic add. Printed: the
//! medians of alternating rounds and store/raw (target >= 0.6 for 1 KiB).

use std::time::Duration;

use criterion::{criterion_group, Criterion, Throughput};
use rocketpy_benches::measure::paired;
use rocketpy_benches::{message, open_store, raw_mmap_rate, store_rate};

const FILE_SIZE: usize = 1 << 30;

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("commitlog_append");
    group.measurement_time(Duration::from_secs(3));
    for body_len in [100usize, 1024] {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open_store(dir.path(), FILE_SIZE);
        let msg = message("BenchTopic", 0, body_len);
        group.throughput(Throughput::Bytes(msg.record_len().expect("len") as u64));
        group.bench_function(format!("store_{body_len}B"), |b| {
            b.iter(|| store.put_messages(std::slice::from_ref(&msg)).expect("put"))
        });
        store.shutdown().expect("shutdown");
    }
    group.finish();
}

fn summary() {
    println!(
        "\nCommitLog append vs raw mmap write of the same bytes (medians of 7 paired rounds):"
    );
    for writers in [1usize, 8] {
        for body_len in [100usize, 1024] {
            let n = if body_len == 100 { 600_000 } else { 300_000 };
            let record_len = message("BenchTopic", 0, body_len)
                .record_len()
                .expect("len");
            let mut store = || store_rate(body_len, n, writers, FILE_SIZE, |_| {}).0;
            let mut raw = || raw_mmap_rate(record_len, n, writers, FILE_SIZE);
            let r = paired(7, &mut store, &mut raw);
            println!(
                "  {writers} writer(s), {body_len:>4} B body ({record_len:>4} B record): store {:>9.0} msg/s {:>7.1} MB/s | raw {:>9.0} msg/s | store/raw = {:.2}",
                r.a,
                r.a * record_len as f64 / 1e6,
                r.b,
                r.ratio
            );
        }
    }
}

criterion_group!(benches, bench);

fn main() {
    benches();
    summary();
    Criterion::default().configure_from_args().final_summary();
}
