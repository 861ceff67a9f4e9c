//! The file primitives of the controller's Raft store: length+CRC framed records, a bounded
//! reader that tells a torn tail from damage in the middle, and atomic replacement of small
//! files (temp file, fsync, rename, fsync of the directory).
//!
//! Record layout: `len: u32 BE | crc32(payload): u32 BE | payload (len bytes)`.
//!
//! What must stay true:
//! - Readers never panic and never allocate more than [`MAX_RECORD_LEN`] per record, whatever
//!   the bytes say.
//! - A damaged record is a *torn tail* only when nothing valid can follow it: its declared end
//!   reaches past the end of the file, or every byte from it on is zero (a file extended by a
//!   crash before its data landed). Anything else is damage in the middle, reported as an
//!   error and never silently cut, because it could hold committed entries.
//! - A file replaced by [`write_atomic`] is either the old or the new content after a crash.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::Path;

/// Largest payload of one record. Controller entries are a few hundred bytes; this bounds what
/// a damaged length can make a reader allocate.
pub const MAX_RECORD_LEN: usize = 16 * 1024 * 1024;

/// Bytes of a record's header.
pub const HEADER_LEN: usize = 8;

/// The bytes of one record holding `payload`.
pub fn frame(payload: &[u8]) -> io::Result<Vec<u8>> {
    if payload.len() > MAX_RECORD_LEN {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("record of {} bytes exceeds {MAX_RECORD_LEN}", payload.len()),
        ));
    }
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(&crc32fast::hash(payload).to_be_bytes());
    out.extend_from_slice(payload);
    Ok(out)
}

/// How a file of records ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tail {
    /// Every byte belongs to a valid record.
    Clean,
    /// The last record is incomplete or damaged and nothing follows it: the file should be cut
    /// at `offset` (dropping `bytes`).
    Torn { offset: u64, bytes: u64 },
    /// A damaged record at `offset` with more data after it.
    Corrupt { offset: u64, reason: String },
}

/// The valid records of `data` with their offsets, and how it ends.
pub fn parse_records(data: &[u8]) -> (Vec<(u64, &[u8])>, Tail) {
    let mut records = Vec::new();
    // Everything from here on is zero. Found once: checking the rest at every record made a
    // run of zero-length records (8 zero bytes each, CRC included) quadratic.
    let zeros_from = data.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1);
    let mut pos = 0usize;
    while pos < data.len() {
        let rest = &data[pos..];
        let torn = Tail::Torn {
            offset: pos as u64,
            bytes: rest.len() as u64,
        };
        if pos >= zeros_from {
            return (records, torn);
        }
        if rest.len() < HEADER_LEN {
            return (records, torn);
        }
        let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let crc = u32::from_be_bytes([rest[4], rest[5], rest[6], rest[7]]);
        if len > MAX_RECORD_LEN {
            return (
                records,
                Tail::Corrupt {
                    offset: pos as u64,
                    reason: format!("record length {len} exceeds {MAX_RECORD_LEN}"),
                },
            );
        }
        let end = HEADER_LEN + len;
        if end > rest.len() {
            return (records, torn);
        }
        let payload = &rest[HEADER_LEN..end];
        if crc32fast::hash(payload) != crc {
            if end == rest.len() {
                return (records, torn);
            }
            return (
                records,
                Tail::Corrupt {
                    offset: pos as u64,
                    reason: "CRC mismatch".to_owned(),
                },
            );
        }
        records.push((pos as u64, payload));
        pos += end;
    }
    (records, Tail::Clean)
}

/// Reads a whole file of at most `max` bytes; `None` if it does not exist.
pub fn read_bounded(path: &Path, max: u64) -> io::Result<Option<Vec<u8>>> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let len = file.metadata()?.len();
    if len > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is {len} bytes, over the bound of {max}", path.display()),
        ));
    }
    let mut data = Vec::with_capacity(len as usize);
    file.take(max).read_to_end(&mut data)?;
    Ok(Some(data))
}

/// Reads a file written by [`write_atomic`] of one record: its payload, `None` if the file
/// does not exist, an error if it is damaged in any way (atomic files are never torn).
pub fn read_single_record(path: &Path) -> io::Result<Option<Vec<u8>>> {
    let Some(data) = read_bounded(path, (HEADER_LEN + MAX_RECORD_LEN) as u64)? else {
        return Ok(None);
    };
    match parse_records(&data) {
        (records, Tail::Clean) if records.len() == 1 => Ok(Some(records[0].1.to_vec())),
        (records, tail) => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} is damaged: {} records, {tail:?}",
                path.display(),
                records.len()
            ),
        )),
    }
}

/// Replaces `dir/name` with `bytes` so that a crash leaves the old or the new content:
/// write a temporary file, fsync it, rename it over the old one, fsync the directory.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
    }
    fs::rename(&tmp, dir.join(name))?;
    sync_dir(dir)
}

/// Makes a directory's entries (a rename, a new file) durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_records() -> Vec<u8> {
        [frame(b"one").unwrap(), frame(b"second").unwrap()].concat()
    }

    #[test]
    fn reads_back_what_it_framed() {
        let data = two_records();
        let (records, tail) = parse_records(&data);
        assert_eq!(tail, Tail::Clean);
        assert_eq!(records, vec![(0, &b"one"[..]), (11, &b"second"[..])]);
    }

    #[test]
    fn every_cut_of_the_last_record_is_a_torn_tail() {
        let data = two_records();
        for cut in 12..data.len() {
            let (records, tail) = parse_records(&data[..cut]);
            assert_eq!(records.len(), 1, "cut {cut}");
            assert_eq!(
                tail,
                Tail::Torn {
                    offset: 11,
                    bytes: (cut - 11) as u64
                }
            );
        }
        let mut zeros = data.clone();
        zeros.extend_from_slice(&[0; 40]);
        assert!(matches!(
            parse_records(&zeros).1,
            Tail::Torn { offset: 25, .. }
        ));
        let mut flipped = data.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(matches!(
            parse_records(&flipped).1,
            Tail::Torn { offset: 11, .. }
        ));
    }

    #[test]
    fn damage_in_the_middle_is_not_cut() {
        let mut data = two_records();
        data[9] ^= 1;
        let (records, tail) = parse_records(&data);
        assert!(records.is_empty());
        assert!(matches!(tail, Tail::Corrupt { offset: 0, .. }));
        let mut huge = two_records();
        huge[11..15].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            parse_records(&huge).1,
            Tail::Corrupt { offset: 11, .. }
        ));
    }

    #[test]
    fn zero_length_records_are_read_in_linear_time() {
        // 128 Ki records of 8 zero bytes then one byte: ~70 G byte comparisons (minutes) when
        // every record rescanned the rest for the zero check, milliseconds now.
        let mut data = vec![0u8; 1 << 20];
        data.push(1);
        let start = std::time::Instant::now();
        let (records, tail) = parse_records(&data);
        assert!(start.elapsed() < std::time::Duration::from_secs(10));
        assert_eq!(records.len(), 1 << 17);
        assert_eq!(
            tail,
            Tail::Torn {
                offset: 1 << 20,
                bytes: 1
            }
        );
    }

    #[test]
    fn garbage_never_panics() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for len in 0..300usize {
            let buf: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let _ = parse_records(&buf);
        }
    }

    #[test]
    fn atomic_files_round_trip_and_refuse_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vote");
        assert_eq!(read_single_record(&path).unwrap(), None);
        write_atomic(dir.path(), "vote", &frame(b"v1").unwrap()).unwrap();
        write_atomic(dir.path(), "vote", &frame(b"v2").unwrap()).unwrap();
        assert_eq!(read_single_record(&path).unwrap(), Some(b"v2".to_vec()));
        fs::write(&path, b"\x00\x00\x00\x02junk").unwrap();
        assert!(read_single_record(&path).is_err());
    }
}
