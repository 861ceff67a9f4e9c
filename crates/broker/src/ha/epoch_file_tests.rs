//! The epoch file: backups, damage, and the empty table.

use super::*;

fn cache(pairs: &[(i32, i64)]) -> EpochCache {
    EpochCache::from_pairs(pairs).unwrap()
}

#[test]
fn the_file_falls_back_to_its_backup_and_refuses_when_both_are_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("epochFileCheckpoint");
    let mut f = EpochFile::open(&path).unwrap();
    assert!(f.cache().is_empty());
    assert!(f.append(1, 0).unwrap());
    assert!(f.append(2, 4096).unwrap());
    assert!(!f.append(2, 8192).unwrap());
    assert_eq!(EpochFile::open(&path).unwrap().cache(), f.cache());

    // A torn main file: the backup (the table before the last append) is read.
    std::fs::write(&path, b"2\n99").unwrap();
    assert_eq!(EpochFile::open(&path).unwrap().cache(), &cache(&[(1, 0)]));

    // Both damaged: an error, not an empty table.
    let bak = dir.path().join("epochFileCheckpoint.bak");
    std::fs::write(&path, b"garbage").unwrap();
    std::fs::write(&bak, b"garbage").unwrap();
    assert!(EpochFile::open(&path).is_err());
}

#[test]
fn an_emptied_table_leaves_no_file_to_resurrect_entries_from() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("epochFileCheckpoint");
    let mut f = EpochFile::open(&path).unwrap();
    f.append(1, 0).unwrap();
    f.append(2, 10).unwrap();
    f.update(|c| c.truncate_suffix_by_epoch(0)).unwrap();
    assert!(!path.exists() && !dir.path().join("epochFileCheckpoint.bak").exists());
    assert!(EpochFile::open(&path).unwrap().cache().is_empty());
}
