//! Replication in controller mode (RocketMQ 5.x's AutoSwitch HA): the frames of
//! [`rocketpy_protocol::ha_autoswitch`] carried between a master and its slaves, with the epoch
//! table ([`crate::ha::epoch_file`]) deciding what a returning replica keeps.
//!
//! - [`master::AutoSwitchMaster`] is a master's shared HA state: each slave's acknowledged
//!   offset and caught-up time, the SyncStateSet the caller gives it, the confirm offset, and
//!   the wait of SYNC writes for every in-sync replica. [`master::serve_connection`] serves
//!   one slave: handshake with the whole epoch table, then CommitLog bytes from where the
//!   slave's first ack says, one epoch at a time.
//! - [`slave::session`] is one connection of a slave: it cuts its CommitLog and epoch table
//!   back to the last offset both sides agree on, then appends what the master streams.
//!
//! Neither needs a broker: both take a store and an epoch file, so two stores in one process
//! replicate over loopback (the tests). Choosing this protocol or the 4.x one on the HA port,
//! reporting SyncStateSet changes to the controller and role changes are the caller's.
//!
//! What must stay true:
//! - A transfer frame holds bytes of one epoch only, and says which: a slave appends the
//!   epoch to its table before the bytes, so its table always covers its CommitLog.
//! - A slave writes nothing before it has cut back to the consistent point; with no common
//!   epoch it stops (its store must be wiped by an operator), it never guesses.
//! - The confirm offset is never past what every connected in-sync replica acknowledged, nor
//!   past the master's CommitLog end.

mod acks;
pub mod master;
pub mod slave;

use std::time::Duration;

use rocketpy_store::StoreConfig;

pub use acks::SlaveInfo;
pub use master::{serve_connection, AutoSwitchMaster};
pub use slave::{session, truncation_point, AutoSwitchSlave, NoCommonEpoch};

/// Why a connection ended.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// The timing and batching of one HA connection (either side).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HaSettings {
    /// Most CommitLog bytes in one transfer frame (`haTransferBatchSize`; never over the
    /// protocol's [`rocketpy_protocol::ha_autoswitch::MAX_TRANSFER_BODY`]).
    pub batch_size: usize,
    /// Silence after which the master sends an empty frame and the slave re-acks
    /// (`haSendHeartbeatInterval`).
    pub heartbeat: Duration,
    /// Silence from the peer after which the connection is dropped (`haHousekeepingInterval`).
    pub housekeeping: Duration,
}

impl HaSettings {
    /// The store's `haTransferBatchSize`, `haSendHeartbeatInterval` and
    /// `haHousekeepingInterval`.
    pub fn from_store_config(cfg: &StoreConfig) -> Self {
        HaSettings {
            batch_size: cfg.ha_transfer_batch_size,
            heartbeat: Duration::from_millis(cfg.ha_send_heartbeat_interval),
            housekeeping: Duration::from_millis(cfg.ha_housekeeping_interval),
        }
    }

    /// The settings with zeros raised to the least workable values and the batch capped by
    /// what a slave accepts in one frame.
    fn sane(self) -> Self {
        HaSettings {
            batch_size: self
                .batch_size
                .clamp(1, rocketpy_protocol::ha_autoswitch::MAX_TRANSFER_BODY),
            heartbeat: self.heartbeat.max(Duration::from_millis(1)),
            housekeeping: self.housekeeping.max(Duration::from_millis(1)),
        }
    }
}

/// `io` (a write to the peer), failing when the peer has not taken it within `limit` (it
/// stopped reading: the connection is as good as dead).
async fn timed<T>(
    limit: Duration,
    io: impl std::future::Future<Output = std::io::Result<T>>,
) -> Result<T, Error> {
    Ok(tokio::time::timeout(limit, io)
        .await
        .map_err(|_| "the peer did not take a frame within haHousekeepingInterval")??)
}

/// Runs one side's `connection` until it ends, or until `stop` is set (or its sender
/// dropped): the stop is a clean end.
async fn until_stopped(
    connection: impl std::future::Future<Output = Result<(), Error>>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<(), Error> {
    tokio::select! {
        result = connection => result,
        _ = stop.wait_for(|s| *s) => Ok(()),
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_sessions;
