//! How controllers carry openraft's RPCs to each other: one seam, [`RaftTransport`], under
//! openraft's network traits.
//!
//! A transport moves a [`RaftRpc`] to a peer and brings back its [`RaftReply`]; the peer hands
//! the RPC to its own Raft with [`serve`]. Both enums are serde types, so a transport over
//! bytes only has to frame their JSON.
//!
//! Implementations:
//! - [`super::router::Router`]: in-process, for tests, with dropped links and partitions.
//! - NEXT STEP (not here): a TCP transport over rocketpy's remoting layer, carrying the JSON
//!   of a `RaftRpc` as the body of a private request code to the peer's controller port and
//!   answering with the `RaftReply`. RocketMQ's controllers speak DLedger's own protocol to
//!   each other, which nothing outside a controller group sees; rocketpy's controllers only
//!   ever talk to rocketpy controllers, so their Raft traffic is theirs to choose.
//!
//! What must stay true: a transport never invents a reply. A lost request or reply is an
//! error ([`TransportError`]), which openraft treats as "unreachable, retry later".

use std::future::Future;
use std::time::Duration;

use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use serde::{Deserialize, Serialize};

use super::types::{ControllerRaft, Node, NodeId, TypeConfig};

/// An RPC from one controller's Raft to another's.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum RaftRpc {
    AppendEntries(AppendEntriesRequest<TypeConfig>),
    Vote(VoteRequest<NodeId>),
    InstallSnapshot(InstallSnapshotRequest<TypeConfig>),
}

/// The peer Raft's answer to a [`RaftRpc`] of the same kind.
#[derive(Debug, Serialize, Deserialize)]
pub enum RaftReply {
    AppendEntries(Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>>),
    Vote(Result<VoteResponse<NodeId>, RaftError<NodeId>>),
    InstallSnapshot(
        Result<InstallSnapshotResponse<NodeId>, RaftError<NodeId, InstallSnapshotError>>,
    ),
}

/// Hands an RPC that arrived from a peer to this controller's Raft.
pub async fn serve(raft: &ControllerRaft, rpc: RaftRpc) -> RaftReply {
    match rpc {
        RaftRpc::AppendEntries(req) => RaftReply::AppendEntries(raft.append_entries(req).await),
        RaftRpc::Vote(req) => RaftReply::Vote(raft.vote(req).await),
        RaftRpc::InstallSnapshot(req) => {
            RaftReply::InstallSnapshot(raft.install_snapshot(req).await)
        }
    }
}

/// Why an RPC got no reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// The peer cannot be reached now (down, partitioned, refused): openraft backs off.
    #[error("peer {0} unreachable: {1}")]
    Unreachable(NodeId, String),
    /// The request or the reply was lost or garbled on the way.
    #[error("network error talking to {0}: {1}")]
    Network(NodeId, String),
}

/// Carries RPCs to peers: the seam between openraft and a wire.
pub trait RaftTransport: Send + Sync + 'static {
    /// Sends `rpc` to `target` (at `node`'s address) and waits at most `timeout` for its reply.
    fn call(
        &self,
        target: NodeId,
        node: &Node,
        rpc: RaftRpc,
        timeout: Duration,
    ) -> impl Future<Output = Result<RaftReply, TransportError>> + Send;
}

/// openraft's network factory over a [`RaftTransport`].
pub struct Network<T> {
    transport: std::sync::Arc<T>,
}

impl<T> Network<T> {
    pub fn new(transport: T) -> Self {
        Self {
            transport: std::sync::Arc::new(transport),
        }
    }
}

/// A connection to one peer.
pub struct Connection<T> {
    transport: std::sync::Arc<T>,
    target: NodeId,
    node: Node,
}

impl<T: RaftTransport> RaftNetworkFactory<TypeConfig> for Network<T> {
    type Network = Connection<T>;

    async fn new_client(&mut self, target: NodeId, node: &Node) -> Self::Network {
        Connection {
            transport: self.transport.clone(),
            target,
            node: node.clone(),
        }
    }
}

/// A transport failure as openraft's RPC error.
fn rpc_error<E: std::error::Error>(e: TransportError) -> RPCError<NodeId, Node, E> {
    let io = std::io::Error::other(e.to_string());
    match e {
        TransportError::Unreachable(..) => RPCError::Unreachable(Unreachable::new(&io)),
        TransportError::Network(..) => RPCError::Network(NetworkError::new(&io)),
    }
}

fn wrong_kind<E: std::error::Error>(target: NodeId) -> RPCError<NodeId, Node, E> {
    RPCError::Network(NetworkError::new(&std::io::Error::other(format!(
        "peer {target} answered an RPC of another kind"
    ))))
}

impl<T: RaftTransport> Connection<T> {
    async fn call(&self, rpc: RaftRpc, option: &RPCOption) -> Result<RaftReply, TransportError> {
        self.transport
            .call(self.target, &self.node, rpc, option.soft_ttl())
            .await
    }

    // The error type is openraft's `RaftNetwork` signature; it is not ours to box.
    #[allow(clippy::result_large_err)]
    fn remote<R, E: std::error::Error>(
        &self,
        result: Result<R, RaftError<NodeId, E>>,
    ) -> Result<R, RPCError<NodeId, Node, RaftError<NodeId, E>>> {
        result.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl<T: RaftTransport> RaftNetwork<TypeConfig> for Connection<T> {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, Node, RaftError<NodeId>>> {
        match self.call(RaftRpc::AppendEntries(rpc), &option).await {
            Ok(RaftReply::AppendEntries(r)) => self.remote(r),
            Ok(_) => Err(wrong_kind(self.target)),
            Err(e) => Err(rpc_error(e)),
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, Node, RaftError<NodeId, InstallSnapshotError>>,
    > {
        match self.call(RaftRpc::InstallSnapshot(rpc), &option).await {
            Ok(RaftReply::InstallSnapshot(r)) => self.remote(r),
            Ok(_) => Err(wrong_kind(self.target)),
            Err(e) => Err(rpc_error(e)),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, Node, RaftError<NodeId>>> {
        match self.call(RaftRpc::Vote(rpc), &option).await {
            Ok(RaftReply::Vote(r)) => self.remote(r),
            Ok(_) => Err(wrong_kind(self.target)),
            Err(e) => Err(rpc_error(e)),
        }
    }
}
