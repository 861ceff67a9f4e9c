//! The master's side: the shared view of its slaves (acks, caught-up times, SyncStateSet,
//! confirm offset) and one connection per slave streaming the CommitLog.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use rocketpy_protocol::clock::Clock;
use rocketpy_protocol::ha_autoswitch::{
    decode_slave, encode_master_handshake, encode_transfer_header, MasterHandshake, SlaveFrame,
    TransferHeader, SLAVE_ACK_SIZE, SLAVE_HANDSHAKE_SIZE, STATE_HANDSHAKE, STATE_TRANSFER,
};
use rocketpy_store::MessageStore;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{watch, Notify};

use super::acks::{SlaveInfo, Table};
use super::{timed, until_stopped, Error, HaSettings};
use crate::ha::epoch_file::EpochFile;

/// How long a connection with nothing to send sleeps at most before looking again, should a
/// growth notification be missed (the caller's listener is the usual wake-up).
const POLL: Duration = Duration::from_millis(100);

/// A master's HA state, shared by its connections and by the puts waiting for acks.
#[derive(Debug)]
pub struct AutoSwitchMaster {
    store: Arc<MessageStore>,
    epochs: Arc<Mutex<EpochFile>>,
    master_id: i64,
    clock: Clock,
    grown: Arc<Notify>,
    table: Mutex<Table>,
    /// Bumped whenever an ack, a connection or the SyncStateSet changes (waiters re-check).
    changed: watch::Sender<u64>,
}

impl AutoSwitchMaster {
    /// The HA side of master `master_id` over `store` and its epoch table. The caller
    /// notifies `grown` when the CommitLog grows; the SyncStateSet starts as the master alone.
    /// What must stay true for frames never to span epochs: the caller appends a new epoch at
    /// the CommitLog's end before the first put of that epoch.
    pub fn new(
        store: Arc<MessageStore>,
        epochs: Arc<Mutex<EpochFile>>,
        master_id: i64,
        clock: Clock,
        grown: Arc<Notify>,
    ) -> Self {
        AutoSwitchMaster {
            store,
            epochs,
            master_id,
            table: Mutex::new(Table::new(master_id, clock.now_millis())),
            clock,
            grown,
            changed: watch::Sender::new(0),
        }
    }

    /// This master's controller broker id.
    pub fn master_id(&self) -> i64 {
        self.master_id
    }

    /// The store replicated.
    pub fn store(&self) -> &Arc<MessageStore> {
        &self.store
    }

    /// Sets the effective SyncStateSet (the caller's: the controller's, or its union with a
    /// pending change). The master is always a member, given or not.
    pub fn set_sync_state_set(&self, set: BTreeSet<i64>) {
        self.table.lock().set_sss(set);
        self.bump();
    }

    /// The effective SyncStateSet.
    pub fn sync_state_set(&self) -> BTreeSet<i64> {
        self.table.lock().sss.clone()
    }

    /// One slave's state.
    pub fn slave(&self, id: i64) -> Option<SlaveInfo> {
        self.table.lock().slaves.get(&id).map(|s| s.info)
    }

    /// Every slave seen since this master started.
    pub fn slaves(&self) -> BTreeMap<i64, SlaveInfo> {
        let t = self.table.lock();
        t.slaves.iter().map(|(id, s)| (*id, s.info)).collect()
    }

    /// The smallest ack of the SyncStateSet members, capped by the CommitLog end (the end
    /// itself when the set is the master alone). A member without a connection holds it at
    /// its last ack until the controller has confirmed the set without it (a shrink goes
    /// through the controller first), so readers never see bytes an electable replica lacks.
    pub fn confirm_offset(&self) -> i64 {
        let max = self.store.commit_log_range().1;
        self.table.lock().confirm(max)
    }

    /// Changes of the acks or the set (the confirm offset may have moved).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Waits until `count` SyncStateSet members besides the master acknowledged `end` (a SYNC
    /// put with `inSyncReplicas = count + 1`); true at once for 0, false on timeout.
    pub async fn wait_for_count(&self, end: i64, count: usize, timeout: Duration) -> bool {
        let mut changes = self.changed.subscribe();
        let wait = async {
            loop {
                if self.table.lock().acked_count(end) >= count {
                    return true;
                }
                if changes.changed().await.is_err() {
                    return false;
                }
            }
        };
        tokio::time::timeout(timeout, wait).await.unwrap_or(false)
    }

    /// Waits until every SyncStateSet member but the master acknowledged `end` (a SYNC put
    /// with `allAckInSyncStateSet`); true at once for the master alone, false on timeout.
    pub async fn wait_for_all(&self, end: i64, timeout: Duration) -> bool {
        // Subscribed before the first look: a change in between still wakes the loop.
        let mut changes = self.changed.subscribe();
        let wait = async {
            loop {
                if self.table.lock().all_acked(end) {
                    return true;
                }
                if changes.changed().await.is_err() {
                    return false;
                }
            }
        };
        tokio::time::timeout(timeout, wait).await.unwrap_or(false)
    }

    /// The SyncStateSet this master would propose now (§4.3), the master always in it:
    /// members stay while connected and caught up within `max_lag_ms`
    /// (`haMaxTimeSlaveNotCatchup`); a connected slave that is not a learner joins when its
    /// ack reaches the confirm offset and the start of the master's current epoch. A joiner
    /// must also be caught up within `max_lag_ms` (not in RocketMQ): it would be dropped at
    /// the next check anyway, and proposing it would make the set flap.
    pub fn caught_up_slaves(&self, now_ms: i64, max_lag_ms: i64) -> BTreeSet<i64> {
        let confirm = self.confirm_offset();
        let epoch_start = {
            let epochs = self.epochs.lock();
            let cache = epochs.cache();
            let current = cache.entry(cache.last_epoch());
            current.map_or(0, |e| e.start_offset)
        };
        let table = self.table.lock();
        table.proposal(confirm, epoch_start, now_ms, max_lag_ms)
    }

    fn bump(&self) {
        self.changed.send_modify(|v| *v += 1);
    }

    fn end_and_now(&self) -> (i64, i64) {
        (self.store.commit_log_range().1, self.clock.now_millis())
    }

    fn register(&self, id: i64, async_learner: bool, acked: i64) -> u64 {
        let (max, now) = self.end_and_now();
        let generation = self
            .table
            .lock()
            .register(id, async_learner, acked, max, now);
        self.bump();
        generation
    }

    fn on_ack(&self, id: i64, generation: u64, offset: i64) {
        let (max, now) = self.end_and_now();
        if let Some(s) = self.table.lock().current(id, generation) {
            s.record_ack(offset, max, now);
        }
        self.bump();
    }

    fn on_transfer(&self, id: i64, generation: u64) {
        let (max, now) = self.end_and_now();
        if let Some(s) = self.table.lock().current(id, generation) {
            s.last_master_max = max;
            s.last_transfer_ms = now;
        }
    }

    /// Nothing to send: a slave that acknowledged the whole log is caught up now.
    fn on_idle(&self, id: i64, generation: u64) {
        let (max, now) = self.end_and_now();
        if let Some(s) = self.table.lock().current(id, generation) {
            if s.info.acked >= max && !s.info.async_learner {
                s.info.caught_up_ms = now;
            }
        }
    }

    fn unregister(&self, id: i64, generation: u64) {
        if let Some(s) = self.table.lock().current(id, generation) {
            s.info.connected = false;
        }
        self.bump();
    }

    fn handshake(&self) -> MasterHandshake {
        // The table first: the end read after it is never before an epoch's start.
        let (epochs, last_epoch) = {
            let file = self.epochs.lock();
            let entries = file.cache().entries();
            let pairs = entries.iter().map(|e| (e.epoch, e.start_offset)).collect();
            (pairs, file.cache().last_epoch())
        };
        MasterHandshake {
            max_phy_offset: self.store.commit_log_range().1,
            last_epoch,
            epochs,
        }
    }

    /// The next frame from `next`: at most `batch` bytes of one file and one epoch (none when
    /// nothing is written there yet: a heartbeat's header).
    fn frame(&self, next: i64, batch: usize) -> Result<(TransferHeader, Bytes), Error> {
        // Bytes before the table: an epoch appended after this read starts at or past the
        // CommitLog end of that moment, so past these bytes.
        let data = self.store.commit_log_data(next, batch).unwrap_or_default();
        let entry = self.epochs.lock().cache().entry_at(next).ok_or_else(|| {
            format!("no epoch of this master's table covers CommitLog offset {next}")
        })?;
        let in_epoch = usize::try_from(entry.end_offset - next).unwrap_or(usize::MAX);
        let header = TransferHeader {
            offset: next,
            epoch: entry.epoch,
            epoch_start_offset: entry.start_offset,
            confirm_offset: self.confirm_offset(),
        };
        Ok((header, data.slice(..data.len().min(in_epoch))))
    }
}

/// Marks the slave disconnected however the connection ends (error, stop, cancellation).
struct Registration {
    master: Arc<AutoSwitchMaster>,
    id: i64,
    generation: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.master.unregister(self.id, self.generation);
    }
}

/// The ack reader, stopped with the connection.
struct AbortOnDrop(tokio::task::JoinHandle<String>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Serves one slave until `stop` is set (or its sender dropped), the slave goes quiet for
/// the housekeeping interval, or either side breaks the protocol. A master whose epoch table
/// does not cover the offset to send ends the connection: every byte it serves must carry
/// its epoch.
pub async fn serve_connection(
    master: Arc<AutoSwitchMaster>,
    stream: TcpStream,
    settings: HaSettings,
    stop: watch::Receiver<bool>,
) -> Result<(), Error> {
    until_stopped(connection(master, stream, settings.sane()), stop).await
}

async fn connection(
    master: Arc<AutoSwitchMaster>,
    stream: TcpStream,
    settings: HaSettings,
) -> Result<(), Error> {
    let quiet = settings.housekeeping;
    stream.set_nodelay(true)?;
    let (mut rd, mut wr) = stream.into_split();
    let SlaveFrame::Handshake(hello) = read_slave(&mut rd, STATE_HANDSHAKE, quiet).await? else {
        return Err("the slave's first frame is not a handshake".into());
    };
    let handshake = encode_master_handshake(&master.handshake())
        .ok_or("the epoch table is too large for a handshake")?;
    timed(quiet, wr.write_all(&handshake)).await?;
    let SlaveFrame::Ack { max_offset: start } = read_slave(&mut rd, STATE_TRANSFER, quiet).await?
    else {
        return Err("the slave's second frame is not an ack".into());
    };
    // The slave's first ack is where it cut back to; 0 is an empty slave.
    let (min, max) = master.store.commit_log_range();
    let mut next = match start {
        0 => min,
        s if s > max => return Err(format!("slave at {s}, past this master's end {max}").into()),
        s if s < min => {
            return Err(format!("slave at {s}, before this master's start {min}: wipe it").into())
        }
        s => s,
    };
    let id = hello.broker_id;
    tracing::info!(
        slave = id,
        from = next,
        "HA slave connected (controller mode)"
    );
    let generation = master.register(id, hello.async_learner, start);
    let _registration = Registration {
        master: master.clone(),
        id,
        generation,
    };
    let owner = master.clone();
    let mut reader = AbortOnDrop(tokio::spawn(async move {
        loop {
            match read_slave(&mut rd, STATE_TRANSFER, quiet).await {
                Ok(SlaveFrame::Ack { max_offset })
                    if max_offset > owner.store.commit_log_range().1 =>
                {
                    return format!("the slave acked {max_offset}, past this master's end")
                }
                Ok(SlaveFrame::Ack { max_offset }) => owner.on_ack(id, generation, max_offset),
                Ok(SlaveFrame::Handshake(_)) => return "a handshake after the first".to_owned(),
                Err(e) => return e.to_string(),
            }
        }
    }));
    let mut last_write = Instant::now();
    loop {
        if reader.0.is_finished() {
            return Err((&mut reader.0).await.unwrap_or_default().into());
        }
        // Armed before looking for bytes, so a put in between still wakes this connection.
        let grown = master.grown.notified();
        tokio::pin!(grown);
        grown.as_mut().enable();
        let (header, data) = master.frame(next, settings.batch_size)?;
        if !data.is_empty() {
            master.on_transfer(id, generation);
            send(&mut wr, &header, &data, quiet).await?;
            next += data.len() as i64;
            last_write = Instant::now();
            continue;
        }
        if next < master.store.commit_log_range().0 {
            return Err(
                format!("slave at {next} fell behind this master's oldest CommitLog file").into(),
            );
        }
        master.on_idle(id, generation);
        if last_write.elapsed() >= settings.heartbeat {
            send(&mut wr, &header, &[], quiet).await?;
            last_write = Instant::now();
        }
        let nap = settings.heartbeat.saturating_sub(last_write.elapsed());
        tokio::select! {
            _ = grown => {}
            _ = tokio::time::sleep(nap.min(POLL)) => {}
            why = &mut reader.0 => return Err(why.unwrap_or_default().into()),
        }
    }
}

async fn send(
    wr: &mut OwnedWriteHalf,
    header: &TransferHeader,
    data: &[u8],
    limit: Duration,
) -> Result<(), Error> {
    let head = encode_transfer_header(header, data.len()).ok_or("transfer frame too large")?;
    timed(limit, async {
        wr.write_all(&head).await?;
        wr.write_all(data).await
    })
    .await
}

/// One fixed-size slave frame, in the state the connection is in.
async fn read_slave(
    rd: &mut OwnedReadHalf,
    state: i32,
    limit: Duration,
) -> Result<SlaveFrame, Error> {
    let size = if state == STATE_HANDSHAKE {
        SLAVE_HANDSHAKE_SIZE
    } else {
        SLAVE_ACK_SIZE
    };
    let mut buf = [0u8; SLAVE_HANDSHAKE_SIZE];
    tokio::time::timeout(limit, rd.read_exact(&mut buf[..size]))
        .await
        .map_err(|_| "nothing from the slave within haHousekeepingInterval")??;
    match decode_slave(&buf[..size], state)? {
        Some((frame, _)) => Ok(frame),
        None => Err("short slave frame".into()),
    }
}
