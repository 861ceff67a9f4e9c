//! Dispatch of requests to processors by request code.

use std::collections::HashMap;
use std::sync::Arc;

use crate::connection::{Connection, Reply, RequestHandler};
use crate::error::RemotingError;
use rocketpy_protocol::code::response;
use rocketpy_protocol::ProtocolError;
use rocketpy_protocol::RemotingCommand;

/// A failed request, answered with `code` and `remark`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessError {
    /// Response code sent back.
    pub code: i32,
    /// Why, for the remark.
    pub remark: String,
}

impl ProcessError {
    /// An error answered with `code`.
    pub fn new(code: i32, remark: impl Into<String>) -> Self {
        ProcessError {
            code,
            remark: remark.into(),
        }
    }

    /// The response that carries this error back to the requester.
    pub fn into_response(self, request: &RemotingCommand) -> RemotingCommand {
        RemotingCommand::response_to(request, self.code).with_remark(self.remark)
    }
}

impl From<ProtocolError> for ProcessError {
    /// Header and body decoding errors are SYSTEM_ERROR with the reason as remark, as in
    /// RocketMQ (whose remark for a missing field is "the custom field <x> is null").
    fn from(e: ProtocolError) -> Self {
        ProcessError::new(response::SYSTEM_ERROR, e.to_string())
    }
}

impl From<RemotingError> for ProcessError {
    /// Transport errors of a request the processor made itself; SYSTEM_ERROR as above.
    fn from(e: RemotingError) -> Self {
        ProcessError::new(response::SYSTEM_ERROR, e.to_string())
    }
}

/// Result of a processor.
pub type ProcessResult = std::result::Result<Reply, ProcessError>;

/// Handles the requests of some codes.
pub trait RequestProcessor: Send + Sync + 'static {
    /// Handles `request`; an error becomes a response with its code and remark.
    fn process(&self, conn: &Arc<Connection>, request: &RemotingCommand) -> ProcessResult;
}

impl<F> RequestProcessor for F
where
    F: Fn(&Arc<Connection>, &RemotingCommand) -> ProcessResult + Send + Sync + 'static,
{
    fn process(&self, conn: &Arc<Connection>, request: &RemotingCommand) -> ProcessResult {
        self(conn, request)
    }
}

/// Called when a connection closes (e.g. a broker's channel to the name server).
pub type CloseListener = Arc<dyn Fn(&Arc<Connection>) + Send + Sync>;

/// How a request ended, for [`RequestObserver`] (RocketMQ 5.x's `result` label values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestOutcome {
    /// Answered (whatever the response code).
    Success,
    /// A oneway request: nothing is sent back.
    Oneway,
    /// The processor failed; the response carries its error code.
    Failed,
}

/// One handled request, as an observer sees it.
#[derive(Debug, Clone, Copy)]
pub struct RequestRecord {
    /// The request code.
    pub request_code: i32,
    /// The response code (0 for oneway requests and held requests that end unanswered).
    pub response_code: i32,
    /// Whether the answer came later (held pulls, flush waits) rather than at once.
    pub held: bool,
    /// How it ended.
    pub outcome: RequestOutcome,
    /// From receipt to the response being ready.
    pub elapsed: std::time::Duration,
}

/// Told about every handled request (metrics). Called on the connection's task: it must be
/// cheap and must not block.
pub trait RequestObserver: Send + Sync + 'static {
    /// One request ended.
    fn observe(&self, record: RequestRecord);
}

/// Decides, before its processor runs, whether a request may be served (ACL): `Err` is the
/// refusal sent instead.
pub trait RequestGuard: Send + Sync + 'static {
    /// Checks one request.
    fn check(&self, conn: &Arc<Connection>, request: &RemotingCommand) -> Result<(), ProcessError>;
}

/// Request code -> processor, plus a close listener.
#[derive(Default, Clone)]
pub struct ProcessorTable {
    processors: HashMap<i32, Arc<dyn RequestProcessor>>,
    on_close: Option<CloseListener>,
    observer: Option<Arc<dyn RequestObserver>>,
    guard: Option<Arc<dyn RequestGuard>>,
}

impl ProcessorTable {
    /// An empty table: every request is answered REQUEST_CODE_NOT_SUPPORTED.
    pub fn new() -> Self {
        Self::default()
    }

    /// Routes `code` to `processor`.
    pub fn register(&mut self, code: i32, processor: Arc<dyn RequestProcessor>) -> &mut Self {
        self.processors.insert(code, processor);
        self
    }

    /// Routes each of `codes` to `processor`.
    pub fn register_all(
        &mut self,
        codes: &[i32],
        processor: Arc<dyn RequestProcessor>,
    ) -> &mut Self {
        for code in codes {
            self.processors.insert(*code, processor.clone());
        }
        self
    }

    /// The codes with a processor (sorted): what the server serves.
    pub fn codes(&self) -> Vec<i32> {
        let mut codes: Vec<i32> = self.processors.keys().copied().collect();
        codes.sort_unstable();
        codes
    }

    /// Sets the listener told about closed connections.
    pub fn on_close(&mut self, listener: CloseListener) -> &mut Self {
        self.on_close = Some(listener);
        self
    }

    /// Sets the guard every request with a known code passes first (an unknown code is
    /// answered REQUEST_CODE_NOT_SUPPORTED without it, as RocketMQ answers it).
    pub fn guard(&mut self, guard: Arc<dyn RequestGuard>) -> &mut Self {
        self.guard = Some(guard);
        self
    }

    /// Sets the observer told about every handled request; with none, nothing is timed.
    pub fn observe(&mut self, observer: Arc<dyn RequestObserver>) -> &mut Self {
        self.observer = Some(observer);
        self
    }

    fn dispatch(&self, conn: &Arc<Connection>, request: &RemotingCommand) -> (Reply, bool) {
        let Some(processor) = self.processors.get(&request.code) else {
            tracing::debug!(code = request.code, peer = %conn.peer(), "request code not supported");
            let remark = format!(" request type {} not supported", request.code);
            return (
                Reply::Now(Some(
                    ProcessError::new(response::REQUEST_CODE_NOT_SUPPORTED, remark)
                        .into_response(request),
                )),
                false,
            );
        };
        if let Some(guard) = &self.guard {
            if let Err(e) = guard.check(conn, request) {
                tracing::debug!(code = request.code, peer = %conn.peer(), remark = %e.remark, "request refused");
                return (Reply::Now(Some(e.into_response(request))), false);
            }
        }
        match processor.process(conn, request) {
            Ok(reply) => (reply, true),
            Err(e) => {
                tracing::debug!(code = request.code, peer = %conn.peer(), remark = %e.remark, "request failed");
                (Reply::Now(Some(e.into_response(request))), false)
            }
        }
    }
}

/// A request being timed: what its record needs of it, so a held answer does not keep the
/// request (and its body) alive until it is sent.
struct Timing {
    request_code: i32,
    oneway: bool,
    started: std::time::Instant,
}

impl Timing {
    fn record(&self, response: Option<&RemotingCommand>, ok: bool, held: bool) -> RequestRecord {
        let outcome = if self.oneway {
            RequestOutcome::Oneway
        } else if ok {
            RequestOutcome::Success
        } else {
            RequestOutcome::Failed
        };
        RequestRecord {
            request_code: self.request_code,
            response_code: response.map_or(0, |r| r.code),
            held,
            outcome,
            elapsed: self.started.elapsed(),
        }
    }
}

impl RequestHandler for ProcessorTable {
    fn handle(&self, conn: &Arc<Connection>, request: RemotingCommand) -> Reply {
        let Some(observer) = &self.observer else {
            return self.dispatch(conn, &request).0;
        };
        let timing = Timing {
            request_code: request.code,
            oneway: request.is_oneway(),
            started: std::time::Instant::now(),
        };
        match self.dispatch(conn, &request) {
            (Reply::Now(response), ok) => {
                observer.observe(timing.record(response.as_ref(), ok, false));
                Reply::Now(response)
            }
            (Reply::Later(future), ok) => {
                drop(request);
                let observer = observer.clone();
                Reply::Later(Box::pin(async move {
                    let response = future.await;
                    observer.observe(timing.record(response.as_ref(), ok, true));
                    response
                }))
            }
        }
    }

    fn on_close(&self, conn: &Arc<Connection>) {
        if let Some(listener) = &self.on_close {
            listener(conn);
        }
    }
}
