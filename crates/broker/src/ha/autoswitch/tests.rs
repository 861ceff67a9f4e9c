//! Helpers for the AutoSwitch HA tests, the truncation point, and the master's confirm
//! offset / SYNC waits / SyncStateSet proposals driven by a hand-written slave over TCP.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use parking_lot::Mutex;
use rocketpy_protocol::clock::Clock;
use rocketpy_protocol::ha_autoswitch::*;
use rocketpy_protocol::message::properties;
use rocketpy_protocol::message::record::MessageToStore;
use rocketpy_store::epoch_cache::EpochCache;
use rocketpy_store::{BrokerRole, MessageStore, StoreConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};

use super::*;
use crate::ha::epoch_file::EpochFile;

pub(super) const FILE: usize = 64 * 1024;

pub(super) fn open_store(root: &Path, role: BrokerRole) -> Arc<MessageStore> {
    let mut c = StoreConfig::new(root.join("store"));
    c.mapped_file_size_commit_log = FILE;
    c.mapped_file_size_consume_queue = 20 * 100;
    // The host disk's fullness is not what these tests are about.
    c.disk_max_used_space_ratio = 100;
    c.disk_space_clean_forcibly_ratio = 100;
    c.disk_space_warning_level_ratio = 100;
    c.broker_role = role;
    MessageStore::open(c).unwrap()
}

pub(super) fn epoch_file(root: &Path) -> Arc<Mutex<EpochFile>> {
    Arc::new(Mutex::new(
        EpochFile::open(&root.join("epochFileCheckpoint")).unwrap(),
    ))
}

/// Puts `n` messages whose bodies name `tag` and their number; returns the CommitLog end.
pub(super) fn put(store: &MessageStore, tag: &str, n: u32) -> i64 {
    for i in 0..n {
        let body = format!("{tag}-{i}-{}", "x".repeat(200));
        store
            .put_message(MessageToStore {
                topic: "T".into(),
                queue_id: (i % 2) as i32,
                flag: 0,
                body: Bytes::from(body),
                properties: properties::encode([("TAGS", tag)]),
                tags_code: 0,
                sys_flag: 0,
                born_timestamp: 1,
                born_host: "127.0.0.1:5000".parse().unwrap(),
                store_host: "127.0.0.1:10911".parse().unwrap(),
                reconsume_times: 0,
                prepared_transaction_offset: 0,
            })
            .unwrap();
    }
    store.commit_log_range().1
}

/// The CommitLog bytes in `[from, to)`.
pub(super) fn log_bytes(store: &MessageStore, from: i64, to: i64) -> Vec<u8> {
    let mut out = Vec::new();
    let mut at = from;
    while at < to {
        let data = store
            .commit_log_data(at, (to - at) as usize)
            .expect("bytes");
        out.extend_from_slice(&data);
        at += data.len() as i64;
    }
    out
}

pub(super) fn settings() -> HaSettings {
    HaSettings {
        batch_size: 8 * 1024,
        heartbeat: Duration::from_millis(50),
        housekeeping: Duration::from_secs(5),
    }
}

/// Polls `cond` every 10 ms; fails after 10 s.
pub(super) async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Master 1 over `store`, and the Notify its caller wakes on growth.
pub(super) fn new_master(
    store: &Arc<MessageStore>,
    epochs: &Arc<Mutex<EpochFile>>,
    clock: Clock,
) -> (Arc<AutoSwitchMaster>, Arc<Notify>) {
    let grown = Arc::new(Notify::new());
    let master = AutoSwitchMaster::new(store.clone(), epochs.clone(), 1, clock, grown.clone());
    (Arc::new(master), grown)
}

/// Serves every connection to the returned address until the sender is set.
pub(super) async fn listen(master: Arc<AutoSwitchMaster>) -> (String, watch::Sender<bool>) {
    listen_with(master, settings()).await
}

pub(super) async fn listen_with(
    master: Arc<AutoSwitchMaster>,
    settings: HaSettings,
) -> (String, watch::Sender<bool>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (stop, rx) = watch::channel(false);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (master, rx) = (master.clone(), rx.clone());
            tokio::spawn(serve_connection(master, stream, settings, rx));
        }
    });
    (addr, stop)
}

/// A slave written by hand: frames in, acks out when the test says.
pub(super) struct RawSlave {
    stream: TcpStream,
    buf: BytesMut,
}

impl RawSlave {
    /// Connects as slave `id`, reads the master's handshake and acks `start`.
    pub(super) async fn connect(addr: &str, id: i64, start: i64) -> (RawSlave, MasterHandshake) {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let hello = SlaveFrame::Handshake(SlaveHandshake {
            sync_from_last_file: false,
            async_learner: false,
            broker_id: id,
        });
        stream.write_all(&encode_slave(&hello)).await.unwrap();
        let mut raw = RawSlave {
            stream,
            buf: BytesMut::new(),
        };
        let handshake = loop {
            if let Some((MasterFrame::Handshake(h), used)) =
                decode_master(&raw.buf, STATE_HANDSHAKE).unwrap()
            {
                raw.buf.advance(used);
                break h;
            }
            raw.read().await;
        };
        raw.ack(start).await;
        (raw, handshake)
    }

    async fn read(&mut self) {
        let n = tokio::time::timeout(Duration::from_secs(10), self.stream.read_buf(&mut self.buf))
            .await
            .expect("a frame within 10 s")
            .unwrap();
        assert!(n > 0, "the master closed the connection");
    }

    pub(super) async fn ack(&mut self, offset: i64) {
        let ack = encode_slave(&SlaveFrame::Ack { max_offset: offset });
        self.stream.write_all(&ack).await.unwrap();
    }

    /// The next transfer frame (heartbeats included).
    pub(super) async fn frame(&mut self) -> (TransferHeader, Vec<u8>) {
        loop {
            if let Some((MasterFrame::Transfer(h, body), used)) =
                decode_master(&self.buf, STATE_TRANSFER).unwrap()
            {
                let body = body.to_vec();
                self.buf.advance(used);
                return (h, body);
            }
            self.read().await;
        }
    }

    /// Data frames until the stream reaches `end`.
    pub(super) async fn frames_to(&mut self, end: i64) -> Vec<(TransferHeader, Vec<u8>)> {
        let mut out: Vec<(TransferHeader, Vec<u8>)> = Vec::new();
        while out
            .last()
            .is_none_or(|(h, b)| h.offset + b.len() as i64 != end)
        {
            let (h, body) = self.frame().await;
            if !body.is_empty() {
                out.push((h, body));
            }
        }
        out
    }
}

fn handshake(max: i64, epochs: &[(i32, i64)]) -> MasterHandshake {
    MasterHandshake {
        max_phy_offset: max,
        last_epoch: epochs.last().map_or(-1, |e| e.0),
        epochs: epochs.to_vec(),
    }
}

#[test]
fn truncation_point_follows_the_epoch_tables() {
    fn point(local: &[(i32, i64)], max: i64, theirs: &MasterHandshake) -> Result<i64, Error> {
        truncation_point(&EpochCache::from_pairs(local).unwrap(), max, theirs)
    }
    // An empty replica takes everything, whatever the master has.
    assert_eq!(point(&[], 0, &handshake(500, &[(1, 0)])).unwrap(), 0);
    // Same epochs: the shorter side's end (a master that lost its tail cuts the replica).
    assert_eq!(
        point(&[(1, 0)], 300, &handshake(500, &[(1, 0)])).unwrap(),
        300
    );
    assert_eq!(
        point(&[(1, 0)], 500, &handshake(300, &[(1, 0)])).unwrap(),
        300
    );
    // The replica led epoch 2 alone; the master moved to 3 at 200: back to 200.
    let m = handshake(900, &[(1, 0), (3, 200)]);
    assert_eq!(point(&[(1, 0), (2, 200)], 400, &m).unwrap(), 200);
    // An entry past the local end (the tail was lost in a crash) does not count.
    let m = handshake(900, &[(1, 0), (2, 600)]);
    assert_eq!(point(&[(1, 0), (2, 600)], 400, &m).unwrap(), 400);
    // Same epoch number, different start: not common.
    let m = handshake(900, &[(1, 0), (2, 250)]);
    assert_eq!(point(&[(1, 0), (2, 200)], 400, &m).unwrap(), 200);
    // No common epoch, or bytes without any epoch: wipe, never guess.
    for (local, max) in [(&[(5, 0)][..], 400), (&[][..], 400)] {
        let err = point(local, max, &handshake(900, &[(1, 0)])).unwrap_err();
        assert!(err.downcast_ref::<NoCommonEpoch>().is_some(), "{err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirm_offset_and_sync_waits_move_only_with_acks() {
    let dir = tempfile::tempdir().unwrap();
    let (store, epochs) = (
        open_store(dir.path(), BrokerRole::SyncMaster),
        epoch_file(dir.path()),
    );
    epochs.lock().append(1, 0).unwrap();
    let a = put(&store, "a", 40);
    let clock = Clock::manual(1_000_000);
    let (master, _grown) = new_master(&store, &epochs, clock.clone());
    // The master alone: everything is confirmed, a SYNC put needs nobody.
    assert_eq!(master.confirm_offset(), a);
    assert!(master.wait_for_all(a, Duration::ZERO).await);

    master.set_sync_state_set(BTreeSet::from([2]));
    assert_eq!(master.sync_state_set(), BTreeSet::from([1, 2]));
    // Member 2 never acked: a SYNC put waits for it (and times out).
    assert!(!master.wait_for_all(a, Duration::from_millis(20)).await);

    let (addr, _stop) = listen(master.clone()).await;
    let (mut slave, hs) = RawSlave::connect(&addr, 2, 0).await;
    assert_eq!(
        (hs.max_phy_offset, hs.last_epoch, hs.epochs),
        (a, 1, vec![(1, 0)])
    );
    eventually("slave 2 registered", || {
        master.slave(2).is_some_and(|s| s.connected)
    })
    .await;
    assert_eq!(master.confirm_offset(), 0);
    // Every byte sent, none acknowledged: nothing moves.
    let frames = slave.frames_to(a).await;
    assert!(frames.len() > 1, "batches of 8 KiB");
    assert_eq!(master.confirm_offset(), 0);
    clock.advance(100);
    let waiter = {
        let master = master.clone();
        tokio::spawn(async move { master.wait_for_all(a, Duration::from_secs(10)).await })
    };
    let (first, body) = &frames[0];
    let b = first.offset + body.len() as i64;
    slave.ack(b).await;
    eventually("confirm at the first ack", || master.confirm_offset() == b).await;
    assert!(!waiter.is_finished());
    slave.ack(a).await;
    assert!(waiter.await.unwrap(), "the wait ends with the ack");
    assert_eq!(master.confirm_offset(), a);

    // The master grows; the confirm offset stays at the slave's ack.
    let c = put(&store, "c", 10);
    assert_eq!(master.confirm_offset(), a);
    assert!(!master.wait_for_all(c, Duration::from_millis(20)).await);

    // It acked the whole log at 1_000_100: caught up within 1 s, stale 5 s later.
    assert_eq!(master.slave(2).unwrap().caught_up_ms, 1_000_100);
    assert_eq!(
        master.caught_up_slaves(1_000_600, 1_000),
        BTreeSet::from([1, 2])
    );
    clock.advance(5_000);
    assert_eq!(
        master.caught_up_slaves(clock.now_millis(), 1_000),
        BTreeSet::from([1])
    );

    // Out of the set: it joins again once its ack reaches the confirm offset (now the end).
    master.set_sync_state_set(BTreeSet::new());
    assert_eq!(master.confirm_offset(), c);
    slave.frames_to(c).await;
    slave.ack(c).await;
    eventually("caught up again", || {
        master.caught_up_slaves(clock.now_millis(), 1_000) == BTreeSet::from([1, 2])
    })
    .await;

    // A lost connection: dropped from the proposal, but it holds confirm at its last ack
    // until the set without it is confirmed (the controller could still elect it).
    master.set_sync_state_set(BTreeSet::from([2]));
    put(&store, "d", 5);
    assert_eq!(master.confirm_offset(), c);
    drop(slave);
    eventually("slave 2 disconnected", || {
        !master.slave(2).unwrap().connected
    })
    .await;
    assert_eq!(
        master.caught_up_slaves(clock.now_millis(), 1_000),
        BTreeSet::from([1])
    );
    assert_eq!(master.confirm_offset(), c);
    master.set_sync_state_set(BTreeSet::from([1]));
    assert_eq!(master.confirm_offset(), store.commit_log_range().1);
}

#[test]
fn a_reconnection_takes_over_and_learners_never_join() {
    let mut t = acks::Table::new(1, 0);
    t.set_sss(BTreeSet::from([2]));
    let old = t.register(2, false, 100, 500, 10);
    let new = t.register(2, false, 200, 500, 20);
    // The old connection's acks and its end no longer count.
    assert!(t.current(2, old).is_none());
    t.current(2, new).unwrap().record_ack(300, 500, 30);
    assert_eq!(
        (t.confirm(500), t.all_acked(300), t.all_acked(301)),
        (300, true, false)
    );
    // A learner caught up with the whole log is still not proposed.
    t.register(3, true, 500, 500, 40);
    assert_eq!(
        t.slaves[&3].info.caught_up_ms, 0,
        "learners have no caught-up time"
    );
    t.current(2, new).unwrap().record_ack(500, 500, 40);
    assert_eq!(t.proposal(500, 0, 40, 1_000), BTreeSet::from([1, 2]));
    // A disconnected member is dropped from the proposal, and holds confirm at its last ack
    // until the set without it is in force; a member never heard from holds it at 0.
    t.current(2, new).unwrap().info.connected = false;
    assert_eq!(t.confirm(900), 500);
    assert_eq!(t.proposal(900, 0, 40, 1_000), BTreeSet::from([1]));
    t.set_sss(BTreeSet::from([2, 4]));
    assert_eq!(t.confirm(900), 0);
}
