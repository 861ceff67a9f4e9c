//! Connected 5.x clients (RocketMQ proxy's `GrpcClientSettingsManager` and channel manager):
//! the settings each sent over its telemetry stream and the stream itself, through which
//! the proxy sends commands (orphaned transactions to resolve). A client's first settings
//! are answered with the server's: back-off, batch size, long-polling time, FIFO and the
//! publishing limits a 5.x client needs to finish starting.

pub mod remote;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rocketpy_protocol::body::{fastjson, HeartbeatData, ProducerData};
use rocketpy_protocol::code::{request, response};
use rocketpy_protocol::header::GetSubscriptionGroupConfigRequestHeader;
use tokio::sync::mpsc;

use crate::convert::{duration, wrap, MAX_BODY_SIZE};
use crate::pb::{self, Code};
use crate::status::{ok, ProxyError};

/// Messages one receive asks for (the proxy's `receive_batch_size`).
pub const RECEIVE_BATCH_SIZE: i32 = 32;
/// A consumer's retry back-off before its n-th redelivery (RocketMQ's default
/// `groupRetryPolicy`: the 4.x delay levels 3 to 18).
const CONSUMER_BACKOFF_S: &[i64] = &[
    1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200,
];
/// The client id the proxy heartbeats brokers with, as a producer of each transactional
/// topic's group, so their transaction checks reach it.
pub const PROXY_PRODUCER_CLIENT_ID: &str = "rmq-proxy-producer-client";
/// How often that heartbeat goes out.
pub const PRODUCER_HEARTBEAT: Duration = Duration::from_secs(20);

/// The stream to a client's telemetry call.
pub type TelemetrySender = mpsc::Sender<Result<pb::TelemetryCommand, tonic::Status>>;

/// One client.
#[derive(Debug, Clone)]
pub struct Session {
    /// Its settings as the server answered them.
    pub settings: pb::Settings,
    /// Its namespace.
    pub namespace: String,
    /// Its telemetry stream, while open.
    pub telemetry: Option<TelemetrySender>,
    /// When it last called.
    pub last_seen: Instant,
}

impl Session {
    /// The topics it publishes (as brokers know them).
    pub fn published_topics(&self) -> Vec<String> {
        match &self.settings.pub_sub {
            Some(pb::settings::PubSub::Publishing(p)) => p.topics.iter().map(wrap).collect(),
            _ => Vec::new(),
        }
    }
}

/// Every client, by client id.
#[derive(Debug, Default)]
pub struct Clients {
    sessions: Mutex<HashMap<String, Session>>,
}

impl Clients {
    /// A client's session.
    pub fn get(&self, client_id: &str) -> Option<Session> {
        self.sessions.lock().get(client_id).cloned()
    }

    /// Records a call of `client_id`; false when the client never sent settings.
    pub fn touch(&self, client_id: &str) -> bool {
        match self.sessions.lock().get_mut(client_id) {
            Some(s) => {
                s.last_seen = Instant::now();
                true
            }
            None => false,
        }
    }

    /// Stores the settings answered to a client (and its stream, when given).
    pub fn put(
        &self,
        client_id: &str,
        namespace: &str,
        settings: pb::Settings,
        telemetry: Option<TelemetrySender>,
    ) {
        let mut sessions = self.sessions.lock();
        let old = sessions.remove(client_id);
        sessions.insert(
            client_id.to_owned(),
            Session {
                settings,
                namespace: namespace.to_owned(),
                telemetry: telemetry.or_else(|| old.and_then(|o| o.telemetry)),
                last_seen: Instant::now(),
            },
        );
    }

    /// Forgets a client (NotifyClientTermination, or its telemetry stream ended).
    pub fn remove(&self, client_id: &str) {
        self.sessions.lock().remove(client_id);
    }

    /// Producers publishing `topic` that have a telemetry stream, in a rotating order.
    pub fn publishers_of(&self, topic: &str, turn: usize) -> Vec<TelemetrySender> {
        let sessions = self.sessions.lock();
        let mut out: Vec<(&String, TelemetrySender)> = sessions
            .iter()
            .filter(|(_, s)| s.published_topics().iter().any(|t| t == topic))
            .filter_map(|(id, s)| Some((id, s.telemetry.clone()?)))
            .collect();
        out.sort_by(|a, b| a.0.cmp(b.0));
        let n = out.len().max(1);
        out.rotate_left(turn % n);
        out.into_iter().map(|(_, tx)| tx).collect()
    }

    /// Every topic any producer publishes.
    pub fn all_published_topics(&self) -> Vec<String> {
        let mut topics: Vec<String> = self
            .sessions
            .lock()
            .values()
            .flat_map(Session::published_topics)
            .collect();
        topics.sort();
        topics.dedup();
        topics
    }
}

/// What a group's broker-side settings say (GET_SUBSCRIPTIONGROUP_CONFIG): FIFO and how many
/// times a message is retried; the defaults when the group does not exist yet.
#[derive(Debug, Clone, Copy)]
pub struct GroupSettings {
    /// `consumeMessageOrderly`.
    pub fifo: bool,
    /// `retryMaxTimes`.
    pub retry_max_times: i32,
}

/// How long a receive trusts a group's settings it read before: a receive from a client that
/// sent no settings otherwise asks the broker each time (one more broker call per receive).
/// RocketMQ's proxy caches them longer (`subscriptionGroupConfigCacheRefreshSeconds`, 20 s).
const GROUP_SETTINGS_TTL: Duration = Duration::from_secs(3);

/// A group's settings for each topic, with when they were read.
type ByTopic = HashMap<String, (Instant, GroupSettings)>;

/// Group settings read recently, by group and topic.
#[derive(Debug, Default)]
pub struct GroupSettingsCache {
    table: Mutex<HashMap<String, ByTopic>>,
}

impl GroupSettingsCache {
    fn get(&self, group: &str, topic: &str) -> Option<GroupSettings> {
        let table = self.table.lock();
        let (at, settings) = table.get(group)?.get(topic)?;
        (at.elapsed() < GROUP_SETTINGS_TTL).then_some(*settings)
    }

    fn put(&self, group: &str, topic: &str, settings: GroupSettings) {
        let mut table = self.table.lock();
        // Bounded by the groups in use: what went stale is dropped as new entries come.
        table.retain(|_, topics| {
            topics.retain(|_, (at, _)| at.elapsed() < GROUP_SETTINGS_TTL);
            !topics.is_empty()
        });
        table
            .entry(group.to_owned())
            .or_default()
            .insert(topic.to_owned(), (Instant::now(), settings));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_group_settings_are_kept_per_group_and_topic() {
        let cache = GroupSettingsCache::default();
        let orderly = GroupSettings {
            fifo: true,
            retry_max_times: 3,
        };
        cache.put("g", "T", orderly);
        let got = cache.get("g", "T").unwrap();
        assert!(got.fifo && got.retry_max_times == 3);
        assert!(cache.get("g", "U").is_none() && cache.get("h", "T").is_none());
        // Stale entries are not answered and are dropped by the next put.
        cache
            .table
            .lock()
            .get_mut("g")
            .unwrap()
            .get_mut("T")
            .unwrap()
            .0 = Instant::now() - GROUP_SETTINGS_TTL;
        assert!(cache.get("g", "T").is_none());
        cache.put("h", "T", orderly);
        assert!(!cache.table.lock().contains_key("g"));
    }
}
