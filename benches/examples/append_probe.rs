//! Separates append costs: `cargo run --release --example append_probe`. Paired rounds of the
//! store with its defaults, with indexing off, and a raw mmap copy of the same record sizes.

use rocketpy_benches::measure::paired;
use rocketpy_benches::{message, raw_mmap_rate, store_rate};

fn main() {
    let n = 300_000;
    let record_len = message("BenchTopic", 0, 1024).record_len().expect("len");
    let raw = &mut || raw_mmap_rate(record_len, n, 1, 1 << 30);
    let r = paired(5, &mut || store_rate(1024, n, 1, 1 << 30, |_| {}).0, raw);
    println!(
        "defaults:        store {:>9.0} raw {:>9.0} ratio {:.2}",
        r.a, r.b, r.ratio
    );
    let r = paired(
        5,
        &mut || store_rate(1024, n, 1, 1 << 30, |c| c.message_index_enable = false).0,
        raw,
    );
    println!(
        "index off:       store {:>9.0} raw {:>9.0} ratio {:.2}",
        r.a, r.b, r.ratio
    );
}
