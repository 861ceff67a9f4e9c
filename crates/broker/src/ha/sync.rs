//! A slave's metadata sync (RocketMQ's SlaveSynchronize): every 10 s it asks its master for
//! topics (GET_ALL_TOPIC_CONFIG), consumer offsets (GET_ALL_CONSUMER_OFFSET), delay offsets
//! (GET_ALL_DELAY_OFFSET) and subscription groups (GET_ALL_SUBSCRIPTIONGROUP_CONFIG), so that
//! consumers reading from it while the master is away start where the group was.
//!
//! Topics and groups are added or updated, never removed (a topic deleted on the master stays
//! known here until the slave's own admin deletes it); offsets the master has replace ours,
//! and offsets committed only here stay.

use std::sync::Arc;
use std::time::Duration;

use rocketpy_protocol::body::{fastjson, TopicConfigSerializeWrapper};
use rocketpy_protocol::code::{request, response};
use rocketpy_protocol::limits::JsonLimits;
use rocketpy_protocol::RemotingCommand;
use tokio::sync::watch;

use crate::state::BrokerInner;

/// RocketMQ's period for the slave's sync.
pub const PERIOD: Duration = Duration::from_secs(10);

/// Syncs every [`PERIOD`] (the first a few seconds after start) until `stop` is set.
pub async fn run(broker: Arc<BrokerInner>, mut stop: watch::Receiver<bool>) {
    let mut delay = Duration::from_secs(3);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        delay = PERIOD;
        if let Some(master) = broker.ha.master_broker_addr() {
            sync_once(&broker, &master).await;
        }
    }
}

/// One round against `master`; each part on its own (a failure is logged, the rest goes on).
pub async fn sync_once(broker: &BrokerInner, master: &str) {
    let timeout = Duration::from_secs(3);
    for code in [
        request::GET_ALL_TOPIC_CONFIG,
        request::GET_ALL_CONSUMER_OFFSET,
        request::GET_ALL_DELAY_OFFSET,
        request::GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
    ] {
        let req = RemotingCommand::request(code);
        let resp = match broker.namesrv.invoke(master, req, timeout).await {
            Ok(resp) if resp.code == response::SUCCESS => resp,
            Ok(resp) => {
                tracing::warn!(%master, code, answer = resp.code, remark = ?resp.remark, "metadata sync refused");
                continue;
            }
            Err(e) => {
                tracing::debug!(%master, code, error = %e, "metadata sync failed");
                continue;
            }
        };
        let applied = match code {
            request::GET_ALL_TOPIC_CONFIG => apply_topics(broker, &resp.body),
            request::GET_ALL_CONSUMER_OFFSET => broker.offsets.merge_json(&resp.body),
            request::GET_ALL_DELAY_OFFSET => apply_delay_offsets(broker, &resp.body),
            _ => broker.groups.merge_json(&resp.body),
        };
        if let Err(e) = applied {
            tracing::warn!(%master, code, error = %e, "master's metadata not applied");
        }
    }
}

fn apply_topics(broker: &BrokerInner, body: &[u8]) -> Result<(), String> {
    let wrapper =
        fastjson::from_slice_within::<TopicConfigSerializeWrapper>(body, JsonLimits::TABLE)
            .map_err(|e| e.to_string())?;
    let mut changed = false;
    for (_, cfg) in wrapper.topic_config_table {
        if broker.topics.get(&cfg.topic_name).as_ref() != Some(&cfg) {
            broker.topics.update(cfg).map_err(|e| e.to_string())?;
            changed = true;
        }
    }
    if changed {
        broker.register_now.notify_one();
    }
    Ok(())
}

fn apply_delay_offsets(broker: &BrokerInner, body: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(body);
    let offsets = rocketpy_store::schedule::parse_delay_offsets(&text)
        .ok_or_else(|| "expected {\"offsetTable\":{level:offset}}".to_owned())?;
    broker
        .store
        .set_delay_offsets(offsets)
        .map_err(|e| e.to_string())
}
