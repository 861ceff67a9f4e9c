//! A broker's side of the controller protocol (RocketMQ's `BrokerOuterAPI` controller calls
//! and `ReplicasManager` registration, docs/controller-design.md §4.1): find the leader, join
//! the group with a persistent id, send heartbeats to every controller, ask for and change the
//! group's master and SyncStateSet.
//!
//! What must stay true:
//! - Requests that read or change the replicated state go to the leader. A CONTROLLER_NOT_LEADER
//!   answer, or a leader that cannot be reached, makes the client look for the leader again at
//!   once (RocketMQ waits for its next metadata poll; §8 explains why rocketpy does not).
//! - Heartbeats go to every controller, leader or not: liveness is local to each controller.
//! - An id is applied only after it was recorded in `brokerIdentity-temp`, and kept only
//!   after the controller accepted it ([`super::identity`]).

use std::collections::BTreeSet;
use std::time::Duration;

use parking_lot::RwLock;
use rocketpy_controller::body::{self, SyncStateSet};
use rocketpy_controller::request::field;
use rocketpy_controller::server::codec::heartbeat_field;
use rocketpy_protocol::code::controller::request as code;
use rocketpy_protocol::code::controller::response::CONTROLLER_NOT_LEADER;
use rocketpy_protocol::code::response::SUCCESS;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::RemotingClient;

use super::identity::{Identity, IdentityFile};

/// How often one request looks for the leader before giving up.
const LEADER_TRIES: usize = 3;

/// Why a controller request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControllerError {
    #[error("no controller of {0:?} names a leader")]
    NoLeader(Vec<String>),
    #[error("controller answered {code}: {remark}")]
    Refused { code: i32, remark: String },
    #[error("{0}")]
    Io(String),
}

/// The group's master and in-sync replicas as the controller reports them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplicaInfo {
    pub master_broker_id: Option<i64>,
    pub master_address: Option<String>,
    pub master_epoch: i32,
    pub sync_state_set_epoch: i32,
    pub sync_state_set: BTreeSet<i64>,
}

impl ReplicaInfo {
    fn from_response(resp: &RemotingCommand) -> Self {
        let sss: SyncStateSet = body::decode(&resp.body).unwrap_or(SyncStateSet {
            sync_state_set: BTreeSet::new(),
            sync_state_set_epoch: 0,
        });
        let num = |name: &str| resp.field_opt(name).and_then(|v| v.trim().parse().ok());
        ReplicaInfo {
            master_broker_id: num(field::MASTER_BROKER_ID),
            master_address: resp
                .field_opt(field::MASTER_ADDRESS)
                .filter(|a| !a.is_empty())
                .map(str::to_owned),
            master_epoch: num(field::MASTER_EPOCH).unwrap_or(0) as i32,
            sync_state_set_epoch: num(field::SYNC_STATE_SET_EPOCH)
                .map(|v| v as i32)
                .unwrap_or(sss.sync_state_set_epoch),
            sync_state_set: sss.sync_state_set,
        }
    }
}

/// What a heartbeat reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Beat {
    pub broker_id: i64,
    pub epoch: i32,
    pub max_offset: i64,
    pub confirm_offset: i64,
    pub timeout_ms: u64,
    pub election_priority: i32,
}

/// One broker's client of the controllers.
pub struct ControllerClient {
    client: RemotingClient,
    addrs: Vec<String>,
    leader: RwLock<Option<String>>,
    timeout: Duration,
    cluster_name: String,
    broker_name: String,
    broker_addr: String,
}

impl ControllerClient {
    pub fn new(
        client: RemotingClient,
        addrs: Vec<String>,
        cluster_name: &str,
        broker_name: &str,
        broker_addr: &str,
    ) -> Self {
        Self {
            client,
            addrs,
            leader: RwLock::new(None),
            timeout: Duration::from_secs(3),
            cluster_name: cluster_name.to_owned(),
            broker_name: broker_name.to_owned(),
            broker_addr: broker_addr.to_owned(),
        }
    }

    fn request(&self, code: i32) -> RemotingCommand {
        RemotingCommand::request(code)
            .with_field(field::CLUSTER_NAME, &self.cluster_name)
            .with_field(field::BROKER_NAME, &self.broker_name)
    }

    /// Asks every controller (GET_METADATA_INFO) until one names the leader.
    pub async fn find_leader(&self) -> Result<String, ControllerError> {
        for addr in &self.addrs {
            let req = RemotingCommand::request(code::CONTROLLER_GET_METADATA_INFO);
            if let Ok(resp) = self.client.invoke(addr, req, self.timeout).await {
                if let Some(leader) = resp
                    .field_opt("controllerLeaderAddress")
                    .filter(|l| !l.is_empty())
                {
                    *self.leader.write() = Some(leader.to_owned());
                    return Ok(leader.to_owned());
                }
            }
        }
        Err(ControllerError::NoLeader(self.addrs.clone()))
    }

    /// Sends `req` to the leader (looking for it as needed) and returns a SUCCESS answer; any
    /// other answer is [`ControllerError::Refused`].
    pub async fn invoke_leader(
        &self,
        req: RemotingCommand,
    ) -> Result<RemotingCommand, ControllerError> {
        let mut last = ControllerError::NoLeader(self.addrs.clone());
        for _ in 0..LEADER_TRIES {
            let known = self.leader.read().clone();
            let leader = match known {
                Some(l) => l,
                None => match self.find_leader().await {
                    Ok(l) => l,
                    Err(e) => {
                        last = e;
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue;
                    }
                },
            };
            match self.client.invoke(&leader, req.clone(), self.timeout).await {
                Ok(resp) if resp.code == SUCCESS => return Ok(resp),
                Ok(resp) if resp.code == CONTROLLER_NOT_LEADER => {
                    *self.leader.write() = resp
                        .field_opt("leaderAddress")
                        .filter(|l| !l.is_empty())
                        .map(str::to_owned);
                    last = refused(&resp);
                }
                Ok(resp) => return Err(refused(&resp)),
                Err(e) => {
                    *self.leader.write() = None;
                    last = ControllerError::Io(e.to_string());
                }
            }
        }
        Err(last)
    }

    /// This broker's controller id: the stored one, else a new one applied for
    /// (GET_NEXT_BROKER_ID, then APPLY_BROKER_ID with the id recorded first).
    pub async fn join(&self, file: &IdentityFile, now_ms: i64) -> Result<i64, ControllerError> {
        let io = |e: rocketpy_store::StoreError| ControllerError::Io(e.to_string());
        if let Some(id) = file
            .load(&self.cluster_name, &self.broker_name)
            .map_err(io)?
        {
            return Ok(id);
        }
        let next = self
            .invoke_leader(self.request(code::CONTROLLER_GET_NEXT_BROKER_ID))
            .await?;
        let broker_id: i64 = next
            .field_opt(field::NEXT_BROKER_ID)
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| ControllerError::Io("GET_NEXT_BROKER_ID answered no id".into()))?;
        let identity = Identity {
            cluster_name: self.cluster_name.clone(),
            broker_name: self.broker_name.clone(),
            broker_id,
        };
        let check_code = format!("{};{now_ms}", self.broker_addr);
        file.begin(&identity, &check_code).map_err(io)?;
        let apply = self
            .request(code::CONTROLLER_APPLY_BROKER_ID)
            .with_field(field::APPLIED_BROKER_ID, broker_id)
            .with_field(field::REGISTER_CHECK_CODE, &check_code);
        match self.invoke_leader(apply).await {
            Ok(_) => {
                file.commit(&identity).map_err(io)?;
                Ok(broker_id)
            }
            Err(e) => {
                file.abandon().map_err(io)?;
                Err(e)
            }
        }
    }

    /// REGISTER_BROKER: the group's master (only if alive) and SyncStateSet.
    pub async fn register(&self, broker_id: i64) -> Result<ReplicaInfo, ControllerError> {
        let req = self
            .request(code::CONTROLLER_REGISTER_BROKER)
            .with_field(field::BROKER_ID, broker_id)
            .with_field(field::BROKER_ADDRESS, &self.broker_addr);
        Ok(ReplicaInfo::from_response(&self.invoke_leader(req).await?))
    }

    /// GET_REPLICA_INFO.
    pub async fn replica_info(&self) -> Result<ReplicaInfo, ControllerError> {
        let req = RemotingCommand::request(code::CONTROLLER_GET_REPLICA_INFO)
            .with_field(field::BROKER_NAME, &self.broker_name);
        Ok(ReplicaInfo::from_response(&self.invoke_leader(req).await?))
    }

    /// ELECT_MASTER asked by this broker (at start, or when the group has no master).
    pub async fn elect(&self, broker_id: i64) -> Result<ReplicaInfo, ControllerError> {
        let req = self
            .request(code::CONTROLLER_ELECT_MASTER)
            .with_field(field::BROKER_ID, broker_id)
            .with_field(field::DESIGNATE_ELECT, false);
        let resp = self.invoke_leader(req).await?;
        let mut info = ReplicaInfo::from_response(&resp);
        // The body is an ElectMasterResponseBody, whose set has no epoch of its own.
        if let Ok(b) = body::decode::<body::ElectMasterResponseBody>(&resp.body) {
            info.sync_state_set = b.sync_state_set;
        }
        Ok(info)
    }

    /// ALTER_SYNC_STATE_SET by the master: the new set's epoch.
    pub async fn alter_sync_state_set(
        &self,
        master_id: i64,
        master_epoch: i32,
        set: &BTreeSet<i64>,
        known_epoch: i32,
    ) -> Result<i32, ControllerError> {
        let req = RemotingCommand::request(code::CONTROLLER_ALTER_SYNC_STATE_SET)
            .with_field(field::BROKER_NAME, &self.broker_name)
            .with_field(field::MASTER_BROKER_ID, master_id)
            .with_field(field::MASTER_EPOCH, master_epoch)
            .with_body(body::encode(&SyncStateSet {
                sync_state_set: set.clone(),
                sync_state_set_epoch: known_epoch,
            }));
        let resp = self.invoke_leader(req).await?;
        resp.field_opt(field::NEW_SYNC_STATE_SET_EPOCH)
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| ControllerError::Io("ALTER_SYNC_STATE_SET answered no epoch".into()))
    }

    /// BROKER_HEARTBEAT to every controller, oneway.
    pub async fn heartbeat(&self, beat: &Beat) {
        let req = self
            .request(code::BROKER_HEARTBEAT)
            .with_field(heartbeat_field::BROKER_ADDR, &self.broker_addr)
            .with_field(field::BROKER_ID, beat.broker_id)
            .with_field(heartbeat_field::EPOCH, beat.epoch)
            .with_field(heartbeat_field::MAX_OFFSET, beat.max_offset)
            .with_field(heartbeat_field::CONFIRM_OFFSET, beat.confirm_offset)
            .with_field(heartbeat_field::HEARTBEAT_TIMEOUT_MILLS, beat.timeout_ms)
            .with_field(heartbeat_field::ELECTION_PRIORITY, beat.election_priority);
        for addr in &self.addrs {
            if let Err(e) = self.client.invoke_oneway(addr, req.clone()).await {
                tracing::debug!(controller = %addr, error = %e, "heartbeat not sent");
            }
        }
    }
}

fn refused(resp: &RemotingCommand) -> ControllerError {
    ControllerError::Refused {
        code: resp.code,
        remark: resp.remark.clone().unwrap_or_default(),
    }
}
