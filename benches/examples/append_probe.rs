//! Separates append costs: `cargo run --release --example append_probe [writers]`. Paired
//! rounds of the store with its defaults, with indexing off, and a raw mmap copy of the same
//! record sizes, from `writers` threads (default 1).

use rocketpy_benches::measure::paired;
use rocketpy_benches::{message, raw_mmap_rate, store_rate};

fn main() {
    let writers: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    let n = 300_000;
    let record_len = message("BenchTopic", 0, 1024).record_len().expect("len");
    let raw = &mut || raw_mmap_rate(record_len, n, writers, 1 << 30);
    let r = paired(
        5,
        &mut || store_rate(1024, n, writers, 1 << 30, |_| {}).0,
        raw,
    );
    println!(
        "{writers} writer(s), defaults:  store {:>9.0} raw {:>9.0} ratio {:.2}",
        r.a, r.b, r.ratio
    );
    let r = paired(
        5,
        &mut || {
            store_rate(1024, n, writers, 1 << 30, |c| {
                c.message_index_enable = false
            })
            .0
        },
        raw,
    );
    println!(
        "{writers} writer(s), index off: store {:>9.0} raw {:>9.0} ratio {:.2}",
        r.a, r.b, r.ratio
    );
}
