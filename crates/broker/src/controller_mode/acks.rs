//! What a SYNC write needs on a controller-mode master (RocketMQ's CommitLog put path in
//! controller mode, docs/controller-design.md §4.3): enough in-sync replicas to accept it
//! (`minInSyncReplicas`), then the acknowledgements it waits for — every SyncStateSet member
//! with `allAckInSyncStateSet`, else `inSyncReplicas` replicas counting the master.
//!
//! What must stay true: a write refused here is not stored; a write acknowledged as
//! SEND_OK is on every replica the controller could elect when `allAckInSyncStateSet=true`.

use std::time::Duration;

use rocketpy_protocol::code::response::SYSTEM_ERROR;
use rocketpy_remoting::ProcessError;
use rocketpy_store::BrokerRole;

use super::config::ControllerModeConfig;
use crate::ha::autoswitch::AutoSwitchMaster;
use crate::state::BrokerInner;

/// Refuses a SYNC write before it is stored when the SyncStateSet is smaller than
/// `minInSyncReplicas` (RocketMQ's IN_SYNC_REPLICAS_NOT_ENOUGH, answered as SYSTEM_ERROR).
pub fn check_in_sync_replicas(broker: &BrokerInner) -> Result<(), ProcessError> {
    let Some(master) = broker.replicas.as_ref().and_then(|r| r.ha_master()) else {
        return Ok(());
    };
    if broker.store.role() != BrokerRole::SyncMaster {
        return Ok(());
    }
    let have = master.sync_state_set().len() as i64;
    let min = i64::from(broker.settings.controller.min_in_sync_replicas);
    if have < min {
        return Err(ProcessError::new(
            SYSTEM_ERROR,
            format!(
                "in-sync replicas not enough: {have} in the SyncStateSet, minInSyncReplicas={min}"
            ),
        ));
    }
    Ok(())
}

/// Waits for the acknowledgements a SYNC write needs; false on timeout.
pub async fn wait(master: &AutoSwitchMaster, need: AckNeed, end: i64, timeout: Duration) -> bool {
    match need {
        AckNeed::All => master.wait_for_all(end, timeout).await,
        AckNeed::Replicas(others) => master.wait_for_count(end, others, timeout).await,
    }
}

/// Which acknowledgements a SYNC write waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckNeed {
    /// Every SyncStateSet member (`allAckInSyncStateSet=true`).
    All,
    /// This many replicas besides the master (`inSyncReplicas - 1`).
    Replicas(usize),
}

impl AckNeed {
    pub fn of(config: &ControllerModeConfig) -> Self {
        match config.all_ack_in_sync_state_set {
            true => AckNeed::All,
            false => AckNeed::Replicas(
                usize::try_from(config.in_sync_replicas.saturating_sub(1)).unwrap_or(0),
            ),
        }
    }
}
