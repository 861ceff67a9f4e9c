//! Master/slave replication over RocketMQ 4.x's HA protocol, on its own port.
//!
//! The wire, both directions big-endian:
//! - slave → master: its CommitLog end, 8 bytes (`i64`), on connect, after it wrote what a
//!   frame completed, and every `haSendHeartbeatInterval`;
//! - master → slave: frames `[offset i64][size i32][size CommitLog bytes]`, the bytes from
//!   `offset` within one CommitLog file, at most `haTransferBatchSize`; a frame of size 0 is a
//!   heartbeat saying where the master will continue.
//!
//! The master ([`master`]) starts a slave where it reports (an empty slave at the master's
//! newest file); the slave ([`slave`]) writes the bytes verbatim and builds its queues. A
//! SYNC_MASTER acknowledges a write once a slave reported an offset past it ([`HaService::wait_for`]).
//! Departure from 4.x, on purpose: a slave reporting more than the master has (the master lost
//! an unflushed tail) is told the master's end with a heartbeat and cuts itself back, instead of
//! the two failing to agree forever. What offsets cannot show (neither can 4.x; 5.x adds
//! epochs): a master that lost its tail and took new writes past the slave's end before the
//! slave reconnected — the slave then keeps its old bytes below that end.

pub mod allow;
pub mod autoswitch;
pub mod epoch_file;
pub mod master;
pub mod slave;
pub mod sync;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rocketpy_store::MessageArrivingListener;
use tokio::sync::{watch, Notify};

use crate::long_polling::PullHoldService;

/// Why a SYNC_MASTER write was acknowledged without a slave having it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaWait {
    /// A slave has the bytes.
    Done,
    /// No slave is connected, or the best is more than `haSlaveFallbehindMax` behind.
    SlaveNotAvailable,
    /// No slave reported the bytes within `slaveTimeout`.
    Timeout,
}

/// The master's view of its slaves.
#[derive(Debug)]
pub struct HaService {
    /// The highest CommitLog offset any slave reported.
    acked: watch::Sender<i64>,
    /// Connected slaves.
    slaves: AtomicUsize,
    /// A slave: whether it is connected to its master now.
    master_connected: std::sync::atomic::AtomicBool,
    /// Woken when the CommitLog grows (connections waiting for data).
    grown: Notify,
    /// A slave's master: its HA address and its broker address, from `haMasterAddress` or
    /// the name server's answer to registration.
    master: std::sync::RwLock<MasterAddrs>,
}

/// Where a slave's master is.
#[derive(Debug, Default, Clone)]
pub struct MasterAddrs {
    /// `host:port` of the master's HA listener.
    pub ha: Option<String>,
    /// `host:port` of the master's broker (metadata sync).
    pub broker: Option<String>,
}

impl Default for HaService {
    fn default() -> Self {
        HaService {
            acked: watch::Sender::new(0),
            slaves: AtomicUsize::new(0),
            master_connected: Default::default(),
            grown: Notify::new(),
            master: Default::default(),
        }
    }
}

impl HaService {
    /// Connected slaves.
    pub fn slave_count(&self) -> usize {
        self.slaves.load(Ordering::Acquire)
    }

    /// A slave: whether its master is connected (it then sends readers there).
    pub fn master_connected(&self) -> bool {
        self.master_connected.load(Ordering::Acquire)
    }

    /// The master's HA address (a slave).
    pub fn master_ha_addr(&self) -> Option<String> {
        self.master
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .ha
            .clone()
    }

    /// The master's broker address (a slave).
    pub fn master_broker_addr(&self) -> Option<String> {
        self.master
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .broker
            .clone()
    }

    /// Records the master's addresses; `ha` is kept when `haMasterAddress` fixed it.
    pub fn set_master(&self, ha: Option<String>, broker: Option<String>, fixed_ha: bool) {
        let mut m = self.master.write().unwrap_or_else(|e| e.into_inner());
        if !fixed_ha {
            let ha = ha.filter(|a| !a.is_empty());
            if m.ha != ha {
                tracing::info!(master_ha = ?ha, "master HA address updated");
            }
            m.ha = ha;
        }
        m.broker = broker.filter(|a| !a.is_empty());
    }

    /// The highest offset a slave reported.
    pub fn acked_offset(&self) -> i64 {
        *self.acked.borrow()
    }

    fn report(&self, offset: i64) {
        self.acked.send_if_modified(|v| {
            let newer = offset > *v;
            if newer {
                *v = offset;
            }
            newer
        });
    }

    /// Waits until a slave has CommitLog bytes up to `end` (RocketMQ's GroupTransferService):
    /// at once [`ReplicaWait::SlaveNotAvailable`] when no slave could have them soon — none
    /// is connected, or the best is more than `fall_behind_max` bytes behind `master_end`.
    pub async fn wait_for(
        &self,
        end: i64,
        master_end: i64,
        fall_behind_max: i64,
        timeout: Duration,
    ) -> ReplicaWait {
        if self.acked_offset() >= end {
            return ReplicaWait::Done;
        }
        if self.slave_count() == 0 || master_end - self.acked_offset() > fall_behind_max {
            return ReplicaWait::SlaveNotAvailable;
        }
        let mut rx = self.acked.subscribe();
        let done = matches!(
            tokio::time::timeout(timeout, rx.wait_for(|v| *v >= end)).await,
            Ok(Ok(_))
        );
        if done {
            ReplicaWait::Done
        } else {
            ReplicaWait::Timeout
        }
    }
}

/// The store's listener: wakes held pulls and, when slaves are connected, the HA connections.
pub struct Arrivals {
    pub hold: Arc<PullHoldService>,
    pub pop: Arc<crate::pop::PopService>,
    pub ha: Arc<HaService>,
    /// Controller mode's replica connections (`autoswitch`), woken on every growth.
    pub autoswitch: Option<Arc<Notify>>,
}

impl MessageArrivingListener for Arrivals {
    fn arriving(&self, topic: &str, queue_id: i32, next_offset: i64, tags_code: i64) {
        self.hold.arriving(topic, queue_id, next_offset, tags_code);
        self.pop.wake(topic);
        if self.ha.slave_count() > 0 {
            self.ha.grown.notify_waiters();
        }
        if let Some(grown) = &self.autoswitch {
            grown.notify_waiters();
        }
    }
}
