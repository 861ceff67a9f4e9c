//! Request processors, one module per area, and the table that routes codes to them.

pub mod admin;
pub mod client;
pub mod lock;
pub mod offset;
pub mod pull;
pub mod query;
pub mod retry;
pub mod send;

use std::sync::{Arc, OnceLock};

use rocketpy_protocol::code::{request, response};
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult, ProcessorTable};

use crate::BrokerInner;

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
        &[request::SEND_MESSAGE, request::SEND_MESSAGE_V2],
        route(&slot, send::process),
    );
    t.register(
        request::SEND_BATCH_MESSAGE,
        route(&slot, send::process_batch),
    );
    t.register(
        request::CONSUMER_SEND_MSG_BACK,
        route(&slot, retry::consumer_send_msg_back),
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
    t.register(request::PULL_MESSAGE, route(&slot, pull::process));
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
    let close_slot = slot.clone();
    t.on_close(Arc::new(move |conn: &Arc<Connection>| {
        if let Some(broker) = close_slot.get() {
            for changed in broker.consumers.on_connection_closed(conn.id()) {
                client::notify_consumer_ids_changed(changed);
            }
        }
    }));
    t
}

/// A SUCCESS response to `req`.
pub(crate) fn ok(req: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response_to(req, response::SUCCESS)
}
