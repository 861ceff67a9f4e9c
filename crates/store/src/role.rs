//! The store's replication role now. A broker's role is fixed by `brokerRole` unless it runs
//! in controller mode, where the controller changes it (slave ↔ master) while the store stays
//! open; every put and the delayed-delivery worker read it here.
//!
//! What must stay true: a store whose role is [`BrokerRole::Slave`] accepts no put (its bytes
//! come only from its master), so a deposed master stops writing the moment it is told.

use std::sync::atomic::{AtomicU8, Ordering};

use crate::config::BrokerRole;

/// A role readable without a lock on every put.
#[derive(Debug)]
pub struct RoleCell(AtomicU8);

fn code(role: BrokerRole) -> u8 {
    match role {
        BrokerRole::AsyncMaster => 0,
        BrokerRole::SyncMaster => 1,
        BrokerRole::Slave => 2,
    }
}

impl RoleCell {
    pub fn new(role: BrokerRole) -> Self {
        Self(AtomicU8::new(code(role)))
    }

    pub fn get(&self) -> BrokerRole {
        match self.0.load(Ordering::Acquire) {
            0 => BrokerRole::AsyncMaster,
            1 => BrokerRole::SyncMaster,
            _ => BrokerRole::Slave,
        }
    }

    pub fn set(&self, role: BrokerRole) {
        self.0.store(code(role), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let cell = RoleCell::new(BrokerRole::Slave);
        for role in [
            BrokerRole::AsyncMaster,
            BrokerRole::SyncMaster,
            BrokerRole::Slave,
        ] {
            cell.set(role);
            assert_eq!(cell.get(), role);
        }
    }
}
