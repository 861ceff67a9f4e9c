//! Whole sessions over loopback TCP between two stores: catching up, cutting back a diverged
//! replica, refusing one with no common epoch, and frames that never span two epochs.

use std::sync::Arc;
use std::time::Duration;

use rocketpy_protocol::clock::Clock;
use rocketpy_store::{BrokerRole, MessageStore};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::tests::*;
use super::*;
use crate::ha::epoch_file::EpochFile;

/// Runs one slave session against `addr` until the returned sender is set.
fn run_slave(
    slave: Arc<AutoSwitchSlave>,
    addr: &str,
) -> (watch::Sender<bool>, JoinHandle<Result<(), Error>>) {
    let (stop, rx) = watch::channel(false);
    let addr = addr.to_owned();
    let task = tokio::spawn(async move {
        let stream = TcpStream::connect(addr).await?;
        session(&slave, stream, settings(), rx).await
    });
    (stop, task)
}

async fn stop_slave(stop: watch::Sender<bool>, task: JoinHandle<Result<(), Error>>) {
    stop.send_replace(true);
    task.await.unwrap().unwrap();
}

fn same_queues(a: &MessageStore, b: &MessageStore) {
    for q in 0..2 {
        assert_eq!(a.max_offset_in_queue("T", q), b.max_offset_in_queue("T", q));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_slave_catches_up_with_the_masters_bytes_and_epochs() {
    let (md, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (m_store, m_epochs) = (
        open_store(md.path(), BrokerRole::AsyncMaster),
        epoch_file(md.path()),
    );
    m_epochs.lock().append(1, 0).unwrap();
    let x = put(&m_store, "a", 300);
    m_epochs.lock().append(2, x).unwrap();
    let end = put(&m_store, "b", 300);
    assert!(m_store.commit_log_files().len() >= 3, "files rolled");
    let (master, grown) = new_master(&m_store, &m_epochs, Clock::system());
    let (addr, _stop) = listen(master.clone()).await;

    let s_store = open_store(sd.path(), BrokerRole::Slave);
    let slave = Arc::new(AutoSwitchSlave::new(
        s_store.clone(),
        epoch_file(sd.path()),
        2,
    ));
    let (stop, task) = run_slave(slave.clone(), &addr);
    eventually("caught up", || s_store.commit_log_range().1 == end).await;
    // Growth while connected: the caller's notification wakes the connection.
    let end = put(&m_store, "c", 50);
    grown.notify_waiters();
    eventually("caught up again", || s_store.commit_log_range().1 == end).await;
    // SyncStateSet = the master alone: its confirm offset is its end, which the slave takes.
    eventually("confirm offset", || slave.confirm_offset() == end).await;
    eventually("acked", || master.slave(2).is_some_and(|s| s.acked == end)).await;
    stop_slave(stop, task).await;

    assert_eq!(s_store.commit_log_range(), m_store.commit_log_range());
    assert!(log_bytes(&s_store, 0, end) == log_bytes(&m_store, 0, end));
    same_queues(&s_store, &m_store);
    let on_disk = EpochFile::open(&sd.path().join("epochFileCheckpoint")).unwrap();
    assert_eq!(on_disk.cache(), m_epochs.lock().cache());
    assert_eq!(on_disk.cache().entry(2).unwrap().start_offset, x);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_diverged_slave_is_cut_back_to_the_consistent_point() {
    let (md, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (m_store, m_epochs) = (
        open_store(md.path(), BrokerRole::AsyncMaster),
        epoch_file(md.path()),
    );
    m_epochs.lock().append(1, 0).unwrap();
    let x = put(&m_store, "shared", 120);
    let (master, _grown) = new_master(&m_store, &m_epochs, Clock::system());
    let (addr, _stop) = listen(master.clone()).await;
    let (s_store, s_epochs) = (
        open_store(sd.path(), BrokerRole::Slave),
        epoch_file(sd.path()),
    );
    let slave = Arc::new(AutoSwitchSlave::new(s_store.clone(), s_epochs.clone(), 2));
    let (stop, task) = run_slave(slave.clone(), &addr);
    eventually("shared prefix", || s_store.commit_log_range().1 == x).await;
    stop_slave(stop, task).await;

    // The slave led epoch 2 alone (its writes never reached anyone) while the master went
    // on in epoch 3 from the same offset.
    s_store.set_role(BrokerRole::AsyncMaster);
    s_epochs.lock().append(2, x).unwrap();
    let y = put(&s_store, "lost", 30);
    s_store.set_role(BrokerRole::Slave);
    m_epochs.lock().append(3, x).unwrap();
    let z = put(&m_store, "kept", 40);
    assert!(x < y && y < z);
    assert!(log_bytes(&s_store, x, y) != log_bytes(&m_store, x, y));

    let (stop, task) = run_slave(slave.clone(), &addr);
    eventually("caught up", || s_store.commit_log_range().1 == z).await;
    eventually("confirm offset", || slave.confirm_offset() == z).await;
    stop_slave(stop, task).await;
    assert!(log_bytes(&s_store, 0, z) == log_bytes(&m_store, 0, z));
    same_queues(&s_store, &m_store);
    assert_eq!(s_epochs.lock().cache(), m_epochs.lock().cache());
    assert!(s_epochs.lock().cache().entry(2).is_none(), "epoch 2 cut");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slave_sharing_no_epoch_with_the_master_stops_untouched() {
    let (md, sd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (m_store, m_epochs) = (
        open_store(md.path(), BrokerRole::AsyncMaster),
        epoch_file(md.path()),
    );
    m_epochs.lock().append(1, 0).unwrap();
    put(&m_store, "m", 10);
    let (master, _grown) = new_master(&m_store, &m_epochs, Clock::system());
    let (addr, _stop) = listen(master).await;
    let (s_store, s_epochs) = (
        open_store(sd.path(), BrokerRole::AsyncMaster),
        epoch_file(sd.path()),
    );
    s_epochs.lock().append(5, 0).unwrap();
    let end = put(&s_store, "s", 10);
    s_store.set_role(BrokerRole::Slave);
    let slave = Arc::new(AutoSwitchSlave::new(s_store.clone(), s_epochs.clone(), 2));
    let (_stop, task) = run_slave(slave, &addr);
    let err = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert!(err.downcast_ref::<NoCommonEpoch>().is_some(), "{err}");
    assert_eq!(s_store.commit_log_range().1, end);
    assert_eq!(s_epochs.lock().cache().last_epoch(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_never_spans_two_epochs() {
    let dir = tempfile::tempdir().unwrap();
    let (store, epochs) = (
        open_store(dir.path(), BrokerRole::AsyncMaster),
        epoch_file(dir.path()),
    );
    epochs.lock().append(1, 0).unwrap();
    let x = put(&store, "a", 100);
    epochs.lock().append(2, x).unwrap();
    let end = put(&store, "b", 300);
    assert!(
        x < FILE as i64 && end > FILE as i64,
        "epoch 2 starts mid-file, spans files"
    );
    let (master, _grown) = new_master(&store, &epochs, Clock::system());
    // Batches far larger than a file: only the file end and the epoch end cut frames.
    let big = HaSettings {
        batch_size: 1 << 20,
        ..settings()
    };
    let (addr, _stop) = listen_with(master, big).await;
    let (mut slave, _) = RawSlave::connect(&addr, 2, 0).await;
    let frames = slave.frames_to(end).await;
    let cache = epochs.lock().cache().clone();
    let mut at = 0;
    for (h, body) in &frames {
        let e = cache.entry(h.epoch).unwrap();
        assert_eq!(h.offset, at);
        assert_eq!(h.epoch_start_offset, e.start_offset);
        assert!(e.start_offset <= h.offset && h.offset + body.len() as i64 <= e.end_offset);
        at += body.len() as i64;
    }
    assert_eq!(
        frames[0].0.offset + frames[0].1.len() as i64,
        x,
        "cut at the epoch end"
    );
    assert_eq!((frames[1].0.offset, frames[1].0.epoch), (x, 2));
    let concat: Vec<u8> = frames.iter().flat_map(|(_, b)| b.clone()).collect();
    assert!(concat == log_bytes(&store, 0, end));
}
