//! An in-process [`RaftTransport`] for tests: controllers in one process find each other by
//! id in a [`Router`], which can cut links, isolate a node or split the group in two.
//!
//! A cut link drops both the request and the reply (checked before and after the call), the
//! way a real partition loses packets either way. A node that is not registered (stopped, or
//! not started yet) is unreachable.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::network::{serve, RaftReply, RaftRpc, RaftTransport, TransportError};
use super::types::{ControllerRaft, Node, NodeId};

#[derive(Default)]
struct RouterInner {
    nodes: BTreeMap<NodeId, ControllerRaft>,
    /// Links that drop everything, stored as (low id, high id).
    cut: BTreeSet<(NodeId, NodeId)>,
    /// Nodes cut from every other node.
    isolated: BTreeSet<NodeId>,
}

impl RouterInner {
    fn linked(&self, a: NodeId, b: NodeId) -> bool {
        !self.isolated.contains(&a)
            && !self.isolated.contains(&b)
            && !self.cut.contains(&(a.min(b), a.max(b)))
    }
}

/// The in-process network of a test's controllers.
#[derive(Clone, Default)]
pub struct Router {
    inner: Arc<Mutex<RouterInner>>,
}

impl Router {
    pub fn new() -> Self {
        Self::default()
    }

    /// The transport `source` sends through.
    pub fn transport(&self, source: NodeId) -> RouterTransport {
        RouterTransport {
            source,
            router: self.clone(),
        }
    }

    /// Makes a node reachable.
    pub fn add(&self, id: NodeId, raft: ControllerRaft) {
        self.inner.lock().nodes.insert(id, raft);
    }

    /// Makes a node unreachable (it stopped).
    pub fn remove(&self, id: NodeId) {
        self.inner.lock().nodes.remove(&id);
    }

    /// Cuts `id` from every other node.
    pub fn isolate(&self, id: NodeId) {
        self.inner.lock().isolated.insert(id);
    }

    /// Cuts every link between a node of `left` and a node of `right`.
    pub fn partition(&self, left: &[NodeId], right: &[NodeId]) {
        let mut inner = self.inner.lock();
        for a in left {
            for b in right {
                inner.cut.insert(((*a).min(*b), (*a).max(*b)));
            }
        }
    }

    /// Restores every link.
    pub fn heal(&self) {
        let mut inner = self.inner.lock();
        inner.cut.clear();
        inner.isolated.clear();
    }

    fn peer(&self, source: NodeId, target: NodeId) -> Result<ControllerRaft, TransportError> {
        let inner = self.inner.lock();
        if !inner.linked(source, target) {
            return Err(TransportError::Unreachable(target, "link cut".into()));
        }
        inner
            .nodes
            .get(&target)
            .cloned()
            .ok_or_else(|| TransportError::Unreachable(target, "not running".into()))
    }
}

/// One node's side of the [`Router`].
pub struct RouterTransport {
    source: NodeId,
    router: Router,
}

impl RaftTransport for RouterTransport {
    async fn call(
        &self,
        target: NodeId,
        _node: &Node,
        rpc: RaftRpc,
        timeout: Duration,
    ) -> Result<RaftReply, TransportError> {
        let raft = self.router.peer(self.source, target)?;
        let reply = tokio::time::timeout(timeout, serve(&raft, rpc))
            .await
            .map_err(|_| TransportError::Network(target, "timed out".into()))?;
        // The reply crosses the link again.
        self.router.peer(self.source, target)?;
        Ok(reply)
    }
}
