//! The renewal rounds: extending received messages' invisible time on their brokers.

use super::*;
use crate::state::ProxyInner;
use rocketpy_remoting::lifecycle::{every, Stop};

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
        let Ok(addr) = proxy.routes.master(h.broker_name(), &r.topic).await else {
            continue;
        };
        let header = ChangeInvisibleTimeRequestHeader {
            consumer_group: group.clone(),
            topic: h.real_topic(&r.topic, group),
            queue_id: h.queue_id,
            extra_info: h.extra_info().to_owned(),
            offset: h.queue_offset,
            invisible_time: invisible,
        };
        let req = crate::request::remoting_request(request::CHANGE_MESSAGE_INVISIBLETIME)
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
