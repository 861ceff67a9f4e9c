//! The tokio server: accepts connections (TLS as its [`ServerTls`] says) and hands their
//! requests to a [`ProcessorTable`].

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::connection::{Connection, ConnectionConfig, RequestHandler};
use crate::error::Result;
use crate::processor::ProcessorTable;
use crate::tls::{ServerTls, TlsMode};

/// Server limits.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Connections beyond this are accepted and closed at once.
    pub max_connections: usize,
    /// Connections silent for this long are closed (RocketMQ: 120 s).
    pub idle_timeout: Option<Duration>,
    /// TLS on the listener (`tls.server.mode`).
    pub tls: Arc<ServerTls>,
    /// Bytes each connection may owe and hold before it reads no more requests
    /// (`writeBufferHighWaterMark`, `writeBufferLowWaterMark`, `maxHeldRequestBytes`).
    pub marks: crate::budget::Marks,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_connections: 10_000,
            idle_timeout: Some(Duration::from_secs(120)),
            tls: Arc::new(ServerTls::disabled()),
            marks: crate::budget::Marks::default(),
        }
    }
}

type ConnectionMap = Arc<Mutex<HashMap<u64, Arc<Connection>>>>;

/// A listening server. Dropping it does not stop it; call [`RemotingServer::shutdown`].
pub struct RemotingServer {
    local_addr: SocketAddr,
    stop: watch::Sender<bool>,
    accept_task: Mutex<Option<JoinHandle<()>>>,
    connections: ConnectionMap,
    in_process: InProcess,
}

/// A server's processors for a client in the same process (the broker's gRPC proxy): its
/// connection is an in-process pipe served as any accepted connection (the same processors,
/// guard, shutdown; no idle timeout), and its requests are handed to the processors directly
/// ([`InProcess::dispatch`]) — no frame is encoded, no socket, system call or TCP stack is
/// involved. The pipe carries what the server sends the client (transaction checks).
#[derive(Clone)]
pub struct InProcess {
    handler: Arc<Tracked>,
    config: ConnectionConfig,
    connections: ConnectionMap,
    stopped: watch::Receiver<bool>,
    server_addr: SocketAddr,
}

impl std::fmt::Debug for InProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcess")
            .field("server_addr", &self.server_addr)
            .finish()
    }
}

impl InProcess {
    /// A new connection: the client's end, and the server's connection (the one its
    /// processors see); the server sees `peer` as the client's address. Fails once the
    /// server is shutting down.
    pub fn connect(&self, peer: SocketAddr) -> Result<(crate::stream::Stream, Arc<Connection>)> {
        let refused = |reason: &str| crate::RemotingError::Connect {
            addr: self.server_addr.to_string(),
            reason: reason.into(),
        };
        if *self.stopped.borrow() {
            return Err(refused("the server is shutting down"));
        }
        let (client, server) = crate::stream::Stream::pair(self.server_addr, peer);
        // No idle timeout: requests do not travel through the pipe (see `dispatch`), so
        // silence on it means nothing; it lives until either side closes it.
        let config = ConnectionConfig {
            idle_timeout: None,
            ..self.config.clone()
        };
        let served = start_connection(server, peer, &self.handler, &config, &self.connections)
            .ok_or_else(|| refused("connection setup failed"))?;
        Ok((client, served))
    }

    /// Hands `request` to the server's processors as if it had arrived on `served` (the
    /// server's side of a connection from [`InProcess::connect`]): no frame is written or
    /// read, and requests run in the caller's task instead of one after another in the
    /// connection's reader. `None` once the server stopped or the connection closed.
    pub fn dispatch(
        &self,
        served: &Arc<Connection>,
        mut request: rocketpy_protocol::RemotingCommand,
    ) -> Option<crate::Reply> {
        if *self.stopped.borrow() || served.is_closed() {
            return None;
        }
        request.received_at = Some(std::time::Instant::now());
        Some(self.handler.handle(served, request))
    }
}

struct Tracked {
    table: ProcessorTable,
    connections: ConnectionMap,
}

impl RequestHandler for Tracked {
    fn handle(
        &self,
        conn: &Arc<Connection>,
        request: rocketpy_protocol::RemotingCommand,
    ) -> crate::Reply {
        self.table.handle(conn, request)
    }

    fn on_close(&self, conn: &Arc<Connection>) {
        lock(&self.connections).remove(&conn.id());
        self.table.on_close(conn);
    }
}

fn lock(map: &ConnectionMap) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Connection>>> {
    map.lock().unwrap_or_else(|e| e.into_inner())
}

fn start_connection(
    stream: crate::stream::Stream,
    peer: SocketAddr,
    handler: &Arc<Tracked>,
    config: &ConnectionConfig,
    accepted: &ConnectionMap,
) -> Option<Arc<Connection>> {
    match Connection::spawn(stream, handler.clone(), config.clone()) {
        Ok(conn) => {
            lock(accepted).insert(conn.id(), conn.clone());
            Some(conn)
        }
        Err(e) => {
            tracing::debug!(%peer, error = %e, "connection setup failed");
            None
        }
    }
}

impl RemotingServer {
    /// Binds `addr` (port 0 picks a free port) and starts accepting on the current runtime.
    pub async fn bind(addr: &str, table: ProcessorTable, config: ServerConfig) -> Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let local_addr = listener.local_addr()?;
        let (stop, mut stopped) = watch::channel(false);
        let connections: ConnectionMap = Arc::default();
        let handler = Arc::new(Tracked {
            table,
            connections: connections.clone(),
        });
        let conn_config = ConnectionConfig {
            idle_timeout: config.idle_timeout,
            marks: config.marks,
            ..ConnectionConfig::default()
        };
        let in_process = InProcess {
            handler: handler.clone(),
            config: conn_config.clone(),
            connections: connections.clone(),
            stopped: stopped.clone(),
            server_addr: local_addr,
        };
        let accepted = connections.clone();
        let accept_task = tokio::spawn(async move {
            loop {
                let accept = tokio::select! {
                    a = listener.accept() => a,
                    _ = stopped.wait_for(|s| *s) => break,
                };
                let (stream, peer) = match accept {
                    Ok(pair) => pair,
                    Err(e) => {
                        // Out of file descriptors and the like: back off instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                if lock(&accepted).len() >= config.max_connections {
                    tracing::warn!(%peer, max = config.max_connections, "connection cap reached; refusing");
                    drop(stream);
                    continue;
                }
                if config.tls.mode() == TlsMode::Disabled {
                    start_connection(stream.into(), peer, &handler, &conn_config, &accepted);
                    continue;
                }
                // Telling TLS from plain waits for the client's first bytes: not in this loop.
                let (tls, handler, conn_config, accepted) = (
                    config.tls.clone(),
                    handler.clone(),
                    conn_config.clone(),
                    accepted.clone(),
                );
                tokio::spawn(async move {
                    match tls.accept(stream).await {
                        Ok(stream) => {
                            start_connection(stream, peer, &handler, &conn_config, &accepted);
                        }
                        Err(e) => tracing::info!(%peer, error = %e, "connection closed"),
                    }
                });
            }
        });
        Ok(RemotingServer {
            local_addr,
            stop,
            accept_task: Mutex::new(Some(accept_task)),
            connections,
            in_process,
        })
    }

    /// Opens in-process connections to this server (see [`InProcess`]).
    pub fn in_process(&self) -> InProcess {
        self.in_process.clone()
    }

    /// The bound address (with the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Number of open connections.
    pub fn connection_count(&self) -> usize {
        lock(&self.connections).len()
    }

    /// Stops accepting and closes every connection.
    pub async fn shutdown(&self) {
        self.shutdown_graceful(Duration::ZERO).await;
    }

    /// Stops accepting and reading requests, lets the answers in flight go out for up to
    /// `grace`, then closes every connection.
    pub async fn shutdown_graceful(&self, grace: Duration) {
        self.stop.send_replace(true);
        let task = self
            .accept_task
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(task) = task {
            let _ = task.await;
        }
        let open: Vec<_> = lock(&self.connections).values().cloned().collect();
        for conn in &open {
            conn.drain();
        }
        let deadline = tokio::time::Instant::now() + grace;
        while !lock(&self.connections).is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let open: Vec<_> = lock(&self.connections).values().cloned().collect();
        for conn in open {
            conn.close();
        }
    }
}
