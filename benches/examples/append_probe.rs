//! Separates append costs: `cargo run --release --example append_probe [writers] [body bytes]`.
//! Paired rounds of a raw mmap copy of the same record sizes against the store with its
//! defaults, with indexing off, and with indexing and the 500 ms write-back rounds off (what
//! raw does: its dirty pages stay in the page cache for the whole run), from `writers`
//! threads (default 1; body default 1024).

use rocketpy_benches::measure::paired;
use rocketpy_benches::{message, raw_mmap_rate, store_rate};
use rocketpy_store::StoreConfig;

/// A change to the store's defaults.
type Tune = fn(&mut StoreConfig);

fn main() {
    let arg = |i: usize, default: usize| {
        std::env::args()
            .nth(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or(default)
    };
    let (writers, body) = (arg(1, 1), arg(2, 1024));
    let n = if body <= 256 { 1_000_000 } else { 300_000 };
    let record_len = message("BenchTopic", 0, body).record_len().expect("len");
    let variants: [(&str, Tune); 3] = [
        ("defaults", |_| {}),
        ("index off", |c| c.message_index_enable = false),
        ("index and write-back off", |c| {
            c.message_index_enable = false;
            c.flush_interval_commit_log = 3_600_000;
            c.flush_interval_consume_queue = 3_600_000;
        }),
    ];
    for (name, tune) in variants {
        let r = paired(
            5,
            &mut || store_rate(body, n, writers, 1 << 30, tune).0,
            &mut || raw_mmap_rate(record_len, n, writers, 1 << 30),
        );
        println!(
            "{writers} writer(s), {body} B, {name:<25} store {:>9.0} raw {:>9.0} ratio {:.2}",
            r.a, r.b, r.ratio
        );
    }
}
