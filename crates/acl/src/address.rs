//! Remote address patterns of `plain_acl.yml` (`globalWhiteRemoteAddresses`, an account's
//! `whiteRemoteAddress`), with RocketMQ's forms:
//! - blank: matches nothing; `*` (or `*.*.*.*`, `*:*:*:*:*:*:*:*`): everything;
//! - `192.168.1.{1,2}` or `192.168.1.1,192.168.1.2`: those addresses;
//! - `192.168.*.*`, `10.10.103.*`, `192.168.1.1-100`, `192.168.1-5.*`: the first `*` or
//!   `a-b` among the last three parts is the range, the parts before it must be equal, the
//!   parts after it are not looked at (RocketMQ's rule);
//! - IPv6: an address, a list, or `*` / `a-b` (hex) in its last group;
//! - anything else: one address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// One parsed pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddressPattern {
    /// Blank: no address.
    Never,
    /// Every address.
    Any,
    /// Exactly these addresses.
    Set(Vec<IpAddr>),
    /// IPv4: `prefix` equal, part `prefix.len()` within `lo..=hi`.
    Range4 { prefix: Vec<u8>, lo: u8, hi: u8 },
    /// IPv6: the first seven groups equal, the last within `lo..=hi`.
    Range6 { prefix: [u16; 7], lo: u16, hi: u16 },
}

fn bad(text: &str) -> String {
    format!("remote address pattern {text:?} is not an address, a list, a range or *")
}

fn ip(text: &str) -> Result<IpAddr, String> {
    text.trim().parse::<IpAddr>().map_err(|_| bad(text))
}

fn range4(part: &str) -> Option<(u8, u8)> {
    if part == "*" {
        return Some((0, 255));
    }
    let (a, b) = part.split_once('-')?;
    let (a, b): (u8, u8) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    (a <= b && b > 0).then_some((a, b))
}

fn range6(part: &str) -> Option<(u16, u16)> {
    if part == "*" {
        return Some((0, 0xffff));
    }
    let (a, b) = part.split_once('-')?;
    let (a, b) = (
        u16::from_str_radix(a.trim(), 16).ok()?,
        u16::from_str_radix(b.trim(), 16).ok()?,
    );
    (a <= b && b > 0).then_some((a, b))
}

impl AddressPattern {
    /// Parses a pattern; an invalid one is an error naming it.
    pub fn parse(text: &str) -> Result<AddressPattern, String> {
        let t = text.trim();
        if t.is_empty() {
            return Ok(AddressPattern::Never);
        }
        if t == "*" || t == "*.*.*.*" || t == "*:*:*:*:*:*:*:*" {
            return Ok(AddressPattern::Any);
        }
        if let Some(head) = t.strip_suffix('}') {
            let (prefix, list) = head.rsplit_once('{').ok_or_else(|| bad(t))?;
            let addrs = list
                .split(',')
                .map(|last| ip(&format!("{prefix}{}", last.trim())))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(AddressPattern::Set(addrs));
        }
        if t.contains(',') {
            return Ok(AddressPattern::Set(
                t.split(',').map(ip).collect::<Result<_, _>>()?,
            ));
        }
        if t.contains('*') || t.contains('-') {
            return if t.contains(':') {
                Self::parse6(t)
            } else {
                Self::parse4(t)
            };
        }
        Ok(AddressPattern::Set(vec![ip(t)?]))
    }

    fn parse4(t: &str) -> Result<AddressPattern, String> {
        let parts: Vec<&str> = t.split('.').collect();
        if parts.len() != 4 {
            return Err(bad(t));
        }
        for i in 1..4 {
            if let Some((lo, hi)) = range4(parts[i]) {
                let prefix = parts[..i]
                    .iter()
                    .map(|p| p.parse::<u8>().map_err(|_| bad(t)))
                    .collect::<Result<Vec<u8>, _>>()?;
                return Ok(AddressPattern::Range4 { prefix, lo, hi });
            }
        }
        Err(bad(t))
    }

    fn parse6(t: &str) -> Result<AddressPattern, String> {
        let (head, last) = t.rsplit_once(':').ok_or_else(|| bad(t))?;
        let (lo, hi) = range6(last).ok_or_else(|| bad(t))?;
        let full: Ipv6Addr = format!("{head}:0").parse().map_err(|_| bad(t))?;
        let g = full.segments();
        let mut prefix = [0u16; 7];
        prefix.copy_from_slice(&g[..7]);
        Ok(AddressPattern::Range6 { prefix, lo, hi })
    }

    /// Whether `addr` matches.
    pub fn matches(&self, addr: IpAddr) -> bool {
        let addr = match addr {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(addr, IpAddr::V4),
            v4 => v4,
        };
        match (self, addr) {
            (AddressPattern::Never, _) => false,
            (AddressPattern::Any, _) => true,
            (AddressPattern::Set(set), a) => set.contains(&a),
            (AddressPattern::Range4 { prefix, lo, hi }, IpAddr::V4(a)) => {
                let o = a.octets();
                o[..prefix.len()] == prefix[..] && (*lo..=*hi).contains(&o[prefix.len()])
            }
            (AddressPattern::Range6 { prefix, lo, hi }, IpAddr::V6(a)) => {
                let g = a.segments();
                g[..7] == prefix[..] && (*lo..=*hi).contains(&g[7])
            }
            _ => false,
        }
    }
}

/// Loopback, for tests and defaults.
pub const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, addr: &str) -> bool {
        AddressPattern::parse(pattern)
            .unwrap()
            .matches(addr.parse().unwrap())
    }

    #[test]
    fn rocketmq_pattern_forms() {
        assert!(!m("", "1.2.3.4"));
        assert!(m("*", "1.2.3.4") && m("*.*.*.*", "::1"));
        assert!(m("192.168.1.{1,2}", "192.168.1.2") && !m("192.168.1.{1,2}", "192.168.1.3"));
        assert!(m("10.0.0.1,10.0.0.9", "10.0.0.9") && !m("10.0.0.1,10.0.0.9", "10.0.0.2"));
        assert!(m("192.168.*.*", "192.168.7.7") && !m("192.168.*.*", "192.169.7.7"));
        assert!(m("10.10.103.*", "10.10.103.200"));
        assert!(m("192.168.1.1-100", "192.168.1.100") && !m("192.168.1.1-100", "192.168.1.101"));
        assert!(m("192.168.1-5.*", "192.168.5.1") && !m("192.168.1-5.*", "192.168.6.1"));
        assert!(m("127.0.0.1", "127.0.0.1") && !m("127.0.0.1", "127.0.0.2"));
        assert!(
            m("127.0.0.1", "::ffff:127.0.0.1"),
            "an IPv4-mapped address is its IPv4 one"
        );
        assert!(m("::1", "0:0:0:0:0:0:0:1"));
        assert!(m("2001:db8::*", "2001:db8::5") && !m("2001:db8::*", "2001:db9::5"));
        assert!(m("2001:db8::1-ff", "2001:db8::ff") && !m("2001:db8::1-ff", "2001:db8::100"));
        for broken in [
            "1.2.3",
            "a.b.c.*",
            "1.2.3.300",
            "1.2.{x",
            "300-1.1.1.1",
            "foo",
        ] {
            assert!(AddressPattern::parse(broken).is_err(), "{broken}");
        }
    }
}
