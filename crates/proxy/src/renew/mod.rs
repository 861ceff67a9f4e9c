//! Automatic renewal of invisible times (RocketMQ proxy's `ReceiptHandleProcessor`): a push
//! consumer receives with `auto_renew` and no invisible time, and expects its messages to
//! stay invisible while its listener works, however long that takes. The proxy receives them
//! with the default invisible time and, until the client acks, changes or dead-letters a
//! message (or goes away), extends it before it ends. The client keeps the handle it was
//! given; the proxy answers its ack with the latest one.

pub mod due;

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
