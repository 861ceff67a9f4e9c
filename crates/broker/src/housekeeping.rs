//! The broker's periodic upkeep, each a loop over `rocketpy_remoting::lifecycle::every`: writing its tables,
//! expiring idle clients, sampling statistics, reviving popped messages whose invisible time
//! ended. Rounds that touch files or the store run off the I/O threads.

use std::sync::Arc;
use std::time::Duration;

use crate::processor;
use crate::state::BrokerInner;
use rocketpy_remoting::lifecycle::{every, Stop};

/// Writes consumer offsets, FIFO pop holds, topics and subscription groups, and expires
/// producers and consumers silent for `channelExpiredTimeout`, every
/// `flushConsumerOffsetInterval` (at least 100 ms).
pub async fn tables(broker: Arc<BrokerInner>, stop: Stop) {
    let period = Duration::from_millis(broker.config().flush_consumer_offset_interval.max(100));
    let expiry = Duration::from_millis(broker.config().channel_expired_timeout);
    every(period, stop, || persist_and_expire(broker.clone(), expiry)).await;
}

/// One round of [`tables`].
async fn persist_and_expire(broker: Arc<BrokerInner>, expiry: Duration) {
    if let Err(e) = broker.offsets.persist() {
        tracing::error!(error = %e, "persisting consumer offsets failed");
    }
    if let Err(e) = broker.pop.order.persist() {
        tracing::error!(error = %e, "persisting consumerOrderInfo.json failed");
    }
    if let Err(e) = broker.filters.save() {
        tracing::error!(error = %e, "persisting consumerFilter.json failed");
    }
    let tables = broker.clone();
    let persisted = tokio::task::spawn_blocking(move || {
        (tables.topics.persist(true), tables.groups.persist(true))
    })
    .await;
    if let Ok((topics, groups)) = persisted {
        if let Err(e) = topics {
            tracing::error!(error = %e, "writing topics.json failed (changes stay in its journal)");
        }
        if let Err(e) = groups {
            tracing::error!(error = %e, "writing subscriptionGroup.json failed (changes stay in its journal)");
        }
    }
    expire_idle_clients(&broker, expiry);
}

/// Removes producers and consumers silent for longer than `expiry` by the broker's clock
/// (a round of [`tables`]; tests on a manual clock run it after moving the clock).
pub fn expire_idle_clients(broker: &BrokerInner, expiry: Duration) {
    let now = broker.now_millis();
    broker.producers.scan_expired(expiry, now);
    for changed in broker.consumers.scan_expired(expiry, now) {
        processor::client::group_changed(broker, changed);
    }
    broker
        .filters
        .clean(now, broker.config().filter_data_clean_time_span);
}

/// Takes the statistics' snapshots every 10 s (days are UTC days), and gives freed heap
/// memory back (see `rocketpy_remoting::memory`).
pub async fn sample_stats(broker: Arc<BrokerInner>, stop: Stop) {
    every(Duration::from_secs(10), stop, || {
        let now = broker.now_millis();
        broker
            .stats
            .sample(now, now / 86_400_000, &broker.config().broker_cluster_name);
        rocketpy_remoting::memory::release_free_memory();
        std::future::ready(())
    })
    .await;
}

/// Revives popped messages whose invisible time ended, every second (RocketMQ's
/// `reviveInterval`), off the I/O threads.
pub async fn revive(broker: Arc<BrokerInner>, stop: Stop) {
    every(Duration::from_secs(1), stop, || {
        let b = broker.clone();
        async move {
            let _ = tokio::task::spawn_blocking(move || b.pop.revive_due(&b, b.now_millis())).await;
        }
    })
    .await;
}
