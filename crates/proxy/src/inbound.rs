//! Bytes of request bodies one gRPC connection may hold at once. Each call's message is read
//! whole before it is decoded (up to the largest message the proxy takes), so a client that
//! opens many calls and feeds each a large message slowly would make the proxy buffer all of
//! them. Here every request body's bytes count against its connection (known by the peer's
//! address) from the moment they are read until the body is dropped; a call whose bytes
//! would pass the connection's bound ends at once with RESOURCE_EXHAUSTED. With HTTP/2's
//! window (bytes sent but not yet read) and the bound on concurrent calls, this bounds what a
//! connection holds of its requests; answers are bounded by the calls (at most
//! [`crate::server::MAX_CALLS_PER_CONNECTION`]) times one answer (a pop batch).
//!
//! Telemetry streams are not counted: they live as long as the client, their commands are
//! small, and each is bounded by the largest message.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use parking_lot::Mutex;
use tonic::body::Body;
use tonic::transport::server::TcpConnectInfo;

/// Bytes held per connection, by peer address.
#[derive(Debug, Default)]
pub struct Inbound {
    cap: usize,
    held: Mutex<HashMap<SocketAddr, usize>>,
}

impl Inbound {
    /// A budget of `cap` bytes per connection.
    pub fn new(cap: usize) -> Arc<Inbound> {
        Arc::new(Inbound {
            cap,
            held: Mutex::default(),
        })
    }

    /// Counts `n` more bytes for `peer`, unless that passes the bound.
    fn take(&self, peer: SocketAddr, n: usize) -> bool {
        let mut held = self.held.lock();
        let now = held.entry(peer).or_insert(0);
        if *now + n > self.cap {
            return false;
        }
        *now += n;
        true
    }

    /// `n` bytes of `peer` are no longer held.
    fn give(&self, peer: SocketAddr, n: usize) {
        let mut held = self.held.lock();
        if let Some(now) = held.get_mut(&peer) {
            *now = now.saturating_sub(n);
            if *now == 0 {
                held.remove(&peer);
            }
        }
    }

    /// Bytes `peer` holds now (tests).
    pub fn held(&self, peer: SocketAddr) -> usize {
        self.held.lock().get(&peer).copied().unwrap_or(0)
    }
}

/// The layer counting request bodies against [`Inbound`].
#[derive(Debug, Clone)]
pub struct InboundLayer(pub Arc<Inbound>);

impl<S> tower_layer::Layer<S> for InboundLayer {
    type Service = InboundService<S>;

    fn layer(&self, inner: S) -> InboundService<S> {
        InboundService {
            inner,
            budget: self.0.clone(),
        }
    }
}

/// See [`InboundLayer`].
#[derive(Debug, Clone)]
pub struct InboundService<S> {
    inner: S,
    budget: Arc<Inbound>,
}

impl<S> tower_service::Service<http::Request<Body>> for InboundService<S>
where
    S: tower_service::Service<http::Request<Body>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let peer = req
            .extensions()
            .get::<TcpConnectInfo>()
            .and_then(|i| i.remote_addr());
        let telemetry = req.uri().path().ends_with("/Telemetry");
        let Some(peer) = peer.filter(|_| !telemetry) else {
            return self.inner.call(req);
        };
        let (parts, body) = req.into_parts();
        let counted = Counted {
            inner: body,
            peer,
            budget: self.budget.clone(),
            counted: 0,
        };
        self.inner
            .call(http::Request::from_parts(parts, Body::new(counted)))
    }
}

/// A request body whose bytes count against its connection until it is dropped.
struct Counted {
    inner: Body,
    peer: SocketAddr,
    budget: Arc<Inbound>,
    counted: usize,
}

impl http_body::Body for Counted {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        let frame = match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => frame,
            Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => return Poll::Pending,
        };
        if let Some(data) = frame.data_ref() {
            let n = data.len();
            if !self.budget.take(self.peer, n) {
                return Poll::Ready(Some(Err(tonic::Status::resource_exhausted(format!(
                    "this connection's calls hold more than {} bytes of requests",
                    self.budget.cap
                )))));
            }
            self.counted += n;
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.budget.give(self.peer, self.counted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_holds_at_most_its_bound() {
        let b = Inbound::new(100);
        let (a, c): (SocketAddr, SocketAddr) = (
            "127.0.0.1:1".parse().unwrap(),
            "127.0.0.1:2".parse().unwrap(),
        );
        assert!(b.take(a, 60));
        assert!(!b.take(a, 41), "over the bound");
        assert!(b.take(c, 100), "another connection has its own");
        b.give(a, 60);
        assert_eq!(b.held(a), 0);
        assert!(b.take(a, 100));
    }
}
