//! The master's table of its slaves and the rules of §4.3 over it (confirm offset, SYNC
//! acknowledgement, caught-up time, SyncStateSet proposal), with no I/O and no clock: the
//! caller passes the CommitLog end and the time.

use std::collections::{BTreeMap, BTreeSet};

/// What the master knows of one slave (by controller broker id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlaveInfo {
    /// The CommitLog end it last acknowledged (its first ack: where it cut back to).
    pub acked: i64,
    /// When it was last caught up (§4.3); the master's start until it first is.
    pub caught_up_ms: i64,
    /// Whether a connection of it is open and past its first ack.
    pub connected: bool,
    /// It said it never joins the SyncStateSet.
    pub async_learner: bool,
}

#[derive(Debug)]
pub(super) struct Slave {
    pub(super) info: SlaveInfo,
    /// The connection whose acks count; an older one of the same slave is ignored.
    generation: u64,
    /// The master's CommitLog end when it last sent this slave bytes, and when.
    pub(super) last_master_max: i64,
    pub(super) last_transfer_ms: i64,
}

impl Slave {
    /// The caught-up rule: an ack of the whole log is caught up now; an ack reaching the log's
    /// end at the last transfer was caught up at that transfer.
    pub(super) fn record_ack(&mut self, offset: i64, max: i64, now: i64) {
        self.info.acked = offset;
        if self.info.async_learner {
            return;
        }
        if offset >= max {
            self.info.caught_up_ms = now;
        } else if offset >= self.last_master_max {
            self.info.caught_up_ms = self.info.caught_up_ms.max(self.last_transfer_ms);
        }
    }
}

/// Every slave seen, and the effective SyncStateSet.
#[derive(Debug)]
pub(super) struct Table {
    master_id: i64,
    started_ms: i64,
    pub(super) sss: BTreeSet<i64>,
    pub(super) slaves: BTreeMap<i64, Slave>,
    generation: u64,
}

impl Table {
    /// Master `master_id`, started at `started_ms`, alone in its set.
    pub(super) fn new(master_id: i64, started_ms: i64) -> Self {
        Table {
            master_id,
            started_ms,
            sss: BTreeSet::from([master_id]),
            slaves: BTreeMap::new(),
            generation: 0,
        }
    }

    /// The effective set; the master is always in it.
    pub(super) fn set_sss(&mut self, mut set: BTreeSet<i64>) {
        set.insert(self.master_id);
        self.sss = set;
    }

    /// The members other than the master, with what is known of them.
    fn others(&self) -> impl Iterator<Item = (i64, Option<&Slave>)> + '_ {
        let others = self.sss.iter().filter(|id| **id != self.master_id);
        others.map(|id| (*id, self.slaves.get(id)))
    }

    /// The smallest ack of the members, capped by the CommitLog end `max`. A member whose
    /// connection dropped holds it at its last ack until the controller confirms the set
    /// without it, and a member never heard from holds it at 0: readers never see bytes a
    /// member of the set, which the controller may elect, lacks.
    pub(super) fn confirm(&self, max: i64) -> i64 {
        self.others()
            .fold(max, |low, (_, s)| low.min(s.map_or(0, |s| s.info.acked)))
            .max(0)
    }

    /// Whether every member but the master acknowledged `end` (connected now or not: an ack
    /// is a fact about its CommitLog).
    pub(super) fn all_acked(&self, end: i64) -> bool {
        self.others()
            .all(|(_, s)| s.is_some_and(|s| s.info.acked >= end))
    }

    /// How many members but the master acknowledged `end`.
    pub(super) fn acked_count(&self, end: i64) -> usize {
        self.others()
            .filter(|(_, s)| s.is_some_and(|s| s.info.acked >= end))
            .count()
    }

    /// The set to propose (see `AutoSwitchMaster::caught_up_slaves`).
    pub(super) fn proposal(
        &self,
        confirm: i64,
        epoch_start: i64,
        now_ms: i64,
        max_lag_ms: i64,
    ) -> BTreeSet<i64> {
        let mut out = BTreeSet::from([self.master_id]);
        for (id, s) in &self.slaves {
            let fresh = now_ms.saturating_sub(s.info.caught_up_ms) <= max_lag_ms;
            if *id == self.master_id || !s.info.connected || s.info.async_learner || !fresh {
                continue;
            }
            let joins = s.info.acked >= confirm && s.info.acked >= epoch_start;
            if self.sss.contains(id) || joins {
                out.insert(*id);
            }
        }
        out
    }

    /// A connection of `id` past its first ack `acked`: the one whose acks count from now.
    /// A slave seen before keeps its caught-up time; a new one starts at the master's start,
    /// so a member named by the controller has `haMaxTimeSlaveNotCatchup` to catch up.
    pub(super) fn register(
        &mut self,
        id: i64,
        async_learner: bool,
        acked: i64,
        max: i64,
        now: i64,
    ) -> u64 {
        self.generation += 1;
        let generation = self.generation;
        let slave = self.slaves.entry(id).or_insert(Slave {
            info: SlaveInfo {
                acked,
                caught_up_ms: self.started_ms,
                connected: true,
                async_learner,
            },
            generation,
            last_master_max: i64::MAX,
            last_transfer_ms: 0,
        });
        slave.generation = generation;
        slave.info.connected = true;
        slave.info.async_learner = async_learner;
        // Nothing sent on this connection yet: only an ack of the whole log is caught up.
        slave.last_master_max = i64::MAX;
        slave.record_ack(acked, max, now);
        generation
    }

    /// Slave `id` if `generation` is its current connection.
    pub(super) fn current(&mut self, id: i64, generation: u64) -> Option<&mut Slave> {
        let slave = self.slaves.get_mut(&id)?;
        (slave.generation == generation).then_some(slave)
    }
}
