//! The controller's requests read from RocketMQ frames, and its answers written as frames.
//!
//! Headers are `extFields` (strings); absent fields take RocketMQ's defaults, noted per
//! request in [`crate::request`]. A field that is present but does not parse is refused (as
//! Java's header decoding refuses it), never read as its default.
//!
//! What must stay true: reading a request costs at most one bounded pass over its header and
//! body (GET_SYNC_STATE_DATA's names: at most [`MAX_NAMES`]).

use rocketpy_protocol::code::controller::request as code;
use rocketpy_protocol::{ProtocolError, RemotingCommand};

use super::heartbeats::{Heartbeat, DEFAULT_TIMEOUT_MS};
use crate::body::{self, SyncStateSet};
use crate::raft::ControllerRequest;
use crate::request::{
    field, AlterSyncStateSetRequest, ApplyBrokerIdRequest, CleanBrokerDataRequest,
    ElectMasterRequest, GetNextBrokerIdRequest, GetReplicaInfoRequest, RegisterBrokerRequest,
};
use crate::result::ControllerResult;

/// Broker names one GET_SYNC_STATE_DATA may ask about.
pub const MAX_NAMES: usize = 10_000;

/// Header fields of BROKER_HEARTBEAT (`BrokerHeartbeatRequestHeader`).
pub mod heartbeat_field {
    pub const BROKER_ADDR: &str = "brokerAddr";
    pub const EPOCH: &str = "epoch";
    pub const MAX_OFFSET: &str = "maxOffset";
    pub const CONFIRM_OFFSET: &str = "confirmOffset";
    pub const HEARTBEAT_TIMEOUT_MILLS: &str = "heartbeatTimeoutMills";
    pub const ELECTION_PRIORITY: &str = "electionPriority";
}

/// Why a request cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error(transparent)]
    Header(#[from] ProtocolError),
    #[error("{0}")]
    Body(String),
}

fn text(req: &RemotingCommand, name: &'static str) -> Result<String, ProtocolError> {
    req.field(name).map(str::to_owned)
}

fn opt_text(req: &RemotingCommand, name: &str) -> Option<String> {
    req.field_opt(name).map(str::to_owned)
}

/// A request the replicated state serves, or `None` for a code that is not one of those.
pub fn decode(req: &RemotingCommand) -> Result<Option<ControllerRequest>, DecodeError> {
    Ok(Some(match req.code {
        code::CONTROLLER_GET_NEXT_BROKER_ID => {
            ControllerRequest::GetNextBrokerId(GetNextBrokerIdRequest {
                cluster_name: text(req, field::CLUSTER_NAME)?,
                broker_name: text(req, field::BROKER_NAME)?,
            })
        }
        code::CONTROLLER_APPLY_BROKER_ID => {
            ControllerRequest::ApplyBrokerId(ApplyBrokerIdRequest {
                cluster_name: text(req, field::CLUSTER_NAME)?,
                broker_name: text(req, field::BROKER_NAME)?,
                applied_broker_id: req.parse_field(field::APPLIED_BROKER_ID)?,
                register_check_code: text(req, field::REGISTER_CHECK_CODE)?,
            })
        }
        code::CONTROLLER_REGISTER_BROKER => {
            ControllerRequest::RegisterBroker(RegisterBrokerRequest {
                cluster_name: text(req, field::CLUSTER_NAME)?,
                broker_name: text(req, field::BROKER_NAME)?,
                broker_id: req.parse_field(field::BROKER_ID)?,
                broker_address: text(req, field::BROKER_ADDRESS)?,
            })
        }
        code::CONTROLLER_ELECT_MASTER => ControllerRequest::ElectMaster(ElectMasterRequest {
            cluster_name: opt_text(req, field::CLUSTER_NAME).unwrap_or_default(),
            broker_name: opt_text(req, field::BROKER_NAME).unwrap_or_default(),
            broker_id: Some(req.parse_field_or(field::BROKER_ID, -1)?),
            designate_elect: req.parse_field_or(field::DESIGNATE_ELECT, false)?,
        }),
        code::CONTROLLER_ALTER_SYNC_STATE_SET => {
            let sync_state_set: SyncStateSet = body::decode(&req.body)
                .map_err(|e| DecodeError::Body(format!("invalid SyncStateSet body: {e}")))?;
            ControllerRequest::AlterSyncStateSet(AlterSyncStateSetRequest {
                broker_name: text(req, field::BROKER_NAME)?,
                master_broker_id: req.parse_field(field::MASTER_BROKER_ID)?,
                master_epoch: req.parse_field(field::MASTER_EPOCH)?,
                sync_state_set,
            })
        }
        code::CONTROLLER_GET_REPLICA_INFO => {
            ControllerRequest::GetReplicaInfo(GetReplicaInfoRequest {
                broker_name: text(req, field::BROKER_NAME)?,
            })
        }
        code::CONTROLLER_GET_SYNC_STATE_DATA => {
            // An empty or missing body asks about nobody (RocketMQ answers an empty SUCCESS).
            let names: Vec<String> = if req.body.is_empty() {
                Vec::new()
            } else {
                body::decode(&req.body)
                    .map_err(|e| DecodeError::Body(format!("invalid broker name list: {e}")))?
            };
            if names.len() > MAX_NAMES {
                return Err(DecodeError::Body(format!(
                    "at most {MAX_NAMES} broker names per request"
                )));
            }
            ControllerRequest::GetSyncStateData(names)
        }
        code::CLEAN_BROKER_DATA => ControllerRequest::CleanBrokerData(CleanBrokerDataRequest {
            cluster_name: opt_text(req, field::CLUSTER_NAME),
            broker_name: text(req, field::BROKER_NAME)?,
            broker_controller_ids_to_clean: opt_text(req, field::BROKER_CONTROLLER_IDS_TO_CLEAN),
            is_clean_living_broker: req.parse_field_or(field::IS_CLEAN_LIVING_BROKER, false)?,
        }),
        _ => return Ok(None),
    }))
}

/// BROKER_HEARTBEAT's header. `brokerId` absent is the caller's to refuse (RocketMQ answers
/// CONTROLLER_INVALID_REQUEST), so it is an `Option` here.
pub fn decode_heartbeat(req: &RemotingCommand) -> Result<(Heartbeat, bool), ProtocolError> {
    use heartbeat_field as f;
    let broker_id: Option<i64> = match req.field_opt(field::BROKER_ID) {
        Some(_) => Some(req.parse_field(field::BROKER_ID)?),
        None => None,
    };
    let beat = Heartbeat {
        cluster_name: text(req, field::CLUSTER_NAME)?,
        broker_name: text(req, field::BROKER_NAME)?,
        broker_addr: text(req, f::BROKER_ADDR)?,
        broker_id: broker_id.unwrap_or(-1),
        epoch: req.parse_field_or(f::EPOCH, -1)?,
        max_offset: req.parse_field_or(f::MAX_OFFSET, -1)?,
        confirm_offset: req.parse_field_or(f::CONFIRM_OFFSET, -1)?,
        timeout_ms: req.parse_field_or(f::HEARTBEAT_TIMEOUT_MILLS, DEFAULT_TIMEOUT_MS)?,
        election_priority: req.parse_field_or(f::ELECTION_PRIORITY, i32::MAX)?,
    };
    Ok((beat, broker_id.is_some()))
}

/// The frame answering `req` with `result`.
pub fn encode(req: &RemotingCommand, result: &ControllerResult) -> RemotingCommand {
    let mut resp = RemotingCommand::response_to(req, result.code);
    for (name, value) in &result.header {
        resp.set_field(name, value);
    }
    if let Some(remark) = &result.remark {
        resp = resp.with_remark(remark.clone());
    }
    if let Some(body) = &result.body {
        resp = resp.with_body(body.clone());
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(code: i32, fields: &[(&str, &str)], body: &[u8]) -> RemotingCommand {
        let mut r = RemotingCommand::request(code).with_body(body.to_vec());
        for (k, v) in fields {
            r.set_field(k, v);
        }
        r
    }

    #[test]
    fn elect_defaults_are_rocketmqs() {
        let r = decode(&req(code::CONTROLLER_ELECT_MASTER, &[], b"")).unwrap();
        assert_eq!(
            r,
            Some(ControllerRequest::ElectMaster(ElectMasterRequest {
                cluster_name: String::new(),
                broker_name: String::new(),
                broker_id: Some(-1),
                designate_elect: false,
            }))
        );
        // Present but unreadable is refused, not defaulted.
        assert!(decode(&req(
            code::CONTROLLER_ELECT_MASTER,
            &[("brokerId", "x")],
            b""
        ))
        .is_err());
    }

    #[test]
    fn alter_reads_fastjson_bodies() {
        let r = decode(&req(
            code::CONTROLLER_ALTER_SYNC_STATE_SET,
            &[
                ("brokerName", "a"),
                ("masterBrokerId", "1"),
                ("masterEpoch", "2"),
            ],
            br#"{"syncStateSet":[1,2],"syncStateSetEpoch":3}"#,
        ))
        .unwrap();
        let Some(ControllerRequest::AlterSyncStateSet(a)) = r else {
            panic!("{r:?}")
        };
        assert_eq!(a.sync_state_set.sync_state_set_epoch, 3);
        assert!(decode(&req(
            code::CONTROLLER_ALTER_SYNC_STATE_SET,
            &[("brokerName", "a")],
            b"[",
        ))
        .is_err());
    }

    #[test]
    fn heartbeat_defaults() {
        let (beat, has_id) = decode_heartbeat(&req(
            904,
            &[
                ("clusterName", "c"),
                ("brokerName", "b"),
                ("brokerAddr", "h:1"),
            ],
            b"",
        ))
        .unwrap();
        assert!(!has_id);
        assert_eq!(
            (beat.epoch, beat.timeout_ms, beat.election_priority),
            (-1, 10_000, i32::MAX)
        );
    }
}
