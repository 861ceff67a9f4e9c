//! An index file of arbitrary bytes (a damaged disk): header and slot/entry links must never
//! send a query or an insert outside the file, or into a loop.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use rocketpy_store::index_file::{file_size, IndexFile};
use rocketpy_store::io::Storage;
use rocketpy_store::sim::SimStorage;

const SLOTS: usize = 16;
const ENTRIES: usize = 32;

fuzz_target!(|data: &[u8]| {
    let sim = SimStorage::new();
    let path = Path::new("/s/index/20260101000000000");
    let mut image = data.to_vec();
    image.resize(file_size(SLOTS, ENTRIES), 0);
    sim.write_atomic(path, &image).expect("sim write");
    let Ok(file) = IndexFile::open(&sim, path, SLOTS, ENTRIES, false) else {
        return;
    };
    let mut out = Vec::new();
    for key in ["T#a", "T#b", "x", ""] {
        file.select(key, 64, 0, i64::MAX, &mut out);
        file.select(key, 64, i64::MIN, i64::MAX, &mut out);
    }
    let _ = file.is_time_matched(0, i64::MAX);
    for i in 0..4 {
        let _ = file.put_key("T#a", i, 1_700_000_000_000 + i);
    }
    out.clear();
    file.select("T#a", 64, 0, i64::MAX, &mut out);
});
