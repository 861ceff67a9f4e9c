//! The controller port's request processors: the replicated requests (through
//! [`crate::raft::Controller::submit`] on the leader), heartbeats, metadata, configuration,
//! and the peers' Raft RPCs ([`super::transport`]).
//!
//! What must stay true: every code served here has an access rule in `rocketpy_acl`'s
//! controller table (checked by a test with [`served_codes`]); requests that change or read
//! the replicated state are answered by the leader only (others answer
//! CONTROLLER_NOT_LEADER); GET_METADATA_INFO, heartbeats and the configuration are answered
//! by every controller.

use std::sync::Arc;
use std::time::Instant;

use rocketpy_protocol::code::controller::request as code;
use rocketpy_protocol::code::controller::response::{
    CONTROLLER_ELECT_MASTER_FAILED, CONTROLLER_INVALID_REQUEST,
};
use rocketpy_protocol::code::controller::RAFT_RPC;
use rocketpy_protocol::code::response::{NO_PERMISSION, SUCCESS, SYSTEM_ERROR};
use rocketpy_protocol::config::parse_properties;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult, ProcessorTable, Reply};

use super::metrics::{self, HandleStatus};
use super::settings::{ControllerSettings, RUNTIME_KEYS};
use super::{codec, duties, transport, Shared};
use crate::raft::ControllerRequest;
use crate::result::ControllerResult;

/// Requests served through the replicated state.
const STATE_CODES: &[i32] = &[
    code::CONTROLLER_ALTER_SYNC_STATE_SET,
    code::CONTROLLER_ELECT_MASTER,
    code::CONTROLLER_REGISTER_BROKER,
    code::CONTROLLER_GET_REPLICA_INFO,
    code::CONTROLLER_GET_SYNC_STATE_DATA,
    code::CLEAN_BROKER_DATA,
    code::CONTROLLER_GET_NEXT_BROKER_ID,
    code::CONTROLLER_APPLY_BROKER_ID,
];

/// Keys UPDATE_CONTROLLER_CONFIG may never touch (RocketMQ's `configBlackList` default plus
/// `rocketmqHome`, which it always refuses).
const BLACK_LIST: &[&str] = &["configBlackList", "configStorePath", "rocketmqHome"];

/// Every request code a controller serves.
pub fn served_codes() -> Vec<i32> {
    let mut codes = STATE_CODES.to_vec();
    codes.extend([
        code::BROKER_HEARTBEAT,
        code::CONTROLLER_GET_METADATA_INFO,
        code::GET_CONTROLLER_CONFIG,
        code::UPDATE_CONTROLLER_CONFIG,
        RAFT_RPC,
    ]);
    codes.sort_unstable();
    codes
}

fn bad_request(e: impl ToString) -> ProcessError {
    ProcessError::new(SYSTEM_ERROR, e.to_string())
}

fn state_request(shared: &Arc<Shared>, req: &RemotingCommand) -> ProcessResult {
    let started = Instant::now();
    let request = codec::decode(req)
        .map_err(bad_request)?
        .ok_or_else(|| bad_request("not a controller state request"))?;
    let (shared, req) = (shared.clone(), req.clone());
    Ok(Reply::Later(Box::pin(async move {
        let result = serve_state(&shared, &request).await;
        if let Some(m) = &shared.metrics {
            m.request(req.code, HandleStatus::of(&result), started.elapsed());
        }
        Some(codec::encode(&req, &result))
    })))
}

/// Counts and times each request `processor` answers at once (`metricsExporterType=PROM`);
/// an answer given later ([`state_request`]) is counted when it is ready.
fn metered(
    shared: &Arc<Shared>,
    processor: impl Fn(&Arc<Connection>, &RemotingCommand) -> ProcessResult + Send + Sync + 'static,
) -> Arc<dyn rocketpy_remoting::RequestProcessor> {
    let Some(counters) = shared.metrics.clone() else {
        return Arc::new(processor);
    };
    Arc::new(move |conn: &Arc<Connection>, req: &RemotingCommand| {
        let started = Instant::now();
        let result = processor(conn, req);
        let status = match &result {
            Ok(Reply::Later(_)) => return result,
            Ok(Reply::Now(_)) => HandleStatus::Success,
            Err(_) => HandleStatus::Failed,
        };
        counters.request(req.code, status, started.elapsed());
        result
    })
}

async fn serve_state(shared: &Arc<Shared>, request: &ControllerRequest) -> ControllerResult {
    let Some(controller) = shared.controller() else {
        return ControllerResult::success().fail(SYSTEM_ERROR, "controller starting or stopping");
    };
    let elect = match request {
        ControllerRequest::ElectMaster(e) => Some(e),
        _ => None,
    };
    if let Some(e) = elect {
        let first = controller
            .local_state()
            .group(&e.broker_name)
            .is_some_and(|g| g.sync_state_info.is_first_time_for_elect());
        if !first && shared.warming_up() {
            return ControllerResult::success().fail(
                CONTROLLER_ELECT_MASTER_FAILED,
                "the controller started less than electionWarmUpMillis ago and does not yet know which brokers are alive; retry shortly",
            );
        }
    }
    let view = shared.heartbeats.view();
    let result = controller.submit(request, &view).await;
    if let Some(e) = elect {
        metrics::count_election(shared, &e.cluster_name, &e.broker_name, result.code);
        if result.is_success() {
            duties::notify(shared, &e.broker_name, &result, &view);
        }
    }
    result
}

fn heartbeat(shared: &Arc<Shared>, conn: &Arc<Connection>, req: &RemotingCommand) -> ProcessResult {
    let (beat, has_id) = codec::decode_heartbeat(req)?;
    if !has_id {
        return Err(ProcessError::new(
            CONTROLLER_INVALID_REQUEST,
            "Heart beat with empty brokerId",
        ));
    }
    if !shared.heartbeats.beat(beat, conn.id()) {
        return Err(ProcessError::new(
            SYSTEM_ERROR,
            "the controller tracks too many brokers",
        ));
    }
    Ok(Reply::Now(Some(
        RemotingCommand::response_to(req, SUCCESS).with_remark("Heart beat success"),
    )))
}

/// GET_METADATA_INFO: any controller answers with what it knows of the leader.
fn metadata(shared: &Arc<Shared>, req: &RemotingCommand) -> ProcessResult {
    let mut resp = RemotingCommand::response_to(req, SUCCESS);
    resp.set_field("group", &shared.settings.read().controller_dleger_group);
    let leader = shared.controller().and_then(|c| c.current_leader());
    if let Some(leader) = leader {
        if let (Some(name), Some(addr)) =
            (shared.peers.name_of(leader), shared.peers.addr_of(leader))
        {
            resp.set_field("controllerLeaderId", name);
            resp.set_field("controllerLeaderAddress", addr);
        }
    }
    resp.set_field("isLeader", leader == Some(shared.peers.self_id()));
    resp.set_field("peers", shared.peers.metadata_text());
    Ok(Reply::Now(Some(resp)))
}

fn get_config(shared: &Arc<Shared>, req: &RemotingCommand) -> ProcessResult {
    let text = shared.settings.read().properties();
    Ok(Reply::Now(Some(
        RemotingCommand::response_to(req, SUCCESS).with_body(text.into_bytes()),
    )))
}

/// UPDATE_CONTROLLER_CONFIG: all keys are checked before any is applied; only
/// [`RUNTIME_KEYS`] change at run time, and the others are refused with why.
fn update_config(shared: &Arc<Shared>, req: &RemotingCommand) -> ProcessResult {
    let text = std::str::from_utf8(&req.body)
        .map_err(|_| bad_request("the properties body is not UTF-8"))?;
    let pairs = parse_properties(text);
    if pairs.is_empty() {
        return Err(bad_request("no properties to update"));
    }
    let mut next: ControllerSettings = shared.settings.read().clone();
    for (key, value) in &pairs {
        if BLACK_LIST.contains(&key.as_str()) {
            return Err(ProcessError::new(
                NO_PERMISSION,
                format!("Can not update config in black list: {key}"),
            ));
        }
        if !next.set(key, value).map_err(bad_request)? {
            return Err(bad_request(format!("unknown controller key {key:?}")));
        }
        if !RUNTIME_KEYS.contains(&key.as_str()) {
            return Err(bad_request(format!(
                "{key} takes effect only at start: change it in the controller's file and restart it (keys that change at run time: {})",
                RUNTIME_KEYS.join(", ")
            )));
        }
    }
    if let Some(controller) = shared.controller() {
        let mut config = controller.config();
        config.enable_elect_unclean_master = next.enable_elect_unclean_master;
        controller.set_config(config);
    }
    tracing::info!(?pairs, "controller configuration updated");
    *shared.settings.write() = next;
    Ok(Reply::Now(Some(RemotingCommand::response_to(req, SUCCESS))))
}

/// The controller port's processors.
pub fn table(shared: &Arc<Shared>) -> ProcessorTable {
    let mut table = ProcessorTable::new();
    for code in STATE_CODES {
        let s = shared.clone();
        table.register(
            *code,
            metered(shared, move |_: &Arc<Connection>, req: &RemotingCommand| {
                state_request(&s, req)
            }),
        );
    }
    let s = shared.clone();
    table.register(
        code::BROKER_HEARTBEAT,
        metered(
            shared,
            move |conn: &Arc<Connection>, req: &RemotingCommand| heartbeat(&s, conn, req),
        ),
    );
    let s = shared.clone();
    table.register(
        code::CONTROLLER_GET_METADATA_INFO,
        metered(shared, move |_: &Arc<Connection>, req: &RemotingCommand| {
            metadata(&s, req)
        }),
    );
    let s = shared.clone();
    table.register(
        code::GET_CONTROLLER_CONFIG,
        metered(shared, move |_: &Arc<Connection>, req: &RemotingCommand| {
            get_config(&s, req)
        }),
    );
    let s = shared.clone();
    table.register(
        code::UPDATE_CONTROLLER_CONFIG,
        metered(shared, move |_: &Arc<Connection>, req: &RemotingCommand| {
            update_config(&s, req)
        }),
    );
    let raft = shared.raft.clone();
    table.register(
        RAFT_RPC,
        Arc::new(move |_: &Arc<Connection>, req: &RemotingCommand| transport::process(&raft, req)),
    );
    let s = shared.clone();
    table.on_close(Arc::new(move |conn: &Arc<Connection>| {
        let gone = s.heartbeats.connection_closed(conn.id());
        if !gone.is_empty() {
            tokio::spawn(duties::departed(s.clone(), gone));
        }
    }));
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code the controller port serves has an access rule, and no rule is left over.
    #[test]
    fn every_served_code_has_an_access_rule() {
        assert_eq!(
            rocketpy_acl::rules::check_coverage(rocketpy_acl::rules::CONTROLLER, &served_codes()),
            Ok(())
        );
    }
}
