//! The controller's durable Raft store (`crates/controller/src/raft/`) read back from a
//! directory by `LogStore::open` and `StateMachineStore::open`: never a panic, linear time,
//! bounded memory. What opens reads back consistently: the log's entries are consecutive and
//! match its log state, a torn tail cut off at the first open is gone at the second, and the
//! entries replay on the snapshot's state.
//!
//! Input: a flags byte, then the contents of the files in the order `raft-log`, `vote`,
//! `committed`, `snapshot`. Bit `i` (0..4) of the flags: file `i` exists. Bit `4 + i`: the
//! harness frames file `i` itself (valid lengths and CRCs, so the fuzzer reaches the JSON
//! behind them): each `\n`-separated piece of the log becomes a record; the vote and commit
//! position are one record; the snapshot gets its magic and two records, split at its first
//! `\n`. Otherwise the bytes are written as they are. Every present file but the last takes
//! a 2-byte big-endian length first (cut to what is left); the last takes the rest.
#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use openraft::storage::{RaftLogStorage, RaftStateMachine};
use openraft::RaftLogReader;
use rocketpy_controller::raft::files::frame;
use rocketpy_controller::raft::{LogStore, StateMachineStore};

const FILES: [&str; 4] = ["raft-log", "vote", "committed", "snapshot"];
const SNAPSHOT_MAGIC: &[u8] = b"RPYSNAP1";

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
    })
}

/// Where the per-input directories go: memory if there is a tmpfs, so fsyncs are cheap.
fn base_dir() -> &'static Path {
    static BASE: OnceLock<std::path::PathBuf> = OnceLock::new();
    BASE.get_or_init(|| {
        let shm = Path::new("/dev/shm");
        if shm.is_dir() {
            shm.to_owned()
        } else {
            std::env::temp_dir()
        }
    })
}

fn framed(file: usize, content: &[u8]) -> Vec<u8> {
    let frame = |b: &[u8]| frame(b).expect("fuzz inputs are far below the record bound");
    match file {
        0 => content.split(|b| *b == b'\n').flat_map(frame).collect(),
        3 => {
            let (meta, data) = match content.iter().position(|b| *b == b'\n') {
                Some(i) => (&content[..i], &content[i + 1..]),
                None => (content, &[][..]),
            };
            [SNAPSHOT_MAGIC.to_vec(), frame(meta), frame(data)].concat()
        }
        _ => frame(content),
    }
}

/// Writes the files the input describes into `dir`.
fn write_files(dir: &Path, data: &[u8]) {
    let Some((&flags, mut rest)) = data.split_first() else {
        return;
    };
    let present: Vec<usize> = (0..FILES.len()).filter(|i| flags & (1 << i) != 0).collect();
    for (n, &file) in present.iter().enumerate() {
        let content = if n + 1 == present.len() {
            std::mem::take(&mut rest)
        } else {
            let len = match rest {
                [a, b, ..] => usize::from(u16::from_be_bytes([*a, *b])),
                _ => 0,
            };
            rest = &rest[rest.len().min(2)..];
            let (content, after) = rest.split_at(len.min(rest.len()));
            rest = after;
            content
        };
        let bytes = if flags & (1 << (4 + file)) != 0 {
            framed(file, content)
        } else {
            content.to_vec()
        };
        std::fs::write(dir.join(FILES[file]), bytes).expect("write an input file");
    }
}

async fn check(dir: &Path) {
    let mut entries = Vec::new();
    if let Ok((mut log, report)) = LogStore::open(dir) {
        let state = log.get_log_state().await.expect("log state");
        entries = log.try_get_log_entries(..).await.expect("entries");
        assert_eq!(entries.len(), report.entries);
        for pair in entries.windows(2) {
            assert_eq!(pair[0].log_id.index + 1, pair[1].log_id.index);
        }
        if let (Some(purged), Some(first)) = (state.last_purged_log_id, entries.first()) {
            assert_eq!(purged.index + 1, first.log_id.index);
        }
        assert_eq!(
            state.last_log_id,
            entries
                .last()
                .map(|e| e.log_id)
                .or(state.last_purged_log_id)
        );
        if let Some(first) = entries.first() {
            let one = log
                .try_get_log_entries(first.log_id.index..=first.log_id.index)
                .await
                .expect("one entry");
            assert_eq!(one.len(), 1);
        }
        let vote = log.read_vote().await.expect("vote");
        let committed = log.read_committed().await.expect("committed");
        drop(log);
        // The first open cut any torn tail: the second finds the same log, clean.
        let (mut again, report2) = LogStore::open(dir).expect("a log that opened opens again");
        assert_eq!(report2.torn_tail_bytes, None);
        assert_eq!(report2.entries, report.entries);
        assert_eq!(again.get_log_state().await.expect("log state"), state);
        assert_eq!(again.read_vote().await.expect("vote"), vote);
        assert_eq!(again.read_committed().await.expect("committed"), committed);
    }
    if let Ok(mut sm) = StateMachineStore::open(dir) {
        let _ = sm.applied_state().await.expect("applied state");
        let _ = sm.get_current_snapshot().await;
        // What openraft does after a restart: replay the log on the snapshot's state.
        let n = entries.len();
        let outcomes = sm.apply(entries).await.expect("apply");
        assert_eq!(outcomes.len(), n);
    }
}

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::Builder::new()
        .prefix("controller-store-fuzz")
        .tempdir_in(base_dir())
        .expect("temp dir");
    write_files(dir.path(), data);
    runtime().block_on(check(dir.path()));
});
