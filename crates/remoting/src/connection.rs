//! One connection (TCP, or TLS on TCP: [`Stream`]), used the same way by servers and
//! clients: a reader task that decodes
//! frames and either completes a pending request (responses) or hands the frame to a
//! [`RequestHandler`] (requests), and a writer task that drains a queue of frames.
//!
//! Sending: when nothing is queued and nobody is writing, the sender writes the frame to the
//! socket itself without blocking (`try_write`), saving a task wake-up per request and per
//! answer; otherwise, or for what the socket did not take, the frame goes through the queue.
//! TLS connections always go through the queue (a record must be sealed before it is sent).
//!
//! Invariants: a pending request is removed from the table exactly once (by its response,
//! its timeout, or the connection closing); once closed, a connection never sends again;
//! frames are never interleaved, and a frame queued (or partly written) before another one
//! is sent is written before it: `queued` counts frames not yet fully written by the writer
//! task (decremented under the writer lock), and a direct write happens only when it is 0
//! and the leftover of an earlier partial direct write is empty.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufWriter};
use tokio::sync::{mpsc, oneshot, watch};

use crate::budget::{Budget, Marks, Reservation};
use crate::error::{RemotingError, Result};
use crate::stream::{ReadSide, Stream, WriteSide};
use rocketpy_protocol::frame;
use rocketpy_protocol::RemotingCommand;

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// How a handler answers a request.
pub enum Reply {
    /// Answered while the reader waited: requests of one connection are handled in order.
    Now(Option<RemotingCommand>),
    /// Answered later (long polling, flush waits); the reader goes on with the next frame.
    Later(BoxFuture<Option<RemotingCommand>>),
}

/// Receives the requests arriving on a connection.
pub trait RequestHandler: Send + Sync + 'static {
    /// Handles one request; `None` means no response (oneway requests get none anyway).
    fn handle(&self, conn: &Arc<Connection>, request: RemotingCommand) -> Reply;

    /// Called once when the connection has closed.
    fn on_close(&self, _conn: &Arc<Connection>) {}
}

/// Limits of one connection.
#[derive(Debug, Clone)]
pub struct ConnectionConfig {
    /// Close the connection after this long with no frame received, or with answers the peer
    /// does not read (`None` = never).
    pub idle_timeout: Option<Duration>,
    /// Frames queued for writing before senders wait.
    pub write_queue: usize,
    /// Bytes of answers and held requests before the connection stops reading requests
    /// ([`crate::budget`]).
    pub marks: Marks,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            idle_timeout: None,
            write_queue: 4096,
            marks: Marks::default(),
        }
    }
}

static NEXT_CONNECTION_ID: AtomicU64 = AtomicU64::new(1);

/// A live connection; cheap to share as `Arc<Connection>`.
pub struct Connection {
    id: u64,
    peer: SocketAddr,
    /// Whether frames may be written from the sender's task (plain TCP only).
    direct: bool,
    tls: bool,
    in_process: bool,
    tx: mpsc::Sender<Bytes>,
    writer: tokio::sync::Mutex<Writer>,
    queued: std::sync::atomic::AtomicUsize,
    pending: Mutex<HashMap<i32, oneshot::Sender<RemotingCommand>>>,
    closed: AtomicBool,
    closed_signal: watch::Sender<bool>,
    /// Set by a draining server: read no more requests, finish the ones in flight, close.
    draining: watch::Sender<bool>,
    /// Requests being answered later (long polls, flush waits).
    in_flight: std::sync::atomic::AtomicUsize,
    /// Bytes owed to the peer and held for it.
    budget: Arc<Budget>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("id", &self.id)
            .field("peer", &self.peer)
            .finish()
    }
}

impl Connection {
    /// Starts the reader and writer tasks of `stream` on the current tokio runtime.
    pub fn spawn(
        stream: impl Into<Stream>,
        handler: Arc<dyn RequestHandler>,
        config: ConnectionConfig,
    ) -> Result<Arc<Connection>> {
        let stream = stream.into();
        let peer = stream.peer_addr()?;
        if let Some(tcp) = stream.tcp() {
            let _ = tcp.set_nodelay(true);
        }
        let tls = stream.is_tls();
        let in_process = stream.is_in_process();
        let direct = stream.writes_directly();
        let (read, write) = stream.split();
        let (tx, rx) = mpsc::channel(config.write_queue.max(1));
        let writer = Writer {
            out: BufWriter::with_capacity(64 * 1024, write),
            leftover: Bytes::new(),
        };
        let conn = Arc::new(Connection {
            id: NEXT_CONNECTION_ID.fetch_add(1, Ordering::Relaxed),
            peer,
            direct,
            tls,
            in_process,
            tx,
            writer: tokio::sync::Mutex::new(writer),
            queued: std::sync::atomic::AtomicUsize::new(0),
            pending: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
            closed_signal: watch::Sender::new(false),
            draining: watch::Sender::new(false),
            in_flight: std::sync::atomic::AtomicUsize::new(0),
            budget: Arc::new(Budget::new(config.marks)),
        });
        tokio::spawn(write_loop(conn.clone(), rx));
        tokio::spawn(read_loop(conn.clone(), read, handler, config));
        Ok(conn)
    }

    /// Unique id of this connection within the process.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The remote address.
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// Whether the connection is TLS.
    pub fn is_tls(&self) -> bool {
        self.tls
    }

    /// Whether the connection is an in-process pipe: a client in this process (a broker's
    /// own gRPC proxy, which decides its calls with the caller's account at its own door).
    pub fn is_in_process(&self) -> bool {
        self.in_process
    }

    /// Whether the connection has closed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Stops reading requests; the connection closes once those in flight are answered.
    pub fn drain(&self) {
        self.draining.send_replace(true);
    }

    /// Closes the connection: pending requests fail, both tasks stop.
    pub fn close(&self) {
        if !self.closed.swap(true, Ordering::AcqRel) {
            self.pending_table().clear();
            self.closed_signal.send_replace(true);
            self.budget.close();
        }
    }

    /// Bytes of answers queued for the peer and not yet taken by the socket, with the
    /// reservations of answers being read.
    pub fn owed_bytes(&self) -> usize {
        self.budget.owed()
    }

    /// Waits for room for an answer of about `bytes` before reading it (from the store): a
    /// request answered later (a long poll) calls this before it builds its answer and keeps
    /// the reservation until it returns the answer ([`crate::budget`]).
    pub async fn reserve(&self, bytes: usize) -> Reservation {
        self.budget.reserve(bytes).await
    }

    fn pending_table(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<i32, oneshot::Sender<RemotingCommand>>> {
        // A poisoned lock only means another thread panicked mid-insert; the map is still valid.
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes an encoded frame, or queues it for the writer task.
    pub async fn send_frame(&self, frame: Bytes) -> Result<()> {
        if self.is_closed() {
            return Err(RemotingError::ConnectionClosed(self.peer.to_string()));
        }
        let frame = match self.try_write_direct(frame) {
            Direct::Done => return Ok(()),
            Direct::Failed => {
                self.close();
                return Err(RemotingError::ConnectionClosed(self.peer.to_string()));
            }
            Direct::Queue(frame) => frame,
        };
        let len = frame.len();
        self.budget.charge(len);
        self.queued.fetch_add(1, Ordering::AcqRel);
        self.tx.send(frame).await.map_err(|_| {
            self.queued.fetch_sub(1, Ordering::AcqRel);
            self.budget.release(len);
            RemotingError::ConnectionClosed(self.peer.to_string())
        })
    }

    /// Writes `frame` from the caller when the socket is free (see the module docs); never
    /// waits, so it is safe to cancel the caller at any point.
    fn try_write_direct(&self, frame: Bytes) -> Direct {
        if !self.direct || self.queued.load(Ordering::Acquire) != 0 {
            return Direct::Queue(frame);
        }
        let Ok(mut w) = self.writer.try_lock() else {
            return Direct::Queue(frame);
        };
        if self.queued.load(Ordering::Acquire) != 0
            || !w.leftover.is_empty()
            || !w.out.buffer().is_empty()
        {
            return Direct::Queue(frame);
        }
        let mut written = 0;
        while written < frame.len() {
            let Some(outcome) = w.out.get_ref().try_write(&frame[written..]) else {
                break; // not a plain socket (`direct` said so already)
            };
            match outcome {
                Ok(0) => return Direct::Failed,
                Ok(n) => written += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return Direct::Failed,
            }
        }
        if written < frame.len() {
            // The socket is full: the writer task finishes this frame before any other.
            w.leftover = frame.slice(written..);
            self.budget.charge(w.leftover.len());
            self.queued.fetch_add(1, Ordering::AcqRel);
            if self.tx.try_send(Bytes::new()).is_err() {
                // The queue is full, so the writer task has work and will see the leftover.
                self.queued.fetch_sub(1, Ordering::AcqRel);
            }
        }
        Direct::Done
    }

    /// Sends a command without waiting for an answer.
    pub async fn send(&self, cmd: &RemotingCommand) -> Result<()> {
        self.send_frame(frame::encode_to_bytes(cmd)?).await
    }

    /// Sends a request and waits up to `timeout` for the response with the same opaque.
    pub async fn invoke(&self, cmd: RemotingCommand, timeout: Duration) -> Result<RemotingCommand> {
        let frame = frame::encode_to_bytes(&cmd)?;
        let (done, wait) = oneshot::channel();
        self.pending_table().insert(cmd.opaque, done);
        // Re-check after inserting: close() may have cleared the table just before.
        if self.is_closed() {
            self.pending_table().remove(&cmd.opaque);
            return Err(RemotingError::ConnectionClosed(self.peer.to_string()));
        }
        let outcome = tokio::time::timeout(timeout, async {
            self.send_frame(frame).await?;
            wait.await
                .map_err(|_| RemotingError::ConnectionClosed(self.peer.to_string()))
        })
        .await;
        match outcome {
            Ok(result) => {
                if result.is_err() {
                    self.pending_table().remove(&cmd.opaque);
                }
                result
            }
            Err(_) => {
                self.pending_table().remove(&cmd.opaque);
                Err(RemotingError::Timeout {
                    addr: self.peer.to_string(),
                    millis: timeout.as_millis() as u64,
                })
            }
        }
    }

    fn complete(&self, response: RemotingCommand) {
        let waiter = self.pending_table().remove(&response.opaque);
        match waiter {
            Some(done) => {
                let _ = done.send(response);
            }
            None => tracing::debug!(
                peer = %self.peer,
                opaque = response.opaque,
                "response for an unknown or timed-out request dropped"
            ),
        }
    }
}

/// The socket's write half and what a direct write could not finish.
struct Writer {
    out: BufWriter<WriteSide>,
    leftover: Bytes,
}

enum Direct {
    Done,
    Failed,
    Queue(Bytes),
}

async fn write_loop(conn: Arc<Connection>, mut rx: mpsc::Receiver<Bytes>) {
    let mut closed = conn.closed_signal.subscribe();
    loop {
        let frame = tokio::select! {
            frame = rx.recv() => frame,
            _ = closed.wait_for(|c| *c) => None,
        };
        let Some(frame) = frame else { break };
        let mut w = conn.writer.lock().await;
        let leftover = std::mem::take(&mut w.leftover);
        let mut taken = 1;
        let mut bytes = leftover.len() + frame.len();
        let mut ok =
            w.out.write_all(&leftover).await.is_ok() && w.out.write_all(&frame).await.is_ok();
        // Batch whatever is already queued into the same flush.
        while ok {
            let Ok(more) = rx.try_recv() else { break };
            taken += 1;
            bytes += more.len();
            ok = w.out.write_all(&more).await.is_ok();
        }
        ok = ok && w.out.flush().await.is_ok();
        // Under the lock: a direct write may start only after these frames are out.
        conn.queued.fetch_sub(taken, Ordering::AcqRel);
        conn.budget.release(bytes);
        drop(w);
        if !ok || conn.is_closed() {
            break;
        }
    }
    let _ = conn.writer.lock().await.out.shutdown().await;
    conn.close();
}

async fn read_loop(
    conn: Arc<Connection>,
    mut read: ReadSide,
    handler: Arc<dyn RequestHandler>,
    config: ConnectionConfig,
) {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut closed = conn.closed_signal.subscribe();
    let mut draining = conn.draining.subscribe();
    let mut drained = false;
    'outer: loop {
        let read_once = read.read_buf(&mut buf);
        let n = tokio::select! {
            n = async {
                match config.idle_timeout {
                    Some(idle) => tokio::time::timeout(idle, read_once).await.unwrap_or_else(|_| {
                        tracing::info!(peer = %conn.peer, "closing idle connection");
                        Ok(0)
                    }),
                    None => read_once.await,
                }
            } => n,
            _ = closed.wait_for(|c| *c) => Ok(0),
            _ = draining.wait_for(|d| *d) => {
                drained = true;
                Ok(0)
            }
        };
        match n {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let received_at = std::time::Instant::now();
        loop {
            let before = buf.len();
            match frame::decode(&mut buf) {
                Ok(Some(cmd)) if cmd.is_response() => conn.complete(cmd),
                Ok(Some(mut cmd)) => {
                    // A peer that reads no answers gets no more of them: requests wait here
                    // until the socket has taken what it owes (or the peer is dropped).
                    if !conn.budget.wait_for_room(config.idle_timeout).await {
                        tracing::info!(peer = %conn.peer, owed = conn.budget.owed(), held = conn.budget.held(), "closing a connection that reads no answers");
                        break 'outer;
                    }
                    cmd.received_at = Some(received_at);
                    dispatch(&conn, &handler, cmd, before - buf.len()).await
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(peer = %conn.peer, error = %e, "closing connection on bad frame");
                    break 'outer;
                }
            }
            if conn.is_closed() {
                break 'outer;
            }
        }
    }
    if drained {
        // Answers still being prepared go out before the socket closes.
        while conn.in_flight.load(Ordering::Acquire) > 0 && !conn.is_closed() {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }
    conn.close();
    handler.on_close(&conn);
}

/// Hands a request of `frame_len` bytes to the handler; one answered later counts as held
/// until its answer is queued.
async fn dispatch(
    conn: &Arc<Connection>,
    handler: &Arc<dyn RequestHandler>,
    request: RemotingCommand,
    frame_len: usize,
) {
    let oneway = request.is_oneway();
    match handler.handle(conn, request) {
        Reply::Now(response) => {
            if let (Some(response), false) = (response, oneway) {
                send_response(conn, response).await;
            }
        }
        Reply::Later(future) => {
            let conn = conn.clone();
            conn.in_flight.fetch_add(1, Ordering::AcqRel);
            conn.budget.hold(frame_len);
            tokio::spawn(async move {
                if let (Some(response), false) = (future.await, oneway) {
                    send_response(&conn, response).await;
                }
                conn.budget.unhold(frame_len);
                conn.in_flight.fetch_sub(1, Ordering::AcqRel);
            });
        }
    }
}

async fn send_response(conn: &Connection, response: RemotingCommand) {
    if let Err(e) = conn.send(&response).await {
        tracing::debug!(peer = %conn.peer, error = %e, "response not sent");
    }
}
