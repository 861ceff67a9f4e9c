//! GET_BROKER_CONFIG and UPDATE_BROKER_CONFIG (mqadmin getBrokerConfig, updateBrokerConfig).
//!
//! Keys that take effect while the broker runs are changed in place; RocketMQ changes any key
//! by reflection, much of which only matters at start. rocketpy refuses the others with a remark
//! that names them, rather than answering SUCCESS for a change that does nothing. A change lasts
//! until the broker stops (broker.conf is not rewritten).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rocketpy_protocol::code::response;
use rocketpy_protocol::config::parse_properties;
use rocketpy_protocol::header::GetBrokerConfigResponseHeader;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult};

use super::{ok, reply};
use crate::state::BrokerInner;

/// Keys UPDATE_BROKER_CONFIG changes at run time.
pub const LIVE_KEYS: &[&str] = &["brokerPermission"];

/// GET_BROKER_CONFIG: the effective configuration as properties text.
pub fn get_broker_config(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let mut text = String::new();
    for (key, value, _) in broker.settings.entries() {
        let value = match key {
            "brokerPermission" => broker.permission().to_string(),
            _ => value,
        };
        text.push_str(&format!("{key}={value}\n"));
    }
    let version = serde_json::to_string(&broker.topics.data_version()).ok();
    reply(
        ok(req)
            .with_header(&GetBrokerConfigResponseHeader { version })
            .with_body(text.into_bytes()),
    )
}

fn invalid(remark: String) -> ProcessError {
    ProcessError::new(response::INVALID_PARAMETER, remark)
}

/// UPDATE_BROKER_CONFIG: the body is properties text; every key is checked before any is
/// applied.
pub fn update_broker_config(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let text = std::str::from_utf8(&req.body)
        .map_err(|_| invalid("the body is not UTF-8 properties text".into()))?;
    let mut permission = None;
    for (key, value) in parse_properties(text) {
        match key.as_str() {
            "brokerPermission" => match value.trim().parse::<i32>() {
                Ok(p) if (0..=7).contains(&p) => permission = Some(p),
                _ => return Err(invalid(format!("brokerPermission {value:?} outside 0..=7"))),
            },
            other => {
                return Err(invalid(format!(
                    "{other} cannot be changed while the broker runs (set it in broker.conf and restart); these can: {}",
                    LIVE_KEYS.join(", ")
                )))
            }
        }
    }
    if let Some(p) = permission {
        let before = broker.permission.swap(p, Ordering::Relaxed);
        if before != p {
            tracing::info!(from = before, to = p, "brokerPermission changed");
            broker.topics.bump_version();
            broker.register_now.notify_one();
        }
    }
    reply(ok(req))
}
