//! Request processors, one module per area, and the table that routes codes to them.

pub mod admin;
pub mod admin_delete;
pub mod admin_view;
pub mod broker_config;
pub mod client;
pub mod lock;
pub mod offset;
pub mod pop;
pub mod pop_ack;
pub mod pull;
pub mod query;
pub mod query_cq;
pub mod reset_offset;
pub mod retry;
pub mod send;
mod send_props;
pub mod transaction;

use std::sync::{Arc, OnceLock};

use rocketpy_protocol::code::{request, response};
use rocketpy_protocol::flag::perm;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult, ProcessorTable, Reply};

use rocketpy_store::{Appended, BrokerRole, StoreError};

use crate::ha::ReplicaWait;
use crate::state::BrokerInner;

/// The ACL's [`rocketpy_acl::rules::Rule::Stored`] rule: the caller needs `right` on the
/// topics of the stored message its request named (`topic`, with properties `props`),
/// decided after reading the record and before answering or acting on it.
pub(crate) fn check_stored_rights(
    broker: &BrokerInner,
    conn: &Connection,
    req: &RemotingCommand,
    topic: &str,
    props: &str,
    right: u8,
) -> Result<(), ProcessError> {
    let Some(acl) = broker.acl.as_ref().filter(|_| !conn.is_in_process()) else {
        return Ok(()); // no ACL, or the broker's own proxy (see AclGuard)
    };
    let needed = rocketpy_acl::stored_message(topic, props, right);
    acl.permits(conn.peer().ip(), req, &needed)
        .map_err(|remark| ProcessError::new(response::NO_PERMISSION, remark))
}

/// The slot the broker state is put in once the server is bound (its port is part of it).
pub type BrokerSlot = Arc<OnceLock<Arc<BrokerInner>>>;

type Handler = fn(&Arc<BrokerInner>, &Arc<Connection>, &RemotingCommand) -> ProcessResult;

fn route(slot: &BrokerSlot, handler: Handler) -> Arc<dyn rocketpy_remoting::RequestProcessor> {
    let slot = slot.clone();
    Arc::new(
        move |conn: &Arc<Connection>, req: &RemotingCommand| match slot.get() {
            Some(broker) => handler(broker, conn, req),
            None => Err(ProcessError::new(
                response::SERVICE_NOT_AVAILABLE,
                "broker is starting",
            )),
        },
    )
}

/// Every processor of the broker.
pub fn processor_table(slot: BrokerSlot) -> ProcessorTable {
    let mut t = ProcessorTable::new();
    t.register_all(
        &[
            request::SEND_MESSAGE,
            request::SEND_MESSAGE_V2,
            request::SEND_BATCH_MESSAGE,
        ],
        route(&slot, send::process),
    );
    t.register(
        request::CONSUMER_SEND_MSG_BACK,
        route(&slot, retry::consumer_send_msg_back),
    );
    t.register(
        request::END_TRANSACTION,
        route(&slot, transaction::end_transaction),
    );
    t.register(request::LOCK_BATCH_MQ, route(&slot, lock::lock_batch));
    t.register(request::UNLOCK_BATCH_MQ, route(&slot, lock::unlock_batch));
    t.register(
        request::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        route(&slot, admin::update_subscription_group),
    );
    t.register(
        request::GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
        route(&slot, admin::get_all_subscription_groups),
    );
    t.register(
        request::GET_TOPIC_CONFIG,
        route(&slot, admin::get_topic_config),
    );
    t.register(
        request::GET_SUBSCRIPTIONGROUP_CONFIG,
        route(&slot, admin::get_subscription_group),
    );
    t.register(
        request::GET_ALL_CONSUMER_OFFSET,
        route(&slot, admin::get_all_consumer_offsets),
    );
    t.register(
        request::GET_ALL_DELAY_OFFSET,
        route(&slot, admin::get_all_delay_offsets),
    );
    t.register_all(
        &[request::PULL_MESSAGE, request::LITE_PULL_MESSAGE],
        route(&slot, pull::process),
    );
    t.register(request::POP_MESSAGE, route(&slot, pop::pop_message));
    t.register(request::ACK_MESSAGE, route(&slot, pop_ack::ack_message));
    t.register(
        request::BATCH_ACK_MESSAGE,
        route(&slot, pop_ack::batch_ack_message),
    );
    t.register(
        request::CHANGE_MESSAGE_INVISIBLETIME,
        route(&slot, pop_ack::change_invisible_time),
    );
    t.register(
        request::QUERY_CONSUMER_OFFSET,
        route(&slot, offset::query_consumer_offset),
    );
    t.register(
        request::UPDATE_CONSUMER_OFFSET,
        route(&slot, offset::update_consumer_offset),
    );
    t.register(
        request::GET_MAX_OFFSET,
        route(&slot, offset::get_max_offset),
    );
    t.register(
        request::GET_MIN_OFFSET,
        route(&slot, offset::get_min_offset),
    );
    t.register(request::HEART_BEAT, route(&slot, client::heart_beat));
    t.register(
        request::CHECK_CLIENT_CONFIG,
        route(&slot, client::check_client_config),
    );
    t.register(
        request::UNREGISTER_CLIENT,
        route(&slot, client::unregister_client),
    );
    t.register(
        request::GET_CONSUMER_LIST_BY_GROUP,
        route(&slot, client::consumer_list_by_group),
    );
    t.register(
        request::UPDATE_AND_CREATE_TOPIC,
        route(&slot, admin::update_and_create_topic),
    );
    t.register(
        request::GET_ALL_TOPIC_CONFIG,
        route(&slot, admin::get_all_topic_config),
    );
    t.register(request::QUERY_MESSAGE, route(&slot, query::query_message));
    t.register(
        request::VIEW_MESSAGE_BY_ID,
        route(&slot, query::view_message_by_id),
    );
    t.register(
        request::SEARCH_OFFSET_BY_TIMESTAMP,
        route(&slot, query::search_offset_by_timestamp),
    );
    t.register(
        request::GET_EARLIEST_MSG_STORETIME,
        route(&slot, query::earliest_msg_store_time),
    );
    register_admin(&mut t, &slot);
    let close_slot = slot.clone();
    t.on_close(Arc::new(move |conn: &Arc<Connection>| {
        if let Some(broker) = close_slot.get() {
            broker.producers.on_connection_closed(conn.id());
            for changed in broker.consumers.on_connection_closed(conn.id()) {
                client::group_changed(broker, changed);
            }
        }
    }));
    t
}

/// mqadmin's requests (see `admin_view`, `admin_delete`, `reset_offset`).
fn register_admin(t: &mut ProcessorTable, slot: &BrokerSlot) {
    let routes: [(i32, Handler); 12] = [
        (request::GET_TOPIC_STATS_INFO, admin_view::topic_stats),
        (
            request::GET_CONSUME_STATS,
            admin_view::consume_stats_of_group,
        ),
        (
            request::GET_CONSUMER_CONNECTION_LIST,
            admin_view::consumer_connections,
        ),
        (
            request::GET_PRODUCER_CONNECTION_LIST,
            admin_view::producer_connections,
        ),
        (
            request::QUERY_TOPIC_CONSUME_BY_WHO,
            admin_view::topic_consumed_by,
        ),
        (request::VIEW_BROKER_STATS_DATA, admin_view::view_stats),
        (request::GET_BROKER_CONFIG, broker_config::get_broker_config),
        (
            request::UPDATE_BROKER_CONFIG,
            broker_config::update_broker_config,
        ),
        (request::GET_BROKER_RUNTIME_INFO, admin_view::runtime_info),
        (request::QUERY_CONSUME_QUEUE, query_cq::query_consume_queue),
        (request::DELETE_TOPIC_IN_BROKER, admin_delete::delete_topic),
        (
            request::DELETE_SUBSCRIPTIONGROUP,
            admin_delete::delete_subscription_group,
        ),
    ];
    for (code, handler) in routes {
        t.register(code, route(slot, handler));
    }
    t.register(
        request::INVOKE_BROKER_TO_RESET_OFFSET,
        route(slot, reset_offset::invoke_reset_offset),
    );
    {
        use crate::controller_mode::processors as cm;
        use rocketpy_protocol::code::controller::request as controller;
        t.register(
            controller::NOTIFY_BROKER_ROLE_CHANGED,
            route(slot, cm::notify_role_changed),
        );
        t.register(
            controller::GET_BROKER_EPOCH_CACHE,
            route(slot, cm::epoch_cache),
        );
    }
}

/// A SUCCESS response to `req`.
pub(crate) fn ok(req: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response_to(req, response::SUCCESS)
}

/// Answers at once with `resp`.
pub(crate) fn reply(resp: RemotingCommand) -> ProcessResult {
    Ok(Reply::Now(Some(resp)))
}

/// Answers SUCCESS with `body` as JSON.
pub(crate) fn json_reply<T: serde::Serialize>(req: &RemotingCommand, body: &T) -> ProcessResult {
    let json = serde_json::to_vec(body).map_err(system_error)?;
    reply(ok(req).with_body(json))
}

pub(crate) use crate::error::system_error;

/// NO_PERMISSION unless the broker's permission allows writing (`brokerPermission`).
pub(crate) fn check_broker_writeable(broker: &BrokerInner) -> Result<(), ProcessError> {
    let cfg = broker.config();
    if perm::is_writeable(broker.permission()) {
        return Ok(());
    }
    Err(ProcessError::new(
        response::NO_PERMISSION,
        format!(
            "the broker[{}] sending message is forbidden",
            cfg.broker_name
        ),
    ))
}

/// Creates the consume-queue files of a topic just created, on the store's prepare thread
/// (see `MessageStore::prepare_queues`), so its first messages do not.
pub(crate) fn prepare_queues(broker: &BrokerInner, topic: &str, queues: i32) {
    broker.store.prepare_queues_later(topic, queues);
}

/// Maps a store error to the response RocketMQ gives.
pub(crate) fn store_error(e: StoreError) -> ProcessError {
    match e {
        StoreError::MessageTooLarge { .. } | StoreError::InvalidArgument(_) => ProcessError::new(
            response::MESSAGE_ILLEGAL,
            format!("the message is illegal: {e}"),
        ),
        StoreError::ShutDown => ProcessError::new(
            response::SERVICE_NOT_AVAILABLE,
            "service not available now: the store is shut down",
        ),
        // RocketMQ's store refuses puts on a slave with this status and wording.
        StoreError::SlaveRole => ProcessError::new(
            response::SERVICE_NOT_AVAILABLE,
            "service not available now: messages are put to the slave, which takes writes only from its master",
        ),
        // RocketMQ's wording ("maybe disk full"): clients and operators grep for it.
        e if e.is_no_space() => ProcessError::new(
            response::SERVICE_NOT_AVAILABLE,
            format!("service not available now, maybe disk full: {e}"),
        ),
        other => system_error(other),
    }
}

/// Answers at once, or once the store's guarantees hold: under SYNC_FLUSH the disk sync
/// covering the messages returned (FLUSH_DISK_TIMEOUT after `syncFlushTimeout`), and on a
/// SYNC_MASTER a slave reported their bytes (FLUSH_SLAVE_TIMEOUT after `slaveTimeout`,
/// SLAVE_NOT_AVAILABLE at once when no slave is near; the slave's status wins, as RocketMQ's).
/// The messages are stored either way. `wait` false (every message said `WAIT=false`) answers
/// at once.
pub(crate) fn with_store_wait(
    broker: &BrokerInner,
    mut resp: RemotingCommand,
    appended: Appended,
    wait: bool,
) -> Reply {
    let replica_end = appended
        .results
        .last()
        .map(|r| r.wrote_offset + i64::from(r.wrote_bytes))
        .filter(|_| wait && broker.store.role() == BrokerRole::SyncMaster);
    let flush = appended.flush.filter(|_| wait);
    if flush.is_none() && replica_end.is_none() {
        return Reply::Now(Some(resp));
    }
    let timeout = std::time::Duration::from_millis(broker.settings.store.sync_flush_timeout);
    let slave_timeout = std::time::Duration::from_millis(broker.settings.store.slave_timeout);
    let ha = broker.ha.clone();
    // Controller mode: a SYNC write waits for the in-sync replicas (controller_mode::acks).
    let need = crate::controller_mode::acks::AckNeed::of(&broker.settings.controller);
    let in_sync = broker
        .replicas
        .as_ref()
        .and_then(|r| r.ha_master().cloned());
    let master_end = broker.store.commit_log_range().1;
    let fall_behind_max = broker.settings.store.ha_slave_fallbehind_max;
    Reply::Later(Box::pin(async move {
        if let Some(ticket) = flush {
            if !matches!(tokio::time::timeout(timeout, ticket).await, Ok(true)) {
                resp.code = response::FLUSH_DISK_TIMEOUT;
            }
        }
        if let (Some(end), Some(in_sync)) = (replica_end, &in_sync) {
            if !crate::controller_mode::acks::wait(in_sync, need, end, slave_timeout).await {
                resp.code = response::FLUSH_SLAVE_TIMEOUT;
            }
        } else if let Some(end) = replica_end {
            match ha
                .wait_for(end, master_end, fall_behind_max, slave_timeout)
                .await
            {
                ReplicaWait::Done => {}
                ReplicaWait::Timeout => resp.code = response::FLUSH_SLAVE_TIMEOUT,
                ReplicaWait::SlaveNotAvailable => resp.code = response::SLAVE_NOT_AVAILABLE,
            }
        }
        Some(resp)
    }))
}

/// The consumer group's retry topic and its queue count, created on demand with the group's
/// `retryQueueNums` queues (a new topic is registered with the name servers at once).
pub(crate) fn retry_topic(
    broker: &BrokerInner,
    group: &str,
) -> Result<(String, i32), ProcessError> {
    let Some(cfg) = broker.groups.find_or_create(group) else {
        return Err(ProcessError::new(
            response::SUBSCRIPTION_GROUP_NOT_EXIST,
            format!("subscription group not exist, {group}"),
        ));
    };
    let (tc, created) = broker
        .topics
        .create_retry_topic(group, cfg.retry_queue_nums)
        .map_err(system_error)?;
    if created {
        broker.register_now.notify_one();
    }
    Ok((tc.topic_name, tc.write_queue_nums.max(1)))
}

/// The consumer group's dead-letter topic, created on demand.
pub(crate) fn dlq_topic(broker: &BrokerInner, group: &str) -> Result<String, ProcessError> {
    let (tc, created) = broker
        .topics
        .create_dlq_topic(group)
        .map_err(system_error)?;
    if created {
        broker.register_now.notify_one();
    }
    Ok(tc.topic_name)
}

/// One of `0..queues`, round robin over calls: spreads writes the broker places itself (sends
/// with a negative queue id, retries) over a topic's queues.
pub(crate) fn spread_queue(queues: i32) -> i32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    (NEXT.fetch_add(1, Ordering::Relaxed) % queues.max(1) as u32) as i32
}

#[cfg(test)]
mod tests {
    /// Every code the broker serves (on its main and VIP ports) has an access rule, and every
    /// rule is for a code it serves: a new processor cannot slip past the ACL.
    #[test]
    fn every_served_code_has_an_access_rule() {
        let served = super::processor_table(Default::default()).codes();
        let table = rocketpy_acl::rules::BROKER;
        assert_eq!(rocketpy_acl::rules::check_coverage(table, &served), Ok(()));
    }
}
