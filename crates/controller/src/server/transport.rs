//! Raft between controllers over rocketpy's remoting: one [`RAFT_RPC`] request per openraft
//! RPC, its JSON as the body, answered with the peer's [`RaftReply`] as JSON. The requests go
//! to the peer's controller port, the one brokers use too.
//!
//! What must stay true: a lost, refused or unreadable answer is a [`TransportError`] (openraft
//! retries), never a made-up reply; a peer's answer is read within the frame limit, in one
//! linear pass.

use std::sync::Arc;
use std::time::Duration;

use rocketpy_protocol::code::controller::RAFT_RPC;
use rocketpy_protocol::code::response::SUCCESS;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{ProcessError, ProcessResult, RemotingClient, RemotingError, Reply};

use crate::raft::{
    serve, ControllerRaft, NodeId, RaftReply, RaftRpc, RaftTransport, TransportError,
};

/// The TCP transport of one controller.
pub struct RemotingTransport {
    client: RemotingClient,
}

impl RemotingTransport {
    pub fn new(client: RemotingClient) -> Self {
        Self { client }
    }
}

impl RaftTransport for RemotingTransport {
    async fn call(
        &self,
        target: NodeId,
        node: &openraft::BasicNode,
        rpc: RaftRpc,
        timeout: Duration,
    ) -> Result<RaftReply, TransportError> {
        let body = serde_json::to_vec(&rpc)
            .map_err(|e| TransportError::Network(target, format!("encoding the RPC: {e}")))?;
        let request = RemotingCommand::request(RAFT_RPC).with_body(body);
        let response = self
            .client
            .invoke(&node.addr, request, timeout)
            .await
            .map_err(|e| match e {
                RemotingError::Timeout { .. } => TransportError::Network(target, e.to_string()),
                _ => {
                    // A broken connection is dropped so that the next RPC dials again.
                    self.client.close_connection(&node.addr);
                    TransportError::Unreachable(target, e.to_string())
                }
            })?;
        if response.code != SUCCESS {
            return Err(TransportError::Network(
                target,
                format!(
                    "peer answered code {}: {}",
                    response.code,
                    response.remark.as_deref().unwrap_or("")
                ),
            ));
        }
        serde_json::from_slice(&response.body)
            .map_err(|e| TransportError::Network(target, format!("unreadable reply: {e}")))
    }
}

/// The processor of [`RAFT_RPC`]: hands the peer's RPC to this controller's Raft, once Raft
/// runs (`raft` is filled after the port is bound, since Raft needs its transport first).
pub fn process(
    raft: &Arc<std::sync::OnceLock<ControllerRaft>>,
    req: &RemotingCommand,
) -> ProcessResult {
    let Some(raft) = raft.get().cloned() else {
        return Err(ProcessError::new(
            rocketpy_protocol::code::response::SYSTEM_ERROR,
            "controller starting",
        ));
    };
    let rpc: RaftRpc = serde_json::from_slice(&req.body).map_err(|e| {
        ProcessError::new(
            rocketpy_protocol::code::response::SYSTEM_ERROR,
            format!("unreadable raft RPC: {e}"),
        )
    })?;
    let mut response = RemotingCommand::response_to(req, SUCCESS);
    Ok(Reply::Later(Box::pin(async move {
        let reply = serve(&raft, rpc).await;
        Some(match serde_json::to_vec(&reply) {
            Ok(body) => response.with_body(body),
            Err(e) => {
                response.code = rocketpy_protocol::code::response::SYSTEM_ERROR;
                response.with_remark(format!("encoding the reply: {e}"))
            }
        })
    })))
}
