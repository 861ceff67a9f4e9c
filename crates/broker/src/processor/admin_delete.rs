//! DELETE_TOPIC_IN_BROKER and DELETE_SUBSCRIPTIONGROUP (mqadmin deleteTopic, deleteSubGroup).

use std::sync::Arc;

use rocketpy_protocol::code::response;
use rocketpy_protocol::header::{DeleteSubscriptionGroupRequestHeader, DeleteTopicRequestHeader};
use rocketpy_protocol::topic::validate_topic;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult};

use super::{ok, reply, system_error};
use crate::state::BrokerInner;

/// Removes a topic: its config, its consume queues and files, and the offsets committed on it
/// (its records stay in the CommitLog until they expire). The name servers learn it at the
/// next registration; mqadmin also deletes the route there (DELETE_TOPIC_IN_NAMESRV).
pub fn delete_topic(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: DeleteTopicRequestHeader = req.decode_header()?;
    let topic = h.topic.as_str();
    validate_topic(topic).map_err(system_error)?;
    if crate::topic_config::is_reserved_topic(broker.config(), topic) {
        return Err(ProcessError::new(
            response::SYSTEM_ERROR,
            format!("The topic[{topic}] is conflict with system topic."),
        ));
    }
    let existed = broker.topics.delete(topic).map_err(system_error)?;
    let queues = broker.store.delete_topic(topic).map_err(system_error)?;
    broker.offsets.remove(Some(topic), None);
    if let Some(metrics) = &broker.metrics {
        metrics.forget(Some(topic), None);
    }
    broker.register_now.notify_one();
    tracing::info!(topic, existed, queues, "topic deleted");
    reply(ok(req))
}

/// Removes a subscription group's settings and, with `cleanOffset`, its committed offsets.
pub fn delete_subscription_group(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: DeleteSubscriptionGroupRequestHeader = req.decode_header()?;
    let existed = broker.groups.delete(&h.group_name);
    if h.clean_offset.unwrap_or(false) {
        broker.offsets.remove(None, Some(&h.group_name));
        if let Some(metrics) = &broker.metrics {
            metrics.forget(None, Some(&h.group_name));
        }
    }
    tracing::info!(group = %h.group_name, existed, "subscription group deleted");
    reply(ok(req))
}
