//! Automatic renewal of invisible times (RocketMQ proxy's `ReceiptHandleProcessor`): a push
//! consumer receives with `auto_renew` and no invisible time, and expects its messages to
//! stay invisible while its listener works, however long that takes. The proxy receives them
//! with the default invisible time and, until the client acks, changes or dead-letters a
//! message (or goes away), extends it before it ends. The client keeps the handle it was
//! given; the proxy answers its ack with the latest one.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rocketpy_protocol::code::{request, response};
use rocketpy_protocol::header::{
    ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader,
};

use crate::handle::ReceiptHandle;
use rocketpy_remoting::lifecycle::{every, Stop};

use crate::state::ProxyInner;

/// How long a message is renewed at most (RocketMQ proxy's `renewMaxTimeMillis`, 3 h): a
/// listener stuck longer lets it be delivered again.
const RENEW_MAX: Duration = Duration::from_secs(3 * 3600);

/// Identifies a received message: the client, its group and the message id.
pub type RenewKey = (String, String, String);

#[derive(Debug, Clone)]
struct Renewal {
    /// The latest handle.
    handle: String,
    /// The topic as the broker knows it (the normal topic).
    topic: String,
    since: Instant,
}

/// Messages under renewal.
#[derive(Debug, Default)]
pub struct Renewals {
    table: Mutex<HashMap<RenewKey, Renewal>>,
}

impl Renewals {
    /// Starts renewing a received message.
    pub fn add(&self, key: RenewKey, topic: &str, handle: &str) {
        self.table.lock().insert(
            key,
            Renewal {
                handle: handle.to_owned(),
                topic: topic.to_owned(),
                since: Instant::now(),
            },
        );
    }

    /// Stops renewing `client`'s message `message_id` of `group`; returns its latest handle
    /// (to ack or change with), or `given` when it was not under renewal. (Simple consumers
    /// renew nothing: their acks find the table empty and build no key.)
    pub fn take<'a>(
        &self,
        client: &str,
        group: &str,
        message_id: &str,
        given: &'a str,
    ) -> Cow<'a, str> {
        let mut table = self.table.lock();
        if table.is_empty() {
            return Cow::Borrowed(given);
        }
        let key = (client.to_owned(), group.to_owned(), message_id.to_owned());
        match table.remove(&key) {
            Some(r) => Cow::Owned(r.handle),
            None => Cow::Borrowed(given),
        }
    }

    /// Stops renewing every message of a client (it went away: they become visible again
    /// when their invisible time ends).
    pub fn forget_client(&self, client_id: &str) {
        self.table.lock().retain(|k, _| k.0 != client_id);
    }

    /// Messages under renewal (tests).
    pub fn len(&self) -> usize {
        self.table.lock().len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One round: extends every message whose invisible time ends within half the default
/// invisible time, to the default invisible time from now.
pub async fn renew_due(proxy: &ProxyInner) {
    let invisible = proxy.config.default_invisible_time_ms;
    let now = proxy.now_millis();
    let due: Vec<(RenewKey, Renewal)> = {
        let mut table = proxy.renewals.table.lock();
        table.retain(|_, r| r.since.elapsed() < RENEW_MAX);
        table
            .iter()
            .filter(|(_, r)| {
                ReceiptHandle::parse(&r.handle)
                    .is_some_and(|h| h.pop_time + h.invisible_time - now <= invisible / 2)
            })
            .map(|(k, r)| (k.clone(), r.clone()))
            .collect()
    };
    for (key, r) in due {
        let Some(h) = ReceiptHandle::parse(&r.handle) else {
            continue;
        };
        let group = &key.1;
        let Ok(addr) = proxy.routes.master(&h.broker_name, &r.topic).await else {
            continue;
        };
        let header = ChangeInvisibleTimeRequestHeader {
            consumer_group: group.clone(),
            topic: h.real_topic(&r.topic, group),
            queue_id: h.queue_id,
            extra_info: h.extra_info.clone(),
            offset: h.queue_offset,
            invisible_time: invisible,
        };
        let req = crate::state::remoting_request(request::CHANGE_MESSAGE_INVISIBLETIME)
            .with_header(&header);
        let Ok(resp) = proxy
            .remoting
            .invoke(&addr, req, proxy.config.remoting_timeout)
            .await
        else {
            continue;
        };
        if resp.code != response::SUCCESS {
            continue; // acked meanwhile, or gone: the next round drops it if the client acks
        }
        let Ok(changed) = resp.decode_header::<ChangeInvisibleTimeResponseHeader>() else {
            continue;
        };
        let renewed = h.changed(changed.pop_time, changed.invisible_time);
        let mut table = proxy.renewals.table.lock();
        if let Some(entry) = table.get_mut(&key) {
            if entry.handle == r.handle {
                entry.handle = renewed;
            }
        }
    }
}

/// Renews until the proxy stops, checking six times per default invisible time.
pub async fn renew_loop(proxy: Arc<ProxyInner>, stop: Stop) {
    let period =
        Duration::from_millis((proxy.config.default_invisible_time_ms / 6).clamp(100, 5000) as u64);
    every(period, stop, || renew_due(&proxy)).await;
}
