//! UPDATE_AND_CREATE_TOPIC and GET_ALL_TOPIC_CONFIG.

use std::sync::Arc;

use rocketpy_protocol::body::TopicConfig;
use rocketpy_protocol::code::response;
use rocketpy_protocol::topic::validate_topic;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult, Reply};

use super::ok;
use crate::topic_config::AUTO_CREATE_TOPIC_KEY_TOPIC;
use crate::BrokerInner;

/// Most queues a topic may have on one broker (each queue is a directory and files).
pub const MAX_QUEUE_NUMS: i32 = 1024;

/// Creates or updates a topic and re-registers with the name servers.
pub fn update_and_create_topic(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let topic = req.field("topic")?;
    validate_topic(topic).map_err(|e| ProcessError::new(response::SYSTEM_ERROR, e.to_string()))?;
    let cfg = broker.config();
    if topic == AUTO_CREATE_TOPIC_KEY_TOPIC
        || topic == cfg.broker_cluster_name
        || topic == cfg.broker_name
    {
        return Err(ProcessError::new(
            response::SYSTEM_ERROR,
            format!("The topic[{topic}] is conflict with system reserved words."),
        ));
    }
    let read: i32 = req.parse_field("readQueueNums")?;
    let write: i32 = req.parse_field("writeQueueNums")?;
    for (name, n) in [("readQueueNums", read), ("writeQueueNums", write)] {
        if !(1..=MAX_QUEUE_NUMS).contains(&n) {
            return Err(ProcessError::new(
                response::INVALID_PARAMETER,
                format!("{name} {n} outside 1..={MAX_QUEUE_NUMS}"),
            ));
        }
    }
    let perm: i32 = req.parse_field("perm")?;
    if !(0..=7).contains(&perm) {
        return Err(ProcessError::new(
            response::INVALID_PARAMETER,
            format!("perm {perm} outside 0..=7"),
        ));
    }
    let mut topic_cfg = TopicConfig::new(topic, read);
    topic_cfg.write_queue_nums = write;
    topic_cfg.perm = perm;
    if let Some(t) = req.field_opt("topicFilterType") {
        topic_cfg.topic_filter_type = t.to_owned();
    }
    topic_cfg.topic_sys_flag = req.parse_field_or("topicSysFlag", 0)?;
    topic_cfg.order = req.parse_field_or("order", false)?;
    broker
        .topics
        .update(topic_cfg)
        .map_err(|e| ProcessError::new(response::SYSTEM_ERROR, e.to_string()))?;
    broker.register_now.notify_one();
    tracing::info!(topic, read, write, perm, "topic created or updated");
    Ok(Reply::Now(Some(ok(req))))
}

/// All topic configs as `TopicConfigSerializeWrapper` JSON.
pub fn get_all_topic_config(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let body = serde_json::to_vec(&broker.topics.snapshot())
        .map_err(|e| ProcessError::new(response::SYSTEM_ERROR, e.to_string()))?;
    Ok(Reply::Now(Some(ok(req).with_body(body))))
}

/// Creates or updates a subscription group (body: `SubscriptionGroupConfig` JSON).
pub fn update_subscription_group(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let cfg: crate::subscription_group::SubscriptionGroupConfig =
        rocketpy_protocol::body::fastjson::from_slice(&req.body).map_err(|e| {
            ProcessError::new(
                response::SYSTEM_ERROR,
                format!("invalid SubscriptionGroupConfig: {e}"),
            )
        })?;
    validate_topic(&format!(
        "{}{}",
        crate::topic_config::RETRY_GROUP_TOPIC_PREFIX,
        cfg.group_name
    ))
    .map_err(|e| ProcessError::new(response::SYSTEM_ERROR, format!("invalid group name: {e}")))?;
    broker.groups.update(cfg);
    Ok(Reply::Now(Some(ok(req))))
}

/// Every subscription group as `SubscriptionGroupWrapper` JSON.
pub fn get_all_subscription_groups(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let body = broker
        .groups
        .to_json()
        .map_err(|e| ProcessError::new(response::SYSTEM_ERROR, e.to_string()))?;
    Ok(Reply::Now(Some(ok(req).with_body(body))))
}
