//! A steady stream of single-message puts for a profiler:
//! `cargo run --release -p rocketpy-benches --example put_profile [body bytes] [puts] [writers]`
//! (e.g. under `perf record`). Prints the rate.

use rocketpy_benches::store_rate;

fn main() {
    let arg = |i: usize, default: usize| {
        std::env::args()
            .nth(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or(default)
    };
    let (body, n, writers) = (arg(1, 100), arg(2, 3_000_000), arg(3, 1));
    if std::env::var_os("RAW").is_some() {
        // RAW=1: the raw mmap copy the store is compared with, for a profile of its own.
        let record_len = rocketpy_benches::message("BenchTopic", 0, body)
            .record_len()
            .expect("len");
        let rate = rocketpy_benches::raw_mmap_rate(record_len, n, writers, 1 << 30);
        println!("raw, {writers} writer(s), {record_len} B records: {rate:.0} records/s");
        return;
    }
    // NO_INDEX=1: without the index thread, to see what it costs the writers on few cores.
    let no_index = std::env::var_os("NO_INDEX").is_some();
    let (rate, record_len) = store_rate(body, n, writers, 1 << 30, |c| {
        c.message_index_enable = !no_index;
    });
    println!("{writers} writer(s), {body} B body ({record_len} B record): {rate:.0} msg/s");
}
