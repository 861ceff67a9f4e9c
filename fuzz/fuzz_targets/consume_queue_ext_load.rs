//! Loading a consume queue with ext files (`enableConsumeQueueExt`) where both hold arbitrary
//! bytes, recovering them (the ext file cut after the last unit the queue names), and reading
//! units with their ext units.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use rocketpy_store::consume_queue::ConsumeQueue;
use rocketpy_store::io::Storage;
use rocketpy_store::sim::SimStorage;

const FILE: usize = 20 * 64;
const EXT_FILE: usize = 4096;

fuzz_target!(|data: &[u8]| {
    let sim = SimStorage::new();
    let (root, ext_root) = (Path::new("/s/consumequeue"), Path::new("/s/consumequeue_ext"));
    // The first byte splits the input between the queue's file and the ext files.
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let cut = (rest.len() * split as usize / 256).min(FILE);
    let (cq_bytes, ext_bytes) = rest.split_at(cut);
    // Files of their full size (the rest zeroes), so loading goes on to recovery.
    let padded = |bytes: &[u8], size: usize| {
        let mut v = bytes.to_vec();
        v.resize(size, 0);
        v
    };
    let cq_path = root.join("T/0").join(format!("{:020}", 0));
    sim.write_atomic(&cq_path, &padded(cq_bytes, FILE))
        .expect("sim write");
    for (i, chunk) in ext_bytes.chunks(EXT_FILE).take(2).enumerate() {
        let path = ext_root.join("T/0").join(format!("{:020}", i * EXT_FILE));
        sim.write_atomic(&path, &padded(chunk, EXT_FILE))
            .expect("sim write");
    }
    let cq = ConsumeQueue::new(sim.shared(), root, "T", 0, FILE).with_ext(ext_root, EXT_FILE);
    if cq.load().is_err() || cq.recover().is_err() {
        return;
    }
    let max = cq.max_offset();
    for index in [0, 1, max - 1, max] {
        let _ = cq.get_ext(index);
    }
    if let Some(units) = cq.units_from(0) {
        for i in 0..units.len() {
            let _ = units.get_ext(i);
        }
    }
    let _ = cq.truncate_dirty(i64::MAX);
    cq.correct_min_offset(1);
});
