//! Who the HA port serves. RocketMQ's HA port streams the whole CommitLog to anyone who sends
//! an 8-byte offset, and counts that peer's offsets as a slave's acknowledgements; rocketpy
//! serves only the slaves `haAllowedAddresses` names, closing anyone else before a byte is
//! read or sent. With `aclEnable=true`, a master listening beyond loopback without that list
//! would leave a door beside the ACL: it refuses to start and says what to set.

use std::net::IpAddr;
use std::str::FromStr;

use rocketpy_acl::address::AddressPattern;

use crate::error::{BrokerError, Result};

/// The settings that decide who the HA port serves (`BrokerSettings::ha_exposure`).
#[derive(Debug, Clone, Copy)]
pub struct HaExposure<'a> {
    /// `haAllowedAddresses`.
    pub allowed_addresses: Option<&'a str>,
    /// `aclEnable`.
    pub acl_enable: bool,
    /// Whether the broker is a master (only a master listens for slaves).
    pub master: bool,
    /// `bindAddress`.
    pub bind_address: &'a str,
}

/// The patterns of `haAllowedAddresses` (`None`: every peer); refused when a pattern does not
/// parse, or when the ACL is on and a master bound beyond loopback has no list.
pub fn allowed_peers(e: &HaExposure<'_>) -> Result<Option<Vec<AddressPattern>>> {
    let Some(text) = e.allowed_addresses.filter(|t| !t.trim().is_empty()) else {
        let loopback = IpAddr::from_str(e.bind_address).is_ok_and(|ip| ip.is_loopback());
        if e.acl_enable && e.master && !loopback {
            return Err(BrokerError::Config(format!(
                "aclEnable=true, but the HA port (haListenPort) on {} would stream every \
                 message to anyone who connects: set haAllowedAddresses to the slaves' \
                 addresses (patterns as in plain_acl.yml, separated by ';'), or bind the \
                 broker to a loopback address",
                e.bind_address
            )));
        }
        return Ok(None);
    };
    text.split(';')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            AddressPattern::parse(p)
                .map_err(|e| BrokerError::Config(format!("haAllowedAddresses: {e}")))
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// Whether the HA port serves `peer`.
pub fn serves(allowed: Option<&[AddressPattern]>, peer: IpAddr) -> bool {
    allowed.is_none_or(|patterns| patterns.iter().any(|p| p.matches(peer)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exposure<'a>(
        list: Option<&'a str>,
        acl: bool,
        master: bool,
        bind: &'a str,
    ) -> HaExposure<'a> {
        HaExposure {
            allowed_addresses: list,
            acl_enable: acl,
            master,
            bind_address: bind,
        }
    }

    #[test]
    fn acl_on_a_reachable_master_needs_a_list() {
        let e = allowed_peers(&exposure(None, true, true, "0.0.0.0")).unwrap_err();
        assert!(e.to_string().contains("set haAllowedAddresses"), "{e}");
        // Loopback, a slave, or ACL off: no list needed.
        assert!(allowed_peers(&exposure(None, true, true, "127.0.0.1"))
            .unwrap()
            .is_none());
        assert!(allowed_peers(&exposure(None, true, false, "0.0.0.0"))
            .unwrap()
            .is_none());
        assert!(allowed_peers(&exposure(None, false, true, "0.0.0.0"))
            .unwrap()
            .is_none());
    }

    #[test]
    fn listed_peers_only() {
        let list = allowed_peers(&exposure(Some("10.0.0.5; 10.0.1.*"), true, true, "0.0.0.0"))
            .unwrap()
            .unwrap();
        assert!(serves(Some(&list), "10.0.0.5".parse().unwrap()));
        assert!(serves(Some(&list), "10.0.1.77".parse().unwrap()));
        assert!(!serves(Some(&list), "10.0.0.6".parse().unwrap()));
        assert!(serves(None, "192.0.2.1".parse().unwrap()));
        assert!(allowed_peers(&exposure(Some("not an address"), false, true, "0.0.0.0")).is_err());
    }
}
