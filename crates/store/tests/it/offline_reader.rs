//! The read-only `StoreReader` over a directory the store wrote: same messages, offsets that
//! follow retention, and damaged files reported as errors, never a panic.

use std::io::{Seek, SeekFrom, Write};

use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_store::reader::StoreReader;
use rocketpy_store::Result;

use crate::common::{message, open};

/// (queue offset, body, tags) of every message of `T:0` in `range`, and the next offset.
type Read = (Vec<(i64, Vec<u8>, String)>, i64);

fn read(reader: &StoreReader, range: std::ops::Range<i64>) -> Result<Read> {
    let mut out = Vec::new();
    let next = reader.read("T", 0, range, |v| {
        let tags = properties::find(v.properties, keys::TAGS).unwrap_or_default();
        out.push((v.queue_offset, v.body.to_vec(), tags.to_owned()));
        Ok(true)
    })?;
    Ok((out, next))
}

fn bodies(read: &Read) -> Vec<Vec<u8>> {
    read.0.iter().map(|(_, b, _)| b.clone()).collect()
}

#[test]
fn reads_what_the_store_wrote_and_survives_damage() {
    let dir = tempfile::tempdir().unwrap();
    let mut expected = Vec::new();
    {
        let store = open(dir.path()); // 64 KiB CommitLog files, 100-unit CQ files
        for i in 0..1500usize {
            let body = format!("m{i}-{}", "y".repeat(i % 200)).into_bytes();
            let tags = if i % 3 == 0 { "A" } else { "B" };
            store
                .put_message(message("T", 0, body.clone(), tags))
                .unwrap();
            expected.push((body, tags));
        }
        store.shutdown().unwrap();
    }
    let reader = StoreReader::open(dir.path()).unwrap();
    assert_eq!(reader.topics().unwrap(), vec!["T".to_owned()]);
    assert_eq!(reader.queue_ids("T").unwrap(), vec![0]);
    assert_eq!(reader.offsets("T", 0).unwrap(), (0, 1500));

    let all = read(&reader, 0..1500).unwrap();
    assert_eq!(all.1, 1500);
    let want: Vec<Vec<u8>> = expected.iter().map(|(b, _)| b.clone()).collect();
    assert_eq!(bodies(&all), want);
    let offsets: Vec<i64> = all.0.iter().map(|(o, _, _)| *o).collect();
    assert_eq!(offsets, (0..1500).collect::<Vec<i64>>());
    let tags: Vec<&str> = all.0.iter().map(|(_, _, t)| t.as_str()).collect();
    let want_tags: Vec<&str> = expected.iter().map(|(_, t)| *t).collect();
    assert_eq!(tags, want_tags);

    // Sizes from the consume queue alone: the records' sizes, across CQ files (100 units
    // each), stopping at the end of the queue.
    let sizes = reader.unit_sizes("T", 0, 95..1510).unwrap();
    assert_eq!(sizes.len(), 1405);
    let mut at = 95;
    reader
        .read("T", 0, 95..1500, |v| {
            assert_eq!(sizes[(at - 95) as usize], v.total_size, "offset {at}");
            at += 1;
            Ok(true)
        })
        .unwrap();

    // The visitor stops the read: the next offset follows the last message visited.
    let mut seen = 0;
    let next = reader
        .read("T", 0, 0..1500, |_| {
            seen += 1;
            Ok(seen < 10)
        })
        .unwrap();
    assert_eq!((seen, next), (10, 10));

    // Retention: the oldest CommitLog file goes; the first readable offset moves up.
    let mut files: Vec<_> = std::fs::read_dir(dir.path().join("commitlog"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    std::fs::remove_file(&files[0]).unwrap();
    let reader = StoreReader::open(dir.path()).unwrap();
    let (min, max) = reader.offsets("T", 0).unwrap();
    assert!(min > 0 && max == 1500, "{min}..{max}");
    let from_min = read(&reader, min..max).unwrap();
    assert_eq!(bodies(&from_min), want[min as usize..].to_vec());
    let err = read(&reader, 0..10).unwrap_err();
    assert!(err.to_string().contains("offset 0"), "{err}");

    // A unit pointing at garbage: an error naming the offset.
    let mut cq_files: Vec<_> = std::fs::read_dir(dir.path().join("consumequeue/T/0"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    cq_files.sort();
    let last = cq_files.last().unwrap();
    let mut f = std::fs::OpenOptions::new().write(true).open(last).unwrap();
    f.seek(SeekFrom::Start(0)).unwrap();
    f.write_all(&(1i64 << 40).to_be_bytes()).unwrap(); // far past the log
    drop(f);
    let reader = StoreReader::open(dir.path()).unwrap();
    let first_of_last: i64 = last
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .parse::<i64>()
        .unwrap()
        / 20;
    let err = read(&reader, first_of_last..first_of_last + 1).unwrap_err();
    assert!(
        err.to_string().contains(&format!("offset {first_of_last}")),
        "{err}"
    );

    assert!(StoreReader::open(dir.path().join("nope")).is_err());
    assert!(reader.queue_ids("../etc").is_err());
}
