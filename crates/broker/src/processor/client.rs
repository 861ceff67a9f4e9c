//! HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP, and the
//! NOTIFY_CONSUMER_IDS_CHANGED the broker sends when a group's membership changes.

use std::sync::Arc;

use rocketpy_protocol::body::heartbeat::CheckClientRequestBody;
use rocketpy_protocol::body::{fastjson, ConsumerListBody, HeartbeatData};
use rocketpy_protocol::code::{request, response};
use rocketpy_protocol::header::{
    GetConsumerListByGroupRequestHeader, NotifyConsumerIdsChangedRequestHeader,
    UnregisterClientRequestHeader,
};
use rocketpy_protocol::topic::validate_topic;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult};

use super::{json_reply, ok, reply};
use crate::consumer_manager::Changed;
use crate::state::BrokerInner;
use rocketpy_protocol::topic::RETRY_GROUP_TOPIC_PREFIX;

/// A group's membership changed: a group left with no member loses its SQL92 filters (they
/// become dead), and the remaining members are told to rebalance.
pub fn group_changed(broker: &BrokerInner, changed: Changed) {
    if changed.1.is_empty() {
        broker.filters.unregister(&changed.0, broker.now_millis());
    }
    notify_consumer_ids_changed(changed);
}

/// Tells every remaining member of a group to rebalance (oneway, best effort).
pub fn notify_consumer_ids_changed((group, conns): Changed) {
    for conn in conns {
        let mut req = RemotingCommand::request(request::NOTIFY_CONSUMER_IDS_CHANGED).with_header(
            &NotifyConsumerIdsChangedRequestHeader {
                consumer_group: group.clone(),
            },
        );
        req.mark_oneway();
        tokio::spawn(async move {
            if let Err(e) = conn.send(&req).await {
                tracing::debug!(peer = %conn.peer(), error = %e, "NOTIFY_CONSUMER_IDS_CHANGED not sent");
            }
        });
    }
}

/// Registers the client's consumer groups, creating their retry topics.
pub fn heart_beat(
    broker: &Arc<BrokerInner>,
    conn: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let data: HeartbeatData = fastjson::from_slice(&req.body).map_err(|e| {
        ProcessError::new(
            response::SYSTEM_ERROR,
            format!("invalid HeartbeatData body: {e}"),
        )
    })?;
    if data.client_id.is_empty() {
        return Err(ProcessError::new(
            response::SYSTEM_ERROR,
            "HeartbeatData.clientID is empty",
        ));
    }
    let client = (req.language, req.version);
    let now = broker.now_millis();
    for producer in &data.producer_data_set {
        broker
            .producers
            .register(&producer.group_name, &data.client_id, conn, client, now);
    }
    for consumer in &data.consumer_data_set {
        let retry = format!("{RETRY_GROUP_TOPIC_PREFIX}{}", consumer.group_name);
        if validate_topic(&retry).is_err() {
            return Err(ProcessError::new(
                response::SYSTEM_ERROR,
                format!("consumer group name {:?} is invalid: {RETRY_GROUP_TOPIC_PREFIX}+group must be a valid topic", consumer.group_name),
            ));
        }
        if let Err(e) = super::retry_topic(broker, &consumer.group_name) {
            tracing::warn!(topic = %retry, error = %e.remark, "retry topic not created");
        }
        broker
            .filters
            .register(&consumer.group_name, &consumer.subscription_data_set, now);
        if let Some(changed) =
            broker
                .consumers
                .register(&data.client_id, conn, client, consumer, now)
        {
            tracing::info!(group = %consumer.group_name, client = %data.client_id, "consumer group membership changed");
            notify_consumer_ids_changed(changed);
        }
    }
    reply(ok(req))
}

/// Removes a client from its consumer group.
pub fn unregister_client(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: UnregisterClientRequestHeader = req.decode_header()?;
    if let Some(group) = h.producer_group.as_deref().filter(|g| !g.is_empty()) {
        broker.producers.unregister(group, &h.client_id);
    }
    if let Some(group) = h.consumer_group.filter(|g| !g.is_empty()) {
        if let Some(changed) = broker.consumers.unregister(&group, &h.client_id) {
            tracing::info!(group, client = h.client_id, "consumer unregistered");
            group_changed(broker, changed);
        }
    }
    reply(ok(req))
}

/// Lists the client ids of a group.
pub fn consumer_list_by_group(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: GetConsumerListByGroupRequestHeader = req.decode_header()?;
    match broker.consumers.consumer_ids(&h.consumer_group) {
        Some(ids) if !ids.is_empty() => json_reply(
            req,
            &ConsumerListBody {
                consumer_id_list: ids,
            },
        ),
        _ => Err(ProcessError::new(
            response::SYSTEM_ERROR,
            format!("no consumer for this group, {}", h.consumer_group),
        )),
    }
}

/// CHECK_CLIENT_CONFIG: whether this broker serves a consumer's subscription, as RocketMQ's
/// ClientManageProcessor answers it: tags always; another type only with
/// `enablePropertyFilter=true` (else SYSTEM_ERROR), and only an expression that compiles
/// (else SUBSCRIPTION_PARSE_FAILED, saying where).
pub fn check_client_config(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let body: CheckClientRequestBody = fastjson::from_slice(&req.body).map_err(|e| {
        ProcessError::new(
            response::SYSTEM_ERROR,
            format!("invalid CheckClientRequestBody: {e}"),
        )
    })?;
    if let Some(sub) = body.subscription_data {
        let ty = sub.expression_type.as_str();
        if !rocketpy_protocol::subscription::is_tag_type(Some(ty)) {
            if !broker.config().enable_property_filter {
                return Err(ProcessError::new(
                    response::SYSTEM_ERROR,
                    crate::filter::not_supported(ty),
                ));
            }
            crate::filter::manager::compile(ty, &sub.sub_string)
                .map_err(|e| ProcessError::new(response::SUBSCRIPTION_PARSE_FAILED, e))?;
        }
    }
    reply(ok(req))
}
