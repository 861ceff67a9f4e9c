//! Loading a consume queue whose files hold arbitrary bytes, recovering it, and reading it.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use rocketpy_store::consume_queue::ConsumeQueue;
use rocketpy_store::io::Storage;
use rocketpy_store::sim::SimStorage;

const FILE: usize = 20 * 64;

fuzz_target!(|data: &[u8]| {
    let sim = SimStorage::new();
    let root = Path::new("/s/consumequeue");
    // Up to three files; the first two bytes choose their names (offsets), so gaps, wrong
    // multiples and overlaps all occur.
    let (names, rest) = data.split_at(data.len().min(2));
    for (i, chunk) in rest.chunks(FILE).take(3).enumerate() {
        let shift = names.get(i).copied().unwrap_or(0) as u64 % 3;
        let offset = (i as u64 + shift) * FILE as u64;
        let path = root.join("T/0").join(format!("{offset:020}"));
        sim.write_atomic(&path, chunk).expect("sim write");
    }
    let cq = ConsumeQueue::new(sim.shared(), root, "T", 0, FILE);
    if cq.load().is_err() || cq.recover().is_err() {
        return;
    }
    let (min, max) = (cq.min_offset(), cq.max_offset());
    for index in [min, max - 1, max, 0, 1] {
        let _ = cq.get(index);
        if let Some(units) = cq.units_from(index) {
            for i in 0..units.len() {
                let _ = units.get(i);
            }
        }
    }
    let _ = cq.last_unit();
    let _ = cq.truncate_dirty(i64::MAX);
});
