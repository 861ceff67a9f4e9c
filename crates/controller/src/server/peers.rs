//! `controllerDLegerPeers` (`n0-127.0.0.1:9878;n1-127.0.0.1:9868`) and `controllerDLegerSelfId`:
//! the controllers of a group, by the ids people write, mapped to openraft's numeric ids.
//!
//! What must stay true: every controller of a group maps the same peers string to the same
//! numeric ids, whatever the order of the list, so the numbers are the positions of the ids
//! in sorted order (the Raft membership is stored by number). The ids and addresses must be
//! unique, and the address is `host:port`.

use std::collections::BTreeMap;

use crate::raft::{self, NodeId};

/// More controllers than this is a mistake (RocketMQ documents 3 or 5).
const MAX_PEERS: usize = 64;

/// Why a peers setting is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeerError {
    #[error("controllerDLegerPeers is empty: list the group's controllers as id-host:port;id-host:port (e.g. n0-127.0.0.1:9878)")]
    Empty,
    #[error("controllerDLegerPeers entry {0:?} is not id-host:port (e.g. n0-127.0.0.1:9878)")]
    Entry(String),
    #[error("controllerDLegerPeers names {0:?} twice")]
    Duplicate(String),
    #[error("controllerDLegerPeers lists more than {MAX_PEERS} controllers")]
    TooMany,
    #[error("controllerDLegerSelfId {0:?} is not one of controllerDLegerPeers' ids ({1})")]
    SelfId(String, String),
}

/// The group's controllers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peers {
    /// id as written → address, in id order (the index is the numeric id).
    by_name: BTreeMap<String, String>,
    self_name: String,
}

impl Peers {
    /// Reads `peers` and finds `self_id` among them.
    pub fn parse(peers: &str, self_id: &str) -> Result<Self, PeerError> {
        let mut by_name = BTreeMap::new();
        for entry in peers.split(';').map(str::trim).filter(|e| !e.is_empty()) {
            if by_name.len() == MAX_PEERS {
                return Err(PeerError::TooMany);
            }
            let (name, addr) = entry
                .split_once('-')
                .filter(|(n, a)| {
                    !n.is_empty()
                        && a.rsplit_once(':').is_some_and(|(h, p)| {
                            !h.is_empty() && p.parse::<u16>().is_ok_and(|p| p != 0)
                        })
                })
                .ok_or_else(|| PeerError::Entry(entry.to_owned()))?;
            if by_name.values().any(|a| a == addr)
                || by_name.insert(name.to_owned(), addr.to_owned()).is_some()
            {
                return Err(PeerError::Duplicate(entry.to_owned()));
            }
        }
        if by_name.is_empty() {
            return Err(PeerError::Empty);
        }
        if !by_name.contains_key(self_id) {
            let ids = by_name.keys().cloned().collect::<Vec<_>>().join(", ");
            return Err(PeerError::SelfId(self_id.to_owned(), ids));
        }
        Ok(Self {
            by_name,
            self_name: self_id.to_owned(),
        })
    }

    /// This controller's numeric id.
    pub fn self_id(&self) -> NodeId {
        self.id_of(&self.self_name).unwrap_or_default()
    }

    /// This controller's id as written.
    pub fn self_name(&self) -> &str {
        &self.self_name
    }

    /// This controller's address (where it listens).
    pub fn self_addr(&self) -> &str {
        &self.by_name[&self.self_name]
    }

    /// The numeric id of a written id.
    pub fn id_of(&self, name: &str) -> Option<NodeId> {
        self.by_name
            .keys()
            .position(|n| n == name)
            .map(|i| i as NodeId)
    }

    /// The written id of a numeric id.
    pub fn name_of(&self, id: NodeId) -> Option<&str> {
        self.by_name.keys().nth(id as usize).map(String::as_str)
    }

    /// The address of a numeric id.
    pub fn addr_of(&self, id: NodeId) -> Option<&str> {
        self.by_name.values().nth(id as usize).map(String::as_str)
    }

    /// openraft's membership of the group.
    pub fn membership(&self) -> raft::Peers {
        raft::peers(
            self.by_name
                .values()
                .enumerate()
                .map(|(i, addr)| (i as NodeId, addr.as_str())),
        )
    }

    /// GET_METADATA_INFO's `peers`: `id:addr;` per controller, as RocketMQ writes it.
    pub fn metadata_text(&self) -> String {
        self.by_name
            .iter()
            .map(|(n, a)| format!("{n}:{a};"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_do_not_depend_on_list_order() {
        let a = Peers::parse("n0-h:1;n1-h:2;n2-h:3", "n1").unwrap();
        let b = Peers::parse("n2-h:3; n1-h:2 ;n0-h:1;", "n1").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.self_id(), 1);
        assert_eq!(a.addr_of(2), Some("h:3"));
        assert_eq!(a.name_of(0), Some("n0"));
        assert_eq!(a.metadata_text(), "n0:h:1;n1:h:2;n2:h:3;");
        assert_eq!(a.membership().len(), 3);
    }

    #[test]
    fn refuses_bad_lists() {
        assert_eq!(Peers::parse("", "n0"), Err(PeerError::Empty));
        assert!(matches!(
            Peers::parse("n0:h:1", "n0"),
            Err(PeerError::Entry(_))
        ));
        assert!(matches!(
            Peers::parse("n0-h:0", "n0"),
            Err(PeerError::Entry(_))
        ));
        assert!(matches!(
            Peers::parse("n0-h:1;n0-h:2", "n0"),
            Err(PeerError::Duplicate(_))
        ));
        assert!(matches!(
            Peers::parse("n0-h:1;n1-h:1", "n0"),
            Err(PeerError::Duplicate(_))
        ));
        assert!(matches!(
            Peers::parse("n0-h:1", "n9"),
            Err(PeerError::SelfId(..))
        ));
        let many: String = (0..65).map(|i| format!("n{i}-h:{};", i + 1)).collect();
        assert_eq!(Peers::parse(&many, "n0"), Err(PeerError::TooMany));
    }
}
