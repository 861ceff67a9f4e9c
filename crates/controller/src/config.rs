//! The controller keys the state machine's decisions depend on (RocketMQ's `ControllerConfig`).
//! The keys of the Raft group, the store path and the timers belong to the network step.

/// Decision keys of the controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ControllerConfig {
    /// `enableElectUncleanMaster` (default false): when no replica of the SyncStateSet is
    /// alive, elect any alive member. Acknowledged messages may then be lost.
    pub enable_elect_unclean_master: bool,
}
