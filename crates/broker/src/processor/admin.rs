//! UPDATE_AND_CREATE_TOPIC and GET_ALL_TOPIC_CONFIG.

use std::sync::Arc;
use std::time::Duration;

use rocketpy_protocol::body::TopicConfig;
use rocketpy_protocol::code::response;
use rocketpy_protocol::header::{
    CreateTopicRequestHeader, GetSubscriptionGroupConfigRequestHeader, GetTopicConfigRequestHeader,
};
use rocketpy_protocol::topic::{retry_topic, validate_topic};
use rocketpy_protocol::topic_attributes;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult, Reply};

use super::{json_reply, ok, reply, system_error};
use crate::state::BrokerInner;
use crate::topic_config::is_reserved_topic;

/// Most queues a topic may have on one broker (each queue is a directory and files).
pub const MAX_QUEUE_NUMS: i32 = 1024;

/// Creates or updates a topic and re-registers with the name servers; timed for
/// `rocketmq_topic_create_execution_time_milliseconds`.
pub fn update_and_create_topic(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let started = std::time::Instant::now();
    let h: CreateTopicRequestHeader = req.decode_header()?;
    let out = create_topic(broker, req, &h);
    if let Some(metrics) = &broker.metrics {
        metrics.on_topic_create(&h.topic, out.is_ok(), started.elapsed());
    }
    out
}

fn create_topic(
    broker: &Arc<BrokerInner>,
    req: &RemotingCommand,
    h: &CreateTopicRequestHeader,
) -> ProcessResult {
    let topic = h.topic.as_str();
    validate_topic(topic).map_err(system_error)?;
    if is_reserved_topic(broker.config(), topic) {
        return Err(ProcessError::new(
            response::SYSTEM_ERROR,
            format!("The topic[{topic}] is conflict with system topic."),
        ));
    }
    let (read, write, perm) = (h.read_queue_nums, h.write_queue_nums, h.perm);
    for (name, n) in [("readQueueNums", read), ("writeQueueNums", write)] {
        if !(1..=MAX_QUEUE_NUMS).contains(&n) {
            return Err(ProcessError::new(
                response::INVALID_PARAMETER,
                format!("{name} {n} outside 1..={MAX_QUEUE_NUMS}"),
            ));
        }
    }
    if !(0..=7).contains(&perm) {
        return Err(ProcessError::new(
            response::INVALID_PARAMETER,
            format!("perm {perm} outside 0..=7"),
        ));
    }
    let mut topic_cfg = TopicConfig::new(topic, read);
    topic_cfg.write_queue_nums = write;
    topic_cfg.perm = perm;
    if let Some(t) = &h.topic_filter_type {
        topic_cfg.topic_filter_type = t.clone();
    }
    topic_cfg.topic_sys_flag = h.topic_sys_flag.unwrap_or(0);
    topic_cfg.order = h.order.unwrap_or(false);
    topic_cfg.attributes = topic_attributes(broker, topic, h.attributes.as_deref())?;
    broker.topics.update(topic_cfg).map_err(system_error)?;
    super::prepare_queues(broker, topic, read.max(write));
    tracing::info!(topic, read, write, perm, "topic created or updated");
    // Answered once the name servers know it, as RocketMQ's broker does.
    let timeout = Duration::from_millis(
        broker
            .config()
            .register_broker_timeout_mills
            .clamp(100, 6000),
    );
    let registered = broker.register_now.registered(timeout);
    let answer = ok(req);
    Ok(Reply::Later(Box::pin(async move {
        registered.await;
        Some(answer)
    })))
}

/// A created or updated topic's attributes: its current ones changed by the request's
/// (RocketMQ 5's `+key=value,-key`); MIXED refused unless `enableMixedMessageType`, as
/// RocketMQ refuses it.
fn topic_attributes(
    broker: &BrokerInner,
    topic: &str,
    changes: Option<&str>,
) -> Result<std::collections::BTreeMap<String, String>, ProcessError> {
    let current = broker.topics.get(topic).map(|c| c.attributes);
    let create = current.is_none();
    let changes = changes.unwrap_or_default();
    let mixed = format!("+{}={}", topic_attributes::MESSAGE_TYPE, "MIXED");
    if !broker.config().enable_mixed_message_type && changes.split(',').any(|c| c == mixed) {
        return Err(ProcessError::new(
            response::INVALID_PARAMETER,
            "MIXED message type is not supported.",
        ));
    }
    topic_attributes::alter(create, &current.unwrap_or_default(), changes)
        .map_err(|e| ProcessError::new(response::INVALID_PARAMETER, e))
}

/// All topic configs as `TopicConfigSerializeWrapper` JSON.
pub fn get_all_topic_config(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let topics = broker.topics.snapshot();
    json_reply(
        req,
        &rocketpy_protocol::body::TopicConfigAndMapping::new(&topics),
    )
}

/// Creates or updates a subscription group (body: `SubscriptionGroupConfig` JSON).
pub fn update_subscription_group(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let started = std::time::Instant::now();
    let out = create_group(broker, req);
    if let Some(metrics) = &broker.metrics {
        metrics.on_group_create(out.is_ok(), started.elapsed());
    }
    out
}

fn create_group(broker: &Arc<BrokerInner>, req: &RemotingCommand) -> ProcessResult {
    let cfg: crate::subscription_group::SubscriptionGroupConfig =
        rocketpy_protocol::body::fastjson::from_slice(&req.body).map_err(|e| {
            ProcessError::new(
                response::SYSTEM_ERROR,
                format!("invalid SubscriptionGroupConfig: {e}"),
            )
        })?;
    validate_topic(&retry_topic(&cfg.group_name)).map_err(|e| {
        ProcessError::new(response::SYSTEM_ERROR, format!("invalid group name: {e}"))
    })?;
    broker.groups.update(cfg);
    reply(ok(req))
}

/// Every subscription group as `SubscriptionGroupWrapper` JSON.
pub fn get_all_subscription_groups(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let body = broker.groups.to_json().map_err(system_error)?;
    reply(ok(req).with_body(body))
}

/// GET_TOPIC_CONFIG (5.x): one topic's config as JSON (RocketMQ's TopicConfigAndQueueMapping:
/// the config's fields, and no queue mapping, rocketpy having no static topics), or
/// TOPIC_NOT_EXIST (RocketMQ's remark).
pub fn get_topic_config(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: GetTopicConfigRequestHeader = req.decode_header()?;
    match broker.topics.get(&h.topic) {
        Some(cfg) => json_reply(req, &cfg),
        None => Err(ProcessError::new(
            response::TOPIC_NOT_EXIST,
            format!("No topic in this broker. topic: {}", h.topic),
        )),
    }
}

/// GET_SUBSCRIPTIONGROUP_CONFIG (5.x): one group's settings as JSON, or
/// SUBSCRIPTION_GROUP_NOT_EXIST (RocketMQ's remark) when the broker has none.
pub fn get_subscription_group(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: GetSubscriptionGroupConfigRequestHeader = req.decode_header()?;
    match broker.groups.find(&h.group) {
        Some(cfg) => json_reply(req, &cfg),
        None => Err(ProcessError::new(
            response::SUBSCRIPTION_GROUP_NOT_EXIST,
            "No group in this broker",
        )),
    }
}

/// GET_ALL_CONSUMER_OFFSET: `consumerOffset.json` as it would be written now (a slave's sync).
pub fn get_all_consumer_offsets(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let body = broker.offsets.to_json().map_err(system_error)?;
    reply(ok(req).with_body(body))
}

/// GET_ALL_DELAY_OFFSET: `delayOffset.json`'s table (a slave's sync).
pub fn get_all_delay_offsets(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    reply(ok(req).with_body(broker.store.delay_offsets_json().into_bytes()))
}
