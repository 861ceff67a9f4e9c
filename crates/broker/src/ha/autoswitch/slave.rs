//! The slave's side: one connection to the master — handshake, cut back to the last offset
//! both agree on (§4.5), then append what the master streams and acknowledge it.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use parking_lot::Mutex;
use rocketpy_protocol::ha_autoswitch::{
    decode_master, encode_slave, MasterFrame, MasterHandshake, SlaveFrame, SlaveHandshake,
    TransferHeader, STATE_HANDSHAKE, STATE_TRANSFER,
};
use rocketpy_store::epoch_cache::EpochCache;
use rocketpy_store::replica::ReplicaWriter;
use rocketpy_store::MessageStore;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;

use super::{timed, until_stopped, Error, HaSettings};
use crate::ha::epoch_file::EpochFile;

/// The master shares no epoch with this replica at the same start offset: nothing tells
/// which of its bytes the master agrees with. Retrying cannot help; an operator must wipe the
/// replica's store (RocketMQ retries forever and needs the same wipe).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no common epoch with the master: wipe the replica's store")]
pub struct NoCommonEpoch;

/// A slave's HA state: its store, its epoch table, its controller id, and the confirm offset
/// its master last reported.
#[derive(Debug)]
pub struct AutoSwitchSlave {
    store: Arc<MessageStore>,
    epochs: Arc<Mutex<EpochFile>>,
    broker_id: i64,
    confirm: AtomicI64,
}

impl AutoSwitchSlave {
    /// Slave `broker_id` (its controller id) replicating into `store`.
    pub fn new(store: Arc<MessageStore>, epochs: Arc<Mutex<EpochFile>>, broker_id: i64) -> Self {
        AutoSwitchSlave {
            store,
            epochs,
            broker_id,
            confirm: AtomicI64::new(-1),
        }
    }

    /// The store replicated into.
    pub fn store(&self) -> &Arc<MessageStore> {
        &self.store
    }

    /// The epoch table.
    pub fn epochs(&self) -> &Arc<Mutex<EpochFile>> {
        &self.epochs
    }

    /// The controller id sent in the handshake.
    pub fn broker_id(&self) -> i64 {
        self.broker_id
    }

    /// The master's confirm offset, capped by what this replica holds; -1 until a master
    /// sent one. Never past the local CommitLog end.
    pub fn confirm_offset(&self) -> i64 {
        self.confirm.load(Ordering::Acquire)
    }
}

/// Where a replica with table `local` and CommitLog end `local_max` must cut back to before
/// taking `master`'s bytes (§4.5): 0 for an empty replica; else the consistent point of the
/// two tables, each last epoch ending at its side's CommitLog end; [`NoCommonEpoch`] when
/// there is none. Never past `local_max`.
pub fn truncation_point(
    local: &EpochCache,
    local_max: i64,
    master: &MasterHandshake,
) -> Result<i64, Error> {
    if local_max == 0 {
        return Ok(0);
    }
    // Entries starting past the local end describe bytes this store lost (a crash cut its
    // tail): they say nothing about what it holds.
    let mut ours = local.clone();
    ours.truncate_suffix_by_offset(local_max.saturating_add(1));
    if ours.is_empty() {
        // Bytes of no known epoch: they cannot be checked against the master's.
        return Err(NoCommonEpoch.into());
    }
    ours.set_last_end_offset(local_max);
    let mut theirs = EpochCache::from_pairs(&master.epochs)
        .map_err(|e| format!("the master's epoch table is invalid: {e}"))?;
    theirs.set_last_end_offset(master.max_phy_offset);
    match ours.consistent_point(&theirs) {
        cut if cut < 0 => Err(NoCommonEpoch.into()),
        cut => Ok(cut.min(local_max)),
    }
}

/// One connection to the master, until `stop` is set (or its sender dropped), the master
/// goes quiet for the housekeeping interval, or either side breaks the protocol.
/// [`NoCommonEpoch`] (downcast the error) means retrying is useless.
pub async fn session(
    slave: &AutoSwitchSlave,
    stream: TcpStream,
    settings: HaSettings,
    stop: watch::Receiver<bool>,
) -> Result<(), Error> {
    until_stopped(connection(slave, stream, settings.sane()), stop).await
}

async fn connection(
    slave: &AutoSwitchSlave,
    stream: TcpStream,
    settings: HaSettings,
) -> Result<(), Error> {
    let quiet = settings.housekeeping;
    stream.set_nodelay(true)?;
    let (mut rd, mut wr) = stream.into_split();
    let hello = SlaveFrame::Handshake(SlaveHandshake {
        sync_from_last_file: false,
        async_learner: false,
        broker_id: slave.broker_id,
    });
    timed(quiet, wr.write_all(&encode_slave(&hello))).await?;
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let theirs = loop {
        match decode_master(&buf, STATE_HANDSHAKE)? {
            Some((MasterFrame::Handshake(h), used)) => {
                buf.advance(used);
                break h;
            }
            Some(_) => return Err("the master's first frame is not a handshake".into()),
            None => fill(&mut rd, &mut buf, quiet).await?,
        }
    };
    let cut = cut_back(slave, &theirs)?;
    tracing::info!(
        slave = slave.broker_id,
        from = cut,
        master_end = theirs.max_phy_offset,
        "replicating from the master (controller mode)"
    );
    send_ack(&mut wr, cut, quiet).await?;

    let mut writer = ReplicaWriter::new(&slave.store);
    // Where the master's next frame must start; an empty replica takes the master's start.
    let mut expected = (cut != 0).then_some(cut);
    let mut acked = cut;
    let mut next_ack = Instant::now() + settings.heartbeat;
    let mut last_read = Instant::now();
    loop {
        loop {
            let used = match decode_master(&buf, STATE_TRANSFER)? {
                None => break,
                Some((MasterFrame::Transfer(header, body), used)) => {
                    apply(slave, &mut writer, &mut expected, &header, body)?;
                    used
                }
                Some(_) => return Err("a handshake frame during transfer".into()),
            };
            buf.advance(used);
        }
        let now = Instant::now();
        if writer.offset() > acked || now >= next_ack {
            acked = writer.offset();
            send_ack(&mut wr, acked, quiet).await?;
            next_ack = now + settings.heartbeat;
        }
        buf.reserve(64 * 1024);
        tokio::select! {
            read = rd.read_buf(&mut buf) => {
                if read? == 0 {
                    return Err("the master closed the connection".into());
                }
                last_read = Instant::now();
            }
            _ = tokio::time::sleep_until(next_ack) => {}
            _ = tokio::time::sleep_until(last_read + quiet) => {
                return Err("nothing from the master within haHousekeepingInterval".into());
            }
        }
    }
}

/// Cuts the CommitLog, then the epoch table, back to the consistent point. In that order: a
/// crash in between leaves table entries past the end (dropped at the next handshake), never
/// bytes without their epoch.
fn cut_back(slave: &AutoSwitchSlave, theirs: &MasterHandshake) -> Result<i64, Error> {
    let local_max = slave.store.commit_log_range().1;
    let local = slave.epochs.lock().cache().clone();
    let cut = truncation_point(&local, local_max, theirs)?;
    slave.store.truncate_replica(cut)?;
    slave
        .epochs
        .lock()
        .update(|c| c.truncate_suffix_by_offset(cut))?;
    slave.confirm.fetch_min(cut, Ordering::AcqRel);
    Ok(cut)
}

/// One transfer frame: its epoch into the table first, then its bytes.
fn apply(
    slave: &AutoSwitchSlave,
    writer: &mut ReplicaWriter<'_>,
    expected: &mut Option<i64>,
    header: &TransferHeader,
    body: &[u8],
) -> Result<(), Error> {
    let at = header.offset;
    if let Some(end) = *expected {
        if at != end {
            return Err(format!("the master sent offset {at}; this replica ends at {end}").into());
        }
    }
    if header.epoch_start_offset > at {
        return Err(format!(
            "frame at {at} of epoch {} said to start at {}",
            header.epoch, header.epoch_start_offset
        )
        .into());
    }
    {
        let mut epochs = slave.epochs.lock();
        let last = epochs.cache().last_epoch();
        if header.epoch < last {
            return Err(format!("frame of epoch {} after epoch {last}", header.epoch).into());
        }
        // Frames are cut at epoch ends and the cut back stops at one, so a new epoch shows up
        // at its first byte; only an empty replica starts inside an epoch (the master's
        // oldest byte). Anything else would credit this replica's bytes to the wrong epoch.
        let inside = header.epoch_start_offset != at && !epochs.cache().is_empty();
        if header.epoch > last && inside {
            return Err(format!(
                "epoch {} from {} first seen at {at}",
                header.epoch, header.epoch_start_offset
            )
            .into());
        }
        if header.epoch > last && !epochs.append(header.epoch, header.epoch_start_offset)? {
            return Err(format!(
                "epoch {} from {} does not follow this replica's table",
                header.epoch, header.epoch_start_offset
            )
            .into());
        }
    }
    writer.push(at, body)?;
    *expected = Some(at + body.len() as i64);
    let confirm = header.confirm_offset.min(writer.offset());
    slave.confirm.store(confirm, Ordering::Release);
    Ok(())
}

async fn fill(rd: &mut OwnedReadHalf, buf: &mut BytesMut, quiet: Duration) -> Result<(), Error> {
    buf.reserve(64 * 1024);
    let read = tokio::time::timeout(quiet, rd.read_buf(buf))
        .await
        .map_err(|_| "nothing from the master within haHousekeepingInterval")??;
    if read == 0 {
        return Err("the master closed the connection".into());
    }
    Ok(())
}

async fn send_ack(wr: &mut OwnedWriteHalf, offset: i64, quiet: Duration) -> Result<(), Error> {
    let ack = encode_slave(&SlaveFrame::Ack { max_offset: offset });
    timed(quiet, wr.write_all(&ack)).await
}
