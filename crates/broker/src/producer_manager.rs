//! Producer groups as announced by HEART_BEAT: which connections belong to a group, so the
//! transaction check can ask one of them. Members leave on UNREGISTER_CLIENT, when their
//! connection closes, or after `channelExpiredTimeout` without a heartbeat.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use rocketpy_protocol::body::admin::ClientConnection;
use rocketpy_protocol::LanguageCode;
use rocketpy_remoting::Connection;

#[derive(Debug)]
struct Member {
    conn: Arc<Connection>,
    /// The client's language and protocol version (its heartbeat's header), for mqadmin.
    client: (LanguageCode, i32),
    /// The last heartbeat, in ms of the broker's clock.
    last_update: i64,
}

/// Producer groups known to this broker: group -> client id -> member.
#[derive(Debug, Default)]
pub struct ProducerManager {
    groups: RwLock<HashMap<String, BTreeMap<String, Member>>>,
}

impl ProducerManager {
    /// Records a heartbeat of `client_id` in `group` at `now` (ms of the broker's clock).
    pub fn register(
        &self,
        group: &str,
        client_id: &str,
        conn: &Arc<Connection>,
        client: (LanguageCode, i32),
        now: i64,
    ) {
        let member = Member {
            conn: conn.clone(),
            client,
            last_update: now,
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

    /// Removes members silent for longer than `expiry` at `now` (ms of the broker's clock).
    pub fn scan_expired(&self, expiry: Duration, now: i64) {
        self.remove_where(|m| now.saturating_sub(m.last_update) > expiry.as_millis() as i64);
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

    /// One `(language, version)` per member of every group (metrics).
    pub fn members(&self) -> Vec<(LanguageCode, i32)> {
        self.groups
            .read()
            .values()
            .flat_map(|members| members.values().map(|m| m.client))
            .collect()
    }

    /// The group's members as GET_PRODUCER_CONNECTION_LIST lists them.
    pub fn connections(&self, group: &str) -> Vec<ClientConnection> {
        let groups = self.groups.read();
        groups
            .get(group)
            .map(|members| {
                members
                    .iter()
                    .map(|(id, m)| client_connection(id, &m.conn, m.client))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// One member as mqadmin shows it.
pub(crate) fn client_connection(
    client_id: &str,
    conn: &Connection,
    (language, version): (LanguageCode, i32),
) -> ClientConnection {
    ClientConnection {
        client_id: client_id.to_owned(),
        client_addr: conn.peer().to_string(),
        language: language.name().to_owned(),
        version,
    }
}
