//! `MessagingService`: each RPC's handler, delegating to the module for its area. Failures
//! the protocol can express are answered with a `Status` in the response, as RocketMQ's
//! proxy answers them; gRPC errors are left for malformed calls.

use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::Stream;
use tonic::{Request, Response, Status as GrpcStatus, Streaming};

use rocketpy_acl::perm::{ANY, PUB, SUB};
use rocketpy_acl::Needs;

use crate::auth::{authorize, on};
use crate::clients::remote::{answer_settings, heartbeat_producers, settings_command};
use crate::context::Context;
use crate::convert::wrap;
use crate::pb::messaging_service_server::MessagingService;
use crate::pb::{self, Code};
use crate::receive_response::{Content, ReceiveMessageResponse};
use crate::state::ProxyInner;
use crate::status::{ok, status, ProxyError};
use crate::{receive, send, transaction};

/// The service over a proxy's state.
pub struct Service {
    inner: Arc<ProxyInner>,
}

impl Service {
    /// The service of `inner`.
    pub fn new(inner: Arc<ProxyInner>) -> Self {
        Service { inner }
    }
}

type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, GrpcStatus>> + Send + 'static>>;

/// A streamed answer whose items are all known: handed out without pausing.
/// (`tokio_stream::iter` pauses every 32 items to share the thread; a receive of 32 has 34
/// items, and the pause split its answer into two DATA frames, two socket writes and two
/// wake-ups of the client.)
struct Known<T>(std::vec::IntoIter<T>);

impl<T> Stream for Known<T>
where
    T: Unpin,
{
    type Item = T;

    fn poll_next(
        self: Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<T>> {
        std::task::Poll::Ready(self.get_mut().0.next())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

/// The stream of `items`.
fn known<T: Send + Unpin + 'static>(items: Vec<Result<T, GrpcStatus>>) -> BoxStream<T> {
    Box::pin(Known(items.into_iter()))
}

/// `Ok(Response)` of a unary call.
fn respond<T>(body: T) -> Result<Response<T>, GrpcStatus> {
    Ok(Response::new(body))
}

/// The context of a call, or the response for a call without one.
macro_rules! context_or {
    ($req:expr, $resp:expr) => {
        match Context::of(&$req) {
            Ok(ctx) => ctx,
            Err(e) => return respond($resp(e.status())),
        }
    };
}

#[tonic::async_trait]
impl MessagingService for Service {
    async fn query_route(
        &self,
        request: Request<pb::QueryRouteRequest>,
    ) -> Result<Response<pb::QueryRouteResponse>, GrpcStatus> {
        let failed = |s| pb::QueryRouteResponse {
            status: Some(s),
            message_queues: Vec::new(),
        };
        let ctx = context_or!(request, failed);
        let local = request.local_addr();
        let req = request.into_inner();
        let Some(topic) = req.topic.filter(|t| !t.name.is_empty()) else {
            return respond(failed(status(Code::IllegalTopic, "topic is missing")));
        };
        authorize(&self.inner, &ctx, "QueryRoute", || {
            on(Some(&wrap(&topic)), ANY, None)
        })?;
        self.inner.clients.touch(&ctx.client_id);
        let endpoints = req
            .endpoints
            .filter(|e| !e.addresses.is_empty())
            .unwrap_or_else(|| own_endpoints(local));
        match self.inner.routes.route(&wrap(&topic)).await {
            Ok(route) => respond(pb::QueryRouteResponse {
                status: Some(ok()),
                message_queues: route.message_queues(&topic, &endpoints),
            }),
            Err(e) => respond(failed(e.status())),
        }
    }

    async fn heartbeat(
        &self,
        request: Request<pb::HeartbeatRequest>,
    ) -> Result<Response<pb::HeartbeatResponse>, GrpcStatus> {
        let failed = |s| pb::HeartbeatResponse { status: Some(s) };
        let ctx = context_or!(request, failed);
        let group = request.get_ref().group.as_ref().map(wrap);
        authorize(&self.inner, &ctx, "Heartbeat", || {
            on(None, SUB, group.as_deref())
        })?;
        if self.inner.clients.touch(&ctx.client_id) {
            respond(pb::HeartbeatResponse { status: Some(ok()) })
        } else {
            respond(failed(status(
                Code::UnrecognizedClientType,
                "the client sent no settings yet",
            )))
        }
    }

    async fn send_message(
        &self,
        request: Request<pb::SendMessageRequest>,
    ) -> Result<Response<pb::SendMessageResponse>, GrpcStatus> {
        let failed = |s| pb::SendMessageResponse {
            status: Some(s),
            entries: Vec::new(),
        };
        let ctx = context_or!(request, failed);
        authorize(&self.inner, &ctx, "SendMessage", || {
            let mut needed = Needs::default();
            for m in &request.get_ref().messages {
                if let Some(t) = &m.topic {
                    needed.topic(&wrap(t), PUB);
                }
            }
            needed.resources.sort_unstable();
            needed.resources.dedup();
            needed
        })?;
        self.inner.clients.touch(&ctx.client_id);
        respond(send::send_message(&self.inner, &ctx, request.into_inner()).await)
    }

    async fn query_assignment(
        &self,
        request: Request<pb::QueryAssignmentRequest>,
    ) -> Result<Response<pb::QueryAssignmentResponse>, GrpcStatus> {
        let failed = |s| pb::QueryAssignmentResponse {
            status: Some(s),
            assignments: Vec::new(),
        };
        let ctx = context_or!(request, failed);
        let r = request.get_ref();
        authorize(&self.inner, &ctx, "QueryAssignment", || {
            on_resources(r.topic.as_ref(), SUB, r.group.as_ref())
        })?;
        respond(receive::query_assignment(&self.inner, request.into_inner()).await)
    }

    type ReceiveMessageStream = BoxStream<ReceiveMessageResponse>;

    async fn receive_message(
        &self,
        request: Request<pb::ReceiveMessageRequest>,
    ) -> Result<Response<Self::ReceiveMessageStream>, GrpcStatus> {
        let status_only = |s: pb::Status| -> Self::ReceiveMessageStream {
            let items = vec![
                Ok(ReceiveMessageResponse {
                    content: Some(Content::Status(s)),
                }),
                Ok(receive::delivery_timestamp(self.inner.now_millis())),
            ];
            known(items)
        };
        let ctx = match Context::of(&request) {
            Ok(ctx) => ctx,
            Err(e) => return Ok(Response::new(status_only(e.status()))),
        };
        let r = request.get_ref();
        let topic = r.message_queue.as_ref().and_then(|q| q.topic.as_ref());
        authorize(&self.inner, &ctx, "ReceiveMessage", || {
            on_resources(topic, SUB, r.group.as_ref())
        })?;
        self.inner.clients.touch(&ctx.client_id);
        let received = receive::receive(&self.inner, &ctx, request.into_inner()).await;
        let mut items = Vec::with_capacity(received.messages.len() + 2);
        items.push(Ok(ReceiveMessageResponse {
            content: Some(Content::Status(received.status)),
        }));
        items.extend(received.messages.into_iter().map(|m| {
            Ok(ReceiveMessageResponse {
                content: Some(Content::Message(m)),
            })
        }));
        items.push(Ok(receive::delivery_timestamp(self.inner.now_millis())));
        Ok(Response::new(known(items)))
    }

    async fn ack_message(
        &self,
        request: Request<crate::ack_wire::AckMessageRequest>,
    ) -> Result<Response<crate::ack_wire::AckMessageResponse>, GrpcStatus> {
        let failed = |s| crate::ack_wire::AckMessageResponse {
            status: Some(s),
            entries: Vec::new(),
        };
        let ctx = context_or!(request, failed);
        let r = request.get_ref();
        authorize(&self.inner, &ctx, "AckMessage", || {
            on_resources(r.topic.as_ref(), SUB, r.group.as_ref())
        })?;
        self.inner.clients.touch(&ctx.client_id);
        respond(crate::ack::ack(&self.inner, &ctx, request.into_inner()).await)
    }

    async fn forward_message_to_dead_letter_queue(
        &self,
        request: Request<pb::ForwardMessageToDeadLetterQueueRequest>,
    ) -> Result<Response<pb::ForwardMessageToDeadLetterQueueResponse>, GrpcStatus> {
        let failed = |s| pb::ForwardMessageToDeadLetterQueueResponse { status: Some(s) };
        let ctx = context_or!(request, failed);
        let r = request.get_ref();
        authorize(&self.inner, &ctx, "ForwardMessageToDeadLetterQueue", || {
            on_resources(r.topic.as_ref(), SUB, r.group.as_ref())
        })?;
        respond(receive::forward_dlq(&self.inner, &ctx, request.into_inner()).await)
    }

    type PullMessageStream = BoxStream<pb::PullMessageResponse>;

    async fn pull_message(
        &self,
        _request: Request<pb::PullMessageRequest>,
    ) -> Result<Response<Self::PullMessageStream>, GrpcStatus> {
        let item = Ok(pb::PullMessageResponse {
            content: Some(pb::pull_message_response::Content::Status(unsupported(
                "PullMessage",
            ))),
        });
        Ok(Response::new(known(vec![item])))
    }

    async fn update_offset(
        &self,
        _request: Request<pb::UpdateOffsetRequest>,
    ) -> Result<Response<pb::UpdateOffsetResponse>, GrpcStatus> {
        respond(pb::UpdateOffsetResponse {
            status: Some(unsupported("UpdateOffset")),
        })
    }

    async fn get_offset(
        &self,
        _request: Request<pb::GetOffsetRequest>,
    ) -> Result<Response<pb::GetOffsetResponse>, GrpcStatus> {
        respond(pb::GetOffsetResponse {
            status: Some(unsupported("GetOffset")),
            offset: 0,
        })
    }

    async fn query_offset(
        &self,
        _request: Request<pb::QueryOffsetRequest>,
    ) -> Result<Response<pb::QueryOffsetResponse>, GrpcStatus> {
        respond(pb::QueryOffsetResponse {
            status: Some(unsupported("QueryOffset")),
            offset: 0,
        })
    }

    async fn end_transaction(
        &self,
        request: Request<pb::EndTransactionRequest>,
    ) -> Result<Response<pb::EndTransactionResponse>, GrpcStatus> {
        let failed = |s| pb::EndTransactionResponse { status: Some(s) };
        let ctx = context_or!(request, failed);
        let r = request.get_ref();
        authorize(&self.inner, &ctx, "EndTransaction", || {
            on_resources(r.topic.as_ref(), PUB, None)
        })?;
        self.inner.clients.touch(&ctx.client_id);
        respond(transaction::end_transaction(&self.inner, request.into_inner()).await)
    }

    type TelemetryStream = ReceiverStream<Result<pb::TelemetryCommand, GrpcStatus>>;

    async fn telemetry(
        &self,
        request: Request<Streaming<pb::TelemetryCommand>>,
    ) -> Result<Response<Self::TelemetryStream>, GrpcStatus> {
        let ctx = Context::of(&request).map_err(|e| GrpcStatus::invalid_argument(e.message))?;
        // The stream opens on a valid signature; each settings command is checked for the
        // rights it declares.
        authorize(&self.inner, &ctx, "Telemetry", Needs::default)?;
        let (tx, rx) = mpsc::channel(64);
        let mut inbound = request.into_inner();
        let proxy = self.inner.clone();
        tokio::spawn(async move {
            while let Ok(Some(command)) = inbound.message().await {
                let Some(pb::telemetry_command::Command::Settings(settings)) = command.command
                else {
                    continue; // thread stack traces, verify results: nothing to do with them
                };
                if let Err(refused) =
                    authorize(&proxy, &ctx, "Telemetry", || settings_needs(&settings))
                {
                    let _ = tx.send(Err(refused)).await;
                    break;
                }
                match answer_settings(&proxy, settings).await {
                    Ok(answer) => {
                        let publishes =
                            matches!(answer.pub_sub, Some(pb::settings::PubSub::Publishing(_)));
                        proxy.clients.put(
                            &ctx.client_id,
                            &ctx.namespace,
                            answer.clone(),
                            Some(tx.clone()),
                        );
                        if tx.send(Ok(settings_command(answer))).await.is_err() {
                            break;
                        }
                        if publishes {
                            let p = proxy.clone();
                            tokio::spawn(async move { heartbeat_producers(&p).await });
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(GrpcStatus::invalid_argument(e.message))).await;
                        break;
                    }
                }
            }
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn notify_client_termination(
        &self,
        request: Request<pb::NotifyClientTerminationRequest>,
    ) -> Result<Response<pb::NotifyClientTerminationResponse>, GrpcStatus> {
        let failed = |s| pb::NotifyClientTerminationResponse { status: Some(s) };
        let ctx = context_or!(request, failed);
        let group = request.get_ref().group.as_ref().map(wrap);
        authorize(&self.inner, &ctx, "NotifyClientTermination", || {
            on(None, SUB, group.as_deref())
        })?;
        self.inner.clients.remove(&ctx.client_id);
        self.inner.renewals.forget_client(&ctx.client_id);
        respond(pb::NotifyClientTerminationResponse { status: Some(ok()) })
    }

    async fn change_invisible_duration(
        &self,
        request: Request<pb::ChangeInvisibleDurationRequest>,
    ) -> Result<Response<pb::ChangeInvisibleDurationResponse>, GrpcStatus> {
        let failed = |s| pb::ChangeInvisibleDurationResponse {
            status: Some(s),
            receipt_handle: String::new(),
        };
        let ctx = context_or!(request, failed);
        let r = request.get_ref();
        authorize(&self.inner, &ctx, "ChangeInvisibleDuration", || {
            on_resources(r.topic.as_ref(), SUB, r.group.as_ref())
        })?;
        self.inner.clients.touch(&ctx.client_id);
        respond(receive::change_invisible(&self.inner, &ctx, request.into_inner()).await)
    }

    async fn recall_message(
        &self,
        _request: Request<pb::RecallMessageRequest>,
    ) -> Result<Response<pb::RecallMessageResponse>, GrpcStatus> {
        respond(pb::RecallMessageResponse {
            status: Some(unsupported("RecallMessage")),
            message_id: String::new(),
        })
    }

    async fn sync_lite_subscription(
        &self,
        _request: Request<pb::SyncLiteSubscriptionRequest>,
    ) -> Result<Response<pb::SyncLiteSubscriptionResponse>, GrpcStatus> {
        respond(pb::SyncLiteSubscriptionResponse {
            status: Some(unsupported("SyncLiteSubscription")),
        })
    }
}

/// `right` on a call's topic and SUB on its group, with their namespaces.
fn on_resources(topic: Option<&pb::Resource>, right: u8, group: Option<&pb::Resource>) -> Needs {
    let (topic, group) = (topic.map(wrap), group.map(wrap));
    on(topic.as_deref(), right, group.as_deref())
}

/// The rights a client's settings declare: PUB on each topic it publishes to; SUB on its
/// group and each topic it subscribes.
fn settings_needs(settings: &pb::Settings) -> Needs {
    let mut needed = Needs::default();
    match &settings.pub_sub {
        Some(pb::settings::PubSub::Publishing(p)) => {
            for t in &p.topics {
                needed.topic(&wrap(t), PUB);
            }
        }
        Some(pb::settings::PubSub::Subscription(s)) => {
            let group = s.group.as_ref().map(wrap);
            if let Some(g) = &group {
                needed.group(g);
            }
            for e in &s.subscriptions {
                if let Some(t) = &e.topic {
                    needed.topic_of(&wrap(t), SUB, group.as_deref());
                }
            }
        }
        None => {}
    }
    needed.resources.sort_unstable();
    needed.resources.dedup();
    needed
}

fn unsupported(what: &str) -> pb::Status {
    ProxyError::new(
        Code::NotImplemented,
        format!("{what} is not supported by this proxy"),
    )
    .status()
}

/// The proxy's own address as endpoints, for a QueryRoute that names none.
fn own_endpoints(local: Option<std::net::SocketAddr>) -> pb::Endpoints {
    let addr = local.unwrap_or_else(|| std::net::SocketAddr::from(([127, 0, 0, 1], 8081)));
    pb::Endpoints {
        scheme: if addr.is_ipv4() {
            pb::AddressScheme::IPv4
        } else {
            pb::AddressScheme::IPv6
        } as i32,
        addresses: vec![pb::Address {
            host: addr.ip().to_string(),
            port: i32::from(addr.port()),
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_answer_is_handed_out_without_pausing() {
        // 34 items: a receive of 32 with its status and delivery timestamp. Every poll is
        // ready, so the encoder puts them in one DATA frame.
        let items: Vec<Result<u32, GrpcStatus>> = (0..34).map(Ok).collect();
        let mut stream = known(items);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        for i in 0..34 {
            match stream.as_mut().poll_next(&mut cx) {
                std::task::Poll::Ready(Some(Ok(n))) => assert_eq!(n, i),
                other => panic!("item {i}: {other:?}"),
            }
        }
        assert!(matches!(
            stream.as_mut().poll_next(&mut cx),
            std::task::Poll::Ready(None)
        ));
    }
}
