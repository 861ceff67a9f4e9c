//! The controller state as openraft's state machine: applied entries change the shared
//! [`ReplicasInfo`], snapshots are [`crate::snapshot`]'s bytes in a `snapshot` file under the
//! store directory.
//!
//! The state itself lives in memory; after a restart it is the snapshot's state, and openraft
//! re-applies the log entries after it up to the saved commit position (and the rest as the
//! leader's commit position arrives).
//!
//! `snapshot` file: `"RPYSNAP1"`, then two framed records ([`super::files`]): the JSON of
//! openraft's `SnapshotMeta`, then the state's bytes.
//!
//! What must stay true:
//! - Apply is the only writer of the state, in log order ([`Proposal::apply_to`]).
//! - A snapshot file is replaced atomically and only by a snapshot of a later log position,
//!   so the log's purge point never passes the snapshot on disk.
//! - Reading a snapshot never panics; a damaged one refuses to open the store (the log before
//!   it is gone, so nothing could rebuild the state locally).

use std::io::{self, Cursor};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{
    EntryPayload, OptionalSend, RaftSnapshotBuilder, SnapshotMeta, StorageIOError, StoredMembership,
};
use parking_lot::{Mutex, RwLock};

use super::files::{self, Tail, HEADER_LEN, MAX_RECORD_LEN};
use super::log_store::StoreError;
use super::types::{ApplyOutcome, Entry, LogId, Node, NodeId, StorageError, TypeConfig};
use crate::snapshot;
use crate::state::ReplicasInfo;

const SNAPSHOT_FILE: &str = "snapshot";
const MAGIC: &[u8; 8] = b"RPYSNAP1";

/// What this node has applied: the state, up to which entry, under which membership.
#[derive(Debug, Clone, Default)]
pub struct Applied {
    pub state: ReplicasInfo,
    pub last_applied: Option<LogId>,
    pub membership: StoredMembership<NodeId, Node>,
}

/// The applied state, shared between the state machine (the writer) and the controller
/// facade (readers).
pub type SharedApplied = Arc<RwLock<Applied>>;

/// A snapshot as its file holds it: openraft's meta and the state's bytes.
type StoredSnapshot = (SnapshotMeta<NodeId, Node>, Vec<u8>);

/// Snapshot files of one store directory.
struct SnapshotFiles {
    dir: PathBuf,
    /// The log id of the snapshot on disk; writes are serialized by this lock.
    on_disk: Mutex<Option<LogId>>,
}

impl SnapshotFiles {
    /// Writes a snapshot unless the one on disk is at least as recent.
    fn write(&self, meta: &SnapshotMeta<NodeId, Node>, data: &[u8]) -> io::Result<()> {
        let mut on_disk = self.on_disk.lock();
        if *on_disk >= meta.last_log_id && on_disk.is_some() {
            return Ok(());
        }
        let meta_json = serde_json::to_vec(meta).map_err(io::Error::other)?;
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&files::frame(&meta_json)?);
        bytes.extend_from_slice(&files::frame(data)?);
        files::write_atomic(&self.dir, SNAPSHOT_FILE, &bytes)?;
        *on_disk = meta.last_log_id;
        Ok(())
    }

    /// The snapshot on disk: its meta and its state bytes.
    fn read(&self) -> Result<Option<StoredSnapshot>, String> {
        read_snapshot_file(&self.dir.join(SNAPSHOT_FILE))
    }
}

fn read_snapshot_file(path: &Path) -> Result<Option<StoredSnapshot>, String> {
    let max = (MAGIC.len() + 2 * (HEADER_LEN + MAX_RECORD_LEN)) as u64;
    let Some(data) = files::read_bounded(path, max).map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let Some(body) = data.strip_prefix(MAGIC.as_slice()) else {
        return Err("no snapshot magic".to_owned());
    };
    let (records, tail) = files::parse_records(body);
    if tail != Tail::Clean || records.len() != 2 {
        return Err(format!("{} records, {tail:?}", records.len()));
    }
    let meta: SnapshotMeta<NodeId, Node> =
        serde_json::from_slice(records[0].1).map_err(|e| format!("meta: {e}"))?;
    Ok(Some((meta, records[1].1.to_vec())))
}

/// The state machine of one controller.
pub struct StateMachineStore {
    applied: SharedApplied,
    snapshots: Arc<SnapshotFiles>,
}

impl StateMachineStore {
    /// Opens the state machine under `dir`: the snapshot's state if there is one.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::Io {
            path: dir.to_owned(),
            source: e,
        })?;
        let path = dir.join(SNAPSHOT_FILE);
        let corrupt = |reason: String| StoreError::Corrupt {
            path: path.clone(),
            reason,
        };
        let mut applied = Applied::default();
        let mut on_disk = None;
        if let Some((meta, data)) = read_snapshot_file(&path).map_err(corrupt)? {
            applied.state = snapshot::restore(&data).map_err(|e| corrupt(e.to_string()))?;
            applied.last_applied = meta.last_log_id;
            applied.membership = meta.last_membership.clone();
            on_disk = meta.last_log_id;
        }
        Ok(Self {
            applied: Arc::new(RwLock::new(applied)),
            snapshots: Arc::new(SnapshotFiles {
                dir: dir.to_owned(),
                on_disk: Mutex::new(on_disk),
            }),
        })
    }

    /// The applied state, for the controller facade to read.
    pub fn shared(&self) -> SharedApplied {
        self.applied.clone()
    }
}

/// Builds a snapshot of the state as it was when the builder was made.
pub struct SnapshotBuilder {
    applied: Applied,
    snapshots: Arc<SnapshotFiles>,
}

fn snapshot_error(e: &io::Error) -> StorageError {
    StorageIOError::write_snapshot(None, e).into()
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        let data = snapshot::save(&self.applied.state);
        let snapshot_id = match self.applied.last_applied {
            Some(id) => format!("{}-{}", id.leader_id, id.index),
            None => "empty".to_owned(),
        };
        let meta = SnapshotMeta {
            last_log_id: self.applied.last_applied,
            last_membership: self.applied.membership.clone(),
            snapshot_id,
        };
        self.snapshots
            .write(&meta, &data)
            .map_err(|e| snapshot_error(&e))?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachineStore {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId>, StoredMembership<NodeId, Node>), StorageError> {
        let applied = self.applied.read();
        Ok((applied.last_applied, applied.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<ApplyOutcome>, StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut applied = self.applied.write();
        let mut outcomes = Vec::new();
        for entry in entries {
            applied.last_applied = Some(entry.log_id);
            let outcome = match entry.payload {
                EntryPayload::Blank => ApplyOutcome::NoCommand,
                EntryPayload::Normal(proposal) => proposal.apply_to(&mut applied.state),
                EntryPayload::Membership(membership) => {
                    applied.membership = StoredMembership::new(Some(entry.log_id), membership);
                    ApplyOutcome::NoCommand
                }
            };
            outcomes.push(outcome);
        }
        Ok(outcomes)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        SnapshotBuilder {
            applied: self.applied.read().clone(),
            snapshots: self.snapshots.clone(),
        }
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, Node>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        let data = snapshot.into_inner();
        let state = snapshot::restore(&data).map_err(|e| {
            StorageError::from(StorageIOError::read_snapshot(
                Some(meta.signature()),
                &io::Error::new(io::ErrorKind::InvalidData, e.to_string()),
            ))
        })?;
        self.snapshots
            .write(meta, &data)
            .map_err(|e| snapshot_error(&e))?;
        let mut applied = self.applied.write();
        applied.state = state;
        applied.last_applied = meta.last_log_id;
        applied.membership = meta.last_membership.clone();
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        let found = self.snapshots.read().map_err(|reason| {
            StorageError::from(StorageIOError::read_snapshot(
                None,
                &io::Error::new(io::ErrorKind::InvalidData, reason),
            ))
        })?;
        Ok(found.map(|(meta, data)| Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        }))
    }
}
