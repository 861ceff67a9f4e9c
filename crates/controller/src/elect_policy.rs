//! Who becomes master (RocketMQ's `DefaultElectPolicy`).
//!
//! Candidates are tried in two rounds: the SyncStateSet (replicas known to hold every
//! acknowledged message), then, only with `enableElectUncleanMaster`, every member (which may
//! lose acknowledged messages). In a round only alive candidates count, and:
//! 1. the old master stays if it is a candidate and no other id is preferred;
//! 2. a preferred id (designated election) is taken if it is a candidate, else nobody is;
//! 3. otherwise the best heartbeat wins: greatest epoch, then greatest max offset, then the
//!    lowest election priority.
//!
//! What must stay true: the choice depends only on its inputs and is total. RocketMQ orders
//! equal candidates by a `TreeSet` that keeps whichever came first from a `HashSet`; here
//! equal candidates are ordered by the smaller id, so every controller picks the same one.
//! RocketMQ also compares offsets and priorities by subtraction, which overflows for distant
//! values; here they are compared as numbers.

use std::cmp::Reverse;
use std::collections::BTreeSet;

use crate::liveness::Liveness;

/// Picks the new master of `broker_name`, or `None` if nobody may be.
///
/// `all_replicas` is `Some` only with `enableElectUncleanMaster`.
pub fn elect(
    liveness: &dyn Liveness,
    broker_name: &str,
    sync_state_set: &BTreeSet<i64>,
    all_replicas: Option<&BTreeSet<i64>>,
    old_master: Option<i64>,
    preferred: Option<i64>,
) -> Option<i64> {
    try_round(liveness, broker_name, sync_state_set, old_master, preferred).or_else(|| {
        all_replicas.and_then(|all| try_round(liveness, broker_name, all, old_master, preferred))
    })
}

fn try_round(
    liveness: &dyn Liveness,
    broker_name: &str,
    candidates: &BTreeSet<i64>,
    old_master: Option<i64>,
    preferred: Option<i64>,
) -> Option<i64> {
    let alive: Vec<(i64, crate::BrokerLiveInfo)> = candidates
        .iter()
        .filter_map(|id| {
            liveness
                .live_info(broker_name, *id)
                .filter(|info| info.alive)
                .map(|info| (*id, info))
        })
        .collect();
    if alive.is_empty() {
        return None;
    }
    let is_candidate = |id: i64| alive.iter().any(|(c, _)| *c == id);
    if let Some(old) = old_master {
        if is_candidate(old) && preferred.is_none_or(|p| p == old) {
            return Some(old);
        }
    }
    if let Some(p) = preferred {
        return is_candidate(p).then_some(p);
    }
    alive
        .iter()
        .min_by_key(|(id, info)| {
            (
                Reverse(info.epoch),
                Reverse(info.max_offset),
                info.election_priority,
                *id,
            )
        })
        .map(|(id, _)| *id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::liveness::{BrokerLiveInfo, LivenessTable};

    fn table(entries: &[(i64, bool, i32, i64, i32)]) -> LivenessTable {
        let mut t = LivenessTable::new();
        for &(id, alive, epoch, max_offset, prio) in entries {
            t.set(
                "a",
                id,
                BrokerLiveInfo {
                    alive,
                    epoch,
                    max_offset,
                    confirm_offset: max_offset,
                    election_priority: prio,
                },
            );
        }
        t
    }

    #[test]
    fn keeps_an_alive_old_master() {
        let t = table(&[(1, true, 1, 10, 5), (2, true, 2, 99, 0)]);
        let sss = [1, 2].into();
        assert_eq!(elect(&t, "a", &sss, None, Some(1), None), Some(1));
        assert_eq!(elect(&t, "a", &sss, None, Some(1), Some(1)), Some(1));
        assert_eq!(elect(&t, "a", &sss, None, Some(1), Some(2)), Some(2));
        assert_eq!(elect(&t, "a", &sss, None, Some(1), Some(3)), None);
    }

    #[test]
    fn orders_by_epoch_offset_priority_then_id() {
        let t = table(&[
            (1, false, 9, 999, 0),
            (2, true, 2, 50, 9),
            (3, true, 2, 70, 9),
            (4, true, 1, 900, 0),
            (5, true, 2, 70, 3),
            (6, true, 2, 70, 3),
        ]);
        let sss = [1, 2, 3, 4, 5, 6].into();
        assert_eq!(elect(&t, "a", &sss, None, Some(1), None), Some(5));
        let sss = [2, 3, 4].into();
        assert_eq!(elect(&t, "a", &sss, None, None, None), Some(3));
    }

    #[test]
    fn unclean_round_only_when_given() {
        let t = table(&[(1, false, 1, 10, 0), (2, true, 1, 5, 0)]);
        let sss = [1].into();
        let all = [1, 2].into();
        assert_eq!(elect(&t, "a", &sss, None, Some(1), None), None);
        assert_eq!(elect(&t, "a", &sss, Some(&all), Some(1), None), Some(2));
        assert_eq!(elect(&t, "a", &sss, Some(&all), Some(1), Some(2)), Some(2));
    }
}
