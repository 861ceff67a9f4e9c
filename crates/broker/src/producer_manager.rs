//! Producer groups as announced by HEART_BEAT: which connections belong to a group, so the
//! transaction check can ask one of them. Members leave on UNREGISTER_CLIENT, when their
//! connection closes, or after `channelExpiredTimeout` without a heartbeat.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use rocketpy_remoting::Connection;

#[derive(Debug)]
struct Member {
    conn: Arc<Connection>,
    last_update: Instant,
}

/// Producer groups known to this broker: group -> client id -> member.
#[derive(Debug, Default)]
pub struct ProducerManager {
    groups: RwLock<HashMap<String, BTreeMap<String, Member>>>,
}

impl ProducerManager {
    /// Records a heartbeat of `client_id` in `group`.
    pub fn register(&self, group: &str, client_id: &str, conn: &Arc<Connection>) {
        let member = Member {
            conn: conn.clone(),
            last_update: Instant::now(),
        };
        let mut groups = self.groups.write();
        groups
            .entry(group.to_owned())
            .or_default()
            .insert(client_id.to_owned(), member);
    }

    /// Removes a client from a group (UNREGISTER_CLIENT).
    pub fn unregister(&self, group: &str, client_id: &str) {
        let mut groups = self.groups.write();
        if let Some(members) = groups.get_mut(group) {
            members.remove(client_id);
            if members.is_empty() {
                groups.remove(group);
            }
        }
    }

    /// Removes every member using `conn_id`.
    pub fn on_connection_closed(&self, conn_id: u64) {
        self.remove_where(|m| m.conn.id() == conn_id);
    }

    /// Removes members silent for longer than `expiry`.
    pub fn scan_expired(&self, expiry: Duration) {
        self.remove_where(|m| m.last_update.elapsed() > expiry);
    }

    fn remove_where(&self, dead: impl Fn(&Member) -> bool) {
        let mut groups = self.groups.write();
        for members in groups.values_mut() {
            members.retain(|_, m| !dead(m));
        }
        groups.retain(|_, members| !members.is_empty());
    }

    /// A live connection of `group`, a different one on each call (`turn`), so a producer
    /// that ignores checks does not take all of them.
    pub fn available_connection(&self, group: &str, turn: usize) -> Option<Arc<Connection>> {
        let groups = self.groups.read();
        let live: Vec<&Member> = groups
            .get(group)?
            .values()
            .filter(|m| !m.conn.is_closed())
            .collect();
        (!live.is_empty()).then(|| live[turn % live.len()].conn.clone())
    }
}
