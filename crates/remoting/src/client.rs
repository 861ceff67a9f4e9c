//! The tokio client: one connection per address, requests matched to responses by opaque.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::runtime::Handle;

use crate::connection::{Connection, ConnectionConfig, Reply, RequestHandler};
use crate::direct::DirectPool;
use crate::error::{RemotingError, Result};
use crate::stream::Stream;
use crate::tls::ClientTls;
use rocketpy_protocol::signature::Credentials;
use rocketpy_protocol::{LanguageCode, RemotingCommand};

/// Client settings.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Limit on establishing a connection.
    pub connect_timeout: Duration,
    /// Connections per address for blocking requests made in the caller's thread
    /// ([`RemotingClient::direct`]); 0 sends every request through the shared connection.
    pub direct_connections: usize,
    /// An account to sign every request with (RocketMQ's ACL), if any.
    pub credentials: Option<Credentials>,
    /// TLS on every connection, if set (then requests never take the direct path, whose
    /// blocking sockets are plain).
    pub tls: Option<ClientTls>,
    /// A server in this process `(its address, its connector, the address it sees us as)`:
    /// requests for that address are handed to its processors ([`crate::InProcess`]), with
    /// no frame and no socket.
    pub in_process: Option<(String, crate::server::InProcess, std::net::SocketAddr)>,
    /// The language every request announces in its header (`LanguageCode`): the broker
    /// lists it in consumerConnection / producerConnection and labels its connection
    /// metrics with it. Rust users keep RUST; the Python binding says PYTHON.
    pub language: LanguageCode,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            connect_timeout: Duration::from_secs(3),
            direct_connections: 4,
            credentials: None,
            tls: None,
            in_process: None,
            language: LanguageCode::Rust,
        }
    }
}

type Slot = Arc<tokio::sync::Mutex<Option<Arc<Connection>>>>;

/// A remoting client; clones share connections.
#[derive(Clone)]
pub struct RemotingClient {
    inner: Arc<Inner>,
}

struct Inner {
    slots: Mutex<HashMap<String, Slot>>,
    handler: Arc<dyn RequestHandler>,
    config: ClientConfig,
    runtime: Handle,
    direct: DirectPool,
    /// The in-process server's side of our connection to it (see [`ClientConfig::in_process`]).
    served: Mutex<Option<Arc<Connection>>>,
}

/// Answers server-initiated requests when the user gave no handler.
struct Unsupported;

impl RequestHandler for Unsupported {
    fn handle(&self, _conn: &Arc<Connection>, request: RemotingCommand) -> Reply {
        Reply::Now(Some(
            RemotingCommand::response_to(
                &request,
                rocketpy_protocol::code::response::REQUEST_CODE_NOT_SUPPORTED,
            )
            .with_remark(format!(" request type {} not supported", request.code)),
        ))
    }
}

impl RemotingClient {
    /// A client whose tasks run on `runtime`; `handler` answers requests the servers send us
    /// (NOTIFY_CONSUMER_IDS_CHANGED, CHECK_TRANSACTION_STATE, ...).
    pub fn new(
        config: ClientConfig,
        handler: Option<Arc<dyn RequestHandler>>,
        runtime: Handle,
    ) -> Self {
        RemotingClient {
            inner: Arc::new(Inner {
                slots: Mutex::new(HashMap::new()),
                handler: handler.unwrap_or_else(|| Arc::new(Unsupported)),
                direct: DirectPool::new(
                    config.connect_timeout,
                    match config.tls {
                        Some(_) => 0,
                        None => config.direct_connections,
                    },
                    config.credentials.clone(),
                )
                .with_language(config.language),
                config,
                runtime,
                served: Mutex::new(None),
            }),
        }
    }

    /// The open connection to `addr`, connecting if needed.
    pub async fn connection(&self, addr: &str) -> Result<Arc<Connection>> {
        if !addr.contains(':') {
            return Err(RemotingError::InvalidAddress(addr.to_owned()));
        }
        let slot = {
            let mut slots = self.inner.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots.entry(addr.to_owned()).or_default().clone()
        };
        let mut guard = slot.lock().await;
        if let Some(conn) = guard.as_ref().filter(|c| !c.is_closed()) {
            return Ok(conn.clone());
        }
        if let Some((server, us)) = self.in_process(addr) {
            let (stream, served) = server.connect(us)?;
            let conn = Connection::spawn(
                stream,
                self.inner.handler.clone(),
                ConnectionConfig::default(),
            )?;
            *self.inner.served.lock().unwrap_or_else(|e| e.into_inner()) = Some(served);
            *guard = Some(conn.clone());
            return Ok(conn);
        }
        let connect = tokio::time::timeout(self.inner.config.connect_timeout, async {
            let tcp = TcpStream::connect(addr).await?;
            match &self.inner.config.tls {
                Some(tls) => tls.connect(addr, tcp).await,
                None => Ok(Stream::Plain(tcp)),
            }
        });
        let stream = match connect.await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                return Err(RemotingError::Connect {
                    addr: addr.to_owned(),
                    reason: e.to_string(),
                })
            }
            Err(_) => {
                return Err(RemotingError::Connect {
                    addr: addr.to_owned(),
                    reason: format!("no answer within {:?}", self.inner.config.connect_timeout),
                })
            }
        };
        let conn = Connection::spawn(
            stream,
            self.inner.handler.clone(),
            ConnectionConfig::default(),
        )?;
        *guard = Some(conn.clone());
        Ok(conn)
    }

    /// The in-process server at `addr`, if [`ClientConfig::in_process`] names it.
    fn in_process(&self, addr: &str) -> Option<(&crate::server::InProcess, std::net::SocketAddr)> {
        match &self.inner.config.in_process {
            Some((local, server, us)) if local == addr => Some((server, *us)),
            _ => None,
        }
    }

    /// Runs `request` in the in-process server `server` at `addr` (its processors, called
    /// from this task: no frame, no pipe); the server's side of our connection to it is the
    /// connection they see, so what they send back later (transaction checks) comes through
    /// that pipe to our handler.
    async fn invoke_in_process(
        &self,
        server: &crate::server::InProcess,
        addr: &str,
        request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand> {
        let started = tokio::time::Instant::now();
        let conn = self.connection(addr).await?;
        let served = self
            .inner
            .served
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let response = match served.and_then(|served| server.dispatch(&served, request)) {
            None => {
                conn.close(); // the server closed its side: the next request connects again
                return Err(RemotingError::ConnectionClosed(addr.to_owned()));
            }
            Some(crate::Reply::Now(response)) => response,
            Some(crate::Reply::Later(future)) => {
                let left = timeout.saturating_sub(started.elapsed());
                tokio::time::timeout(left, future).await.ok().flatten()
            }
        };
        // No answer in time (or none at all, as a socket would have left it): a timeout.
        response.ok_or_else(|| RemotingError::Timeout {
            addr: addr.to_owned(),
            millis: timeout.as_millis() as u64,
        })
    }

    /// Sends `request` to `addr` and waits up to `timeout` for its response.
    pub async fn invoke(
        &self,
        addr: &str,
        mut request: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand> {
        self.sign(&mut request);
        if let Some((server, _)) = self.in_process(addr) {
            return self.invoke_in_process(server, addr, request, timeout).await;
        }
        let started = tokio::time::Instant::now();
        let conn = tokio::time::timeout(timeout, self.connection(addr))
            .await
            .map_err(|_| RemotingError::Timeout {
                addr: addr.to_owned(),
                millis: timeout.as_millis() as u64,
            })??;
        let left = timeout.saturating_sub(started.elapsed());
        conn.invoke(request, left).await
    }

    /// Sends `request` to `addr` marked oneway; no response is awaited.
    pub async fn invoke_oneway(&self, addr: &str, mut request: RemotingCommand) -> Result<()> {
        request.mark_oneway();
        self.sign(&mut request);
        if self.in_process(addr).is_some() {
            let (client, addr) = (self.clone(), addr.to_owned());
            let timeout = self.inner.config.connect_timeout;
            // Nobody waits for a oneway request's outcome.
            tokio::spawn(async move {
                if let Some((server, _)) = client.in_process(&addr) {
                    let _ = client
                        .invoke_in_process(server, &addr, request, timeout)
                        .await;
                }
            });
            return Ok(());
        }
        self.connection(addr).await?.send(&request).await
    }

    /// Sends `request` and calls `callback` with the outcome on a runtime thread.
    pub fn invoke_async<F>(
        &self,
        addr: &str,
        request: RemotingCommand,
        timeout: Duration,
        callback: F,
    ) where
        F: FnOnce(Result<RemotingCommand>) + Send + 'static,
    {
        let client = self.clone();
        let addr = addr.to_owned();
        self.inner.runtime.spawn(async move {
            callback(client.invoke(&addr, request, timeout).await);
        });
    }

    /// Stamps `request` with the client's language and signs it with the client's account,
    /// if it has one (the last change before it is encoded: the signature covers every
    /// field; the language is not one of them).
    pub fn sign(&self, request: &mut RemotingCommand) {
        request.language = self.inner.config.language;
        if let Some(c) = &self.inner.config.credentials {
            c.sign(request);
        }
    }

    /// Connections for blocking requests in the caller's thread (see [`crate::direct`]);
    /// a full pool means: use [`RemotingClient::invoke`].
    pub fn direct(&self) -> &DirectPool {
        &self.inner.direct
    }

    /// Its settings.
    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// The runtime this client runs on.
    pub fn runtime(&self) -> &Handle {
        &self.inner.runtime
    }

    /// Closes the connections to `addr`, if any (the next request reconnects).
    pub fn close_connection(&self, addr: &str) {
        self.inner.direct.close(addr);
        let slot = self
            .inner
            .slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(addr);
        if let Some(slot) = slot {
            if let Ok(guard) = slot.try_lock() {
                if let Some(conn) = guard.as_ref() {
                    conn.close();
                }
            }
        }
    }

    /// Closes every connection.
    pub fn shutdown(&self) {
        self.inner.direct.clear();
        let slots: Vec<Slot> = self
            .inner
            .slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .map(|(_, s)| s)
            .collect();
        for slot in slots {
            if let Ok(guard) = slot.try_lock() {
                if let Some(conn) = guard.as_ref() {
                    conn.close();
                }
            }
        }
    }
}
