//! The read-only `StoreReader` over a directory the store wrote: same messages, offsets that
//! follow retention, and damaged files reported as errors, never a panic.

use std::io::{Seek, SeekFrom, Write};

use rocketpy_store::columnar::{ColumnBatch, TagFilter};
use rocketpy_store::reader::StoreReader;

use crate::common::{message, open};

fn bodies(b: &ColumnBatch) -> Vec<Vec<u8>> {
    (0..b.rows())
        .map(|i| {
            let o = &b.body.offsets;
            b.body.data[o[i] as usize..o[i + 1] as usize].to_vec()
        })
        .collect()
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

    let mut all = ColumnBatch::new();
    let next = reader
        .read_into("T", 0, 0..1500, "b", &TagFilter::default(), &mut all)
        .unwrap();
    assert_eq!(next, 1500);
    let want: Vec<Vec<u8>> = expected.iter().map(|(b, _)| b.clone()).collect();
    assert_eq!(bodies(&all), want);
    assert_eq!(all.queue_offset, (0..1500).collect::<Vec<i64>>());

    let mut only_a = ColumnBatch::new();
    reader
        .read_into("T", 0, 0..1500, "b", &TagFilter::parse("A"), &mut only_a)
        .unwrap();
    assert_eq!(only_a.rows(), 500);

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
    let mut from_min = ColumnBatch::new();
    reader
        .read_into("T", 0, min..max, "b", &TagFilter::default(), &mut from_min)
        .unwrap();
    assert_eq!(bodies(&from_min), want[min as usize..].to_vec());
    let err = reader
        .read_into(
            "T",
            0,
            0..10,
            "b",
            &TagFilter::default(),
            &mut ColumnBatch::new(),
        )
        .unwrap_err();
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
    let err = reader
        .read_into(
            "T",
            0,
            first_of_last..first_of_last + 1,
            "b",
            &TagFilter::default(),
            &mut ColumnBatch::new(),
        )
        .unwrap_err();
    assert!(
        err.to_string().contains(&format!("offset {first_of_last}")),
        "{err}"
    );

    assert!(StoreReader::open(dir.path().join("nope")).is_err());
    assert!(reader.queue_ids("../etc").is_err());
}
