//! Consumer groups as announced by HEART_BEAT: members (client id -> connection), their
//! subscriptions, and expiry of members that stopped sending heartbeats.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use rocketpy_protocol::body::admin::{ClientConnection, ConsumerConnection};
use rocketpy_protocol::body::heartbeat::{ConsumeFromWhere, ConsumeType, MessageModel};
use rocketpy_protocol::body::{ConsumerData, SubscriptionData};
use rocketpy_protocol::LanguageCode;
use rocketpy_remoting::Connection;

use crate::producer_manager::client_connection;

#[derive(Debug, Clone)]
struct Member {
    conn: Arc<Connection>,
    /// The client's language and protocol version (its heartbeat's header), for mqadmin.
    client: (LanguageCode, i32),
    /// The last heartbeat, in ms of the broker's clock.
    last_update: i64,
}

#[derive(Debug, Default)]
struct GroupInfo {
    members: BTreeMap<String, Member>,
    subscriptions: HashMap<String, SubscriptionData>,
    message_model: MessageModel,
    consume_type: ConsumeType,
    consume_from_where: ConsumeFromWhere,
}

/// Consumer groups known to this broker.
#[derive(Debug, Default)]
pub struct ConsumerManager {
    groups: RwLock<HashMap<String, GroupInfo>>,
}

/// A group whose membership changed, with the connections to notify.
pub type Changed = (String, Vec<Arc<Connection>>);

impl ConsumerManager {
    /// An empty manager.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a heartbeat; returns the connections to notify if membership changed.
    pub fn register(
        &self,
        client_id: &str,
        conn: &Arc<Connection>,
        client: (LanguageCode, i32),
        data: &ConsumerData,
        now: i64,
    ) -> Option<Changed> {
        let mut groups = self.groups.write();
        let group = groups.entry(data.group_name.clone()).or_default();
        group.message_model = data.message_model;
        group.consume_type = data.consume_type;
        group.consume_from_where = data.consume_from_where;
        for sub in &data.subscription_data_set {
            let newer = group
                .subscriptions
                .get(&sub.topic)
                .map(|old| old.sub_version < sub.sub_version || old.sub_string != sub.sub_string)
                .unwrap_or(true);
            if newer {
                group.subscriptions.insert(sub.topic.clone(), sub.clone());
            }
        }
        // Topics the client no longer subscribes are dropped (RocketMQ's updateSubscription).
        let topics: Vec<&str> = data
            .subscription_data_set
            .iter()
            .map(|s| s.topic.as_str())
            .collect();
        if !topics.is_empty() {
            group
                .subscriptions
                .retain(|t, _| topics.contains(&t.as_str()));
        }
        let previous = group.members.insert(
            client_id.to_owned(),
            Member {
                conn: conn.clone(),
                client,
                last_update: now,
            },
        );
        let changed = previous.map(|p| p.conn.id() != conn.id()).unwrap_or(true);
        changed.then(|| {
            (
                data.group_name.clone(),
                group.members.values().map(|m| m.conn.clone()).collect(),
            )
        })
    }

    /// Removes a client from a group (UNREGISTER_CLIENT).
    pub fn unregister(&self, group: &str, client_id: &str) -> Option<Changed> {
        let mut groups = self.groups.write();
        let info = groups.get_mut(group)?;
        info.members.remove(client_id)?;
        let conns = info.members.values().map(|m| m.conn.clone()).collect();
        if info.members.is_empty() {
            groups.remove(group);
        }
        Some((group.to_owned(), conns))
    }

    /// Removes every member using `conn_id`; returns the groups that changed.
    pub fn on_connection_closed(&self, conn_id: u64) -> Vec<Changed> {
        self.remove_where(|m| m.conn.id() == conn_id)
    }

    /// Removes members silent for longer than `expiry` at `now` (ms of the broker's clock).
    pub fn scan_expired(&self, expiry: Duration, now: i64) -> Vec<Changed> {
        self.remove_where(|m| {
            let dead = now.saturating_sub(m.last_update) > expiry.as_millis() as i64;
            if dead {
                tracing::warn!(peer = %m.conn.peer(), "consumer expired: no heartbeat within {expiry:?}");
                m.conn.close();
            }
            dead
        })
    }

    fn remove_where(&self, dead: impl Fn(&Member) -> bool) -> Vec<Changed> {
        let mut groups = self.groups.write();
        let mut changed = Vec::new();
        for (name, info) in groups.iter_mut() {
            let before = info.members.len();
            info.members.retain(|_, m| !dead(m));
            if info.members.len() != before {
                changed.push((
                    name.clone(),
                    info.members.values().map(|m| m.conn.clone()).collect(),
                ));
            }
        }
        groups.retain(|_, info| !info.members.is_empty());
        changed
    }

    /// Client ids of a group's members, sorted.
    pub fn consumer_ids(&self, group: &str) -> Option<Vec<String>> {
        self.groups
            .read()
            .get(group)
            .map(|g| g.members.keys().cloned().collect())
    }

    /// The group's subscription to `topic`: `Err(())` if the group is unknown.
    #[allow(clippy::result_unit_err)]
    pub fn find_subscription(
        &self,
        group: &str,
        topic: &str,
    ) -> Result<Option<SubscriptionData>, ()> {
        let groups = self.groups.read();
        let info = groups.get(group).ok_or(())?;
        Ok(info.subscriptions.get(topic).cloned())
    }

    /// The message model of a group, if known.
    pub fn message_model(&self, group: &str) -> Option<MessageModel> {
        self.groups.read().get(group).map(|g| g.message_model)
    }

    /// GET_CONSUMER_CONNECTION_LIST's answer, if the group has members.
    pub fn connection(&self, group: &str) -> Option<ConsumerConnection> {
        let groups = self.groups.read();
        let g = groups.get(group).filter(|g| !g.members.is_empty())?;
        let connection_set: Vec<ClientConnection> = g
            .members
            .iter()
            .map(|(id, m)| client_connection(id, &m.conn, m.client))
            .collect();
        Some(ConsumerConnection {
            connection_set,
            subscription_table: g
                .subscriptions
                .iter()
                .map(|(t, s)| (t.clone(), s.clone()))
                .collect(),
            consume_type: g.consume_type,
            message_model: g.message_model,
            consume_from_where: g.consume_from_where,
        })
    }

    /// One `(group, language, version, consume type)` per member (metrics).
    pub fn members(&self) -> Vec<(String, LanguageCode, i32, ConsumeType)> {
        self.groups
            .read()
            .iter()
            .flat_map(|(name, g)| {
                g.members
                    .values()
                    .map(move |m| (name.clone(), m.client.0, m.client.1, g.consume_type))
            })
            .collect()
    }

    /// Groups with members subscribed to `topic`.
    pub fn groups_of_topic(&self, topic: &str) -> Vec<String> {
        self.groups
            .read()
            .iter()
            .filter(|(_, g)| g.subscriptions.contains_key(topic))
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Every member connection of `group`.
    pub fn member_connections(&self, group: &str) -> Vec<Arc<Connection>> {
        self.groups
            .read()
            .get(group)
            .map(|g| g.members.values().map(|m| m.conn.clone()).collect())
            .unwrap_or_default()
    }
}
