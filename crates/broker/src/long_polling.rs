//! Long polling (RocketMQ's `PullRequestHoldService`): a pull that finds nothing waits on its
//! queue's notifier until a message arrives or its suspend timeout passes.
//!
//! No lost wake-ups: a waiter registers on the notifier *before* re-checking the queue, and
//! the store calls [`PullHoldService::arriving`] after the message is readable.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;
use rocketpy_store::MessageArrivingListener;
use tokio::sync::Notify;

/// Per-queue notifiers.
#[derive(Debug, Default)]
pub struct PullHoldService {
    queues: RwLock<HashMap<String, HashMap<i32, Arc<Notify>>>>,
    /// Set at shutdown: held pulls are answered at once.
    stopping: tokio::sync::watch::Sender<bool>,
}

impl PullHoldService {
    /// An empty service.
    pub fn new() -> Self {
        Self::default()
    }

    /// Releases every held pull (they are answered with what the queue has now).
    pub fn release_all(&self) {
        self.stopping.send_replace(true);
    }

    /// Completes when [`PullHoldService::release_all`] has been called.
    pub async fn released(&self) {
        let mut rx = self.stopping.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }

    /// Wakes every held pull to look again (controller mode: the confirm offset moved, which
    /// makes messages readable that arrived earlier).
    pub fn wake_all(&self) {
        for queues in self.queues.read().values() {
            for n in queues.values() {
                n.notify_waiters();
            }
        }
    }

    /// The notifier of a queue, created on first use.
    pub fn notifier(&self, topic: &str, queue_id: i32) -> Arc<Notify> {
        if let Some(n) = self.queues.read().get(topic).and_then(|q| q.get(&queue_id)) {
            return n.clone();
        }
        self.queues
            .write()
            .entry(topic.to_owned())
            .or_default()
            .entry(queue_id)
            .or_default()
            .clone()
    }
}

impl MessageArrivingListener for PullHoldService {
    fn arriving(&self, topic: &str, queue_id: i32, _next_offset: i64, _tags_code: i64) {
        if let Some(n) = self.queues.read().get(topic).and_then(|q| q.get(&queue_id)) {
            n.notify_waiters();
        }
    }
}
