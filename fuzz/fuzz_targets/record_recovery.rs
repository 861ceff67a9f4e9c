//! CommitLog recovery over a file of arbitrary bytes (a damaged disk): record parsing, damaged
//! spans skipped, the log cut after the last valid record; then reads of what was recovered.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use rocketpy_protocol::message::record;
use rocketpy_store::commit_log::CommitLog;
use rocketpy_store::io::Storage;
use rocketpy_store::sim::SimStorage;

const FILE: usize = 64 * 1024;

fuzz_target!(|data: &[u8]| {
    let sim = SimStorage::new();
    let dir = Path::new("/s/commitlog");
    let mut image = data.to_vec();
    image.resize(FILE, 0);
    sim.write_atomic(&dir.join("00000000000000000000"), &image)
        .expect("sim write");
    let log = CommitLog::new(sim.shared(), dir.to_path_buf(), FILE);
    if log.load().is_err() {
        return;
    }
    let mut seen = Vec::new();
    let Ok(end) = log.recover(0, true, |v| {
        seen.push((v.physical_offset, v.total_size));
        Ok(())
    }) else {
        return;
    };
    assert!(
        end >= 0 && end as usize <= FILE,
        "recovered end {end} outside the file"
    );
    for (offset, size) in seen {
        let bytes = log
            .read(offset, size)
            .expect("a recovered record is readable");
        assert!(matches!(
            record::decode(&bytes, true),
            Ok(record::Decoded::Message(_))
        ));
    }
    let _ = record::decode_all(data);
});
