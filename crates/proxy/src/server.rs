//! Starting and stopping a proxy: the gRPC listener (HTTP/2, over TLS as `tls.server.mode`
//! says: [`crate::incoming`]) and the producer heartbeat that routes brokers' transaction
//! checks here.

use std::net::SocketAddr;
use std::sync::Arc;

use rocketpy_remoting::lifecycle::{every, stopped, Services};
use rocketpy_remoting::{ClientConfig, RemotingClient};
use tokio::net::TcpListener;

use crate::clients::remote::heartbeat_producers;
use crate::clients::PRODUCER_HEARTBEAT;
use crate::config::ProxyConfig;
use crate::pb::messaging_service_server::MessagingServiceServer;
use crate::service::Service;
use crate::state::ProxyInner;

/// Largest gRPC message the proxy reads: a 4 MiB body and its properties, with room.
pub const MAX_GRPC_MESSAGE: usize = 16 * 1024 * 1024;

/// Calls one connection may have open at once (HTTP/2 `SETTINGS_MAX_CONCURRENT_STREAMS`; a
/// client queues more until one ends). A 5.x client keeps one receive per assigned queue
/// and a handful of other calls open.
pub const MAX_CALLS_PER_CONNECTION: u32 = 128;

/// Bytes of request messages one connection's calls may hold at once ([`crate::inbound`]):
/// four of the largest messages.
const MAX_INBOUND_PER_CONNECTION: usize = 4 * MAX_GRPC_MESSAGE;

/// HTTP/2 flow-control windows: bytes a client may send before the proxy has read them, per
/// call and per connection.
const STREAM_WINDOW: u32 = 256 * 1024;
const CONNECTION_WINDOW: u32 = 1024 * 1024;

/// Threads serving gRPC connections: one per core (a connection is served by one of them
/// from start to end; see [`crate::thread`]).
fn server_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A running proxy.
pub struct Proxy {
    inner: Arc<ProxyInner>,
    local_addr: SocketAddr,
    /// The renewal and producer-heartbeat loops, and the stop signal the server obeys too.
    services: tokio::sync::Mutex<Services>,
    /// The gRPC server's threads: stopped with the signal, then at once, since calls in
    /// progress may be long polls of up to 20 s (their clients receive again elsewhere).
    threads: tokio::sync::Mutex<Vec<crate::thread::ServerThread>>,
}

impl Proxy {
    /// Listens on `bind_address:grpc_server_port` and serves until [`Proxy::shutdown`]: the
    /// connections on threads of its own ([`crate::thread`]), its renewal and heartbeat loops
    /// on the current tokio runtime.
    pub async fn start(config: ProxyConfig) -> std::io::Result<Proxy> {
        // Bound here (tokio's backlog of 1024, SO_REUSEADDR), served from the first server
        // thread's reactor: it travels there as a std socket.
        let listener = TcpListener::bind((config.bind_address.as_str(), config.grpc_server_port))
            .await?
            .into_std()?;
        let local_addr = listener.local_addr()?;
        let inner = build_state(config);
        let mut services = Services::default();
        let service = MessagingServiceServer::new(Service::new(inner.clone()))
            .max_decoding_message_size(MAX_GRPC_MESSAGE)
            .max_encoding_message_size(MAX_GRPC_MESSAGE);
        let tls = inner.config.tls.clone();
        let inbound = crate::inbound::Inbound::new(MAX_INBOUND_PER_CONNECTION);
        let count = server_threads();
        let (senders, receivers): (Vec<_>, Vec<_>) =
            (0..count).map(|_| tokio::sync::mpsc::channel(64)).unzip();
        let mut listener = Some((listener, senders));
        let mut threads = Vec::with_capacity(count);
        for accepted in receivers {
            let (service, tls, inbound) = (service.clone(), tls.clone(), inbound.clone());
            // The first thread also accepts, for all of them.
            let accepting = listener.take();
            let mut until = services.stop_signal();
            threads.push(crate::thread::ServerThread::start(move || async move {
                if let Some((listener, senders)) = accepting {
                    let listener = TcpListener::from_std(listener)?;
                    tokio::spawn(crate::incoming::accept(listener, senders));
                }
                let incoming = crate::incoming::incoming(accepted, tls);
                let served = tonic::transport::Server::builder()
                    .tcp_nodelay(true)
                    .max_concurrent_streams(MAX_CALLS_PER_CONNECTION)
                    .initial_stream_window_size(STREAM_WINDOW)
                    .initial_connection_window_size(CONNECTION_WINDOW)
                    .http2_max_header_list_size(16 * 1024)
                    // Streams opened and reset at once cost a server work but count as no
                    // call (HTTP/2 rapid reset): a connection doing it is closed.
                    .http2_max_pending_accept_reset_streams(Some(64))
                    .layer(crate::inbound::InboundLayer(inbound))
                    .add_service(service)
                    .serve_with_incoming_shutdown(
                        incoming,
                        async move { stopped(&mut until).await },
                    )
                    .await;
                if let Err(e) = served {
                    tracing::error!(error = %e, "the gRPC server stopped");
                }
                Ok(())
            })?);
        }
        let renewing = crate::renew::due::renew_loop(inner.clone(), services.stop_signal());
        services.spawn(renewing);
        let beat = inner.clone();
        let heartbeat = every(PRODUCER_HEARTBEAT, services.stop_signal(), move || {
            let beat = beat.clone();
            async move { heartbeat_producers(&beat).await }
        });
        services.spawn(heartbeat);
        tracing::info!(listen = %local_addr, "gRPC proxy started");
        Ok(Proxy {
            inner,
            local_addr,
            services: tokio::sync::Mutex::new(services),
            threads: tokio::sync::Mutex::new(threads),
        })
    }

    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Shared state (tests).
    pub fn inner(&self) -> &Arc<ProxyInner> {
        &self.inner
    }

    /// Stops listening (calls in progress finish) and closes the connections to brokers.
    pub async fn shutdown(&self) {
        let mut services = self.services.lock().await;
        services.stop(std::time::Duration::from_secs(5)).await;
        for thread in self.threads.lock().await.iter_mut() {
            thread.stop().await;
        }
        self.inner.remoting.shutdown();
    }
}

/// The proxy's state; its remoting client answers brokers' requests to the proxy
/// (transaction checks) through [`crate::transaction::CheckRelay`].
fn build_state(config: ProxyConfig) -> Arc<ProxyInner> {
    Arc::new_cyclic(|weak| {
        let relay = Arc::new(crate::transaction::CheckRelay::new(weak.clone()));
        let remoting = RemotingClient::new(
            ClientConfig {
                direct_connections: 0,
                credentials: config.credentials.clone(),
                tls: config.client_tls.clone(),
                in_process: config.in_process.clone(),
                ..ClientConfig::default()
            },
            Some(relay),
            tokio::runtime::Handle::current(),
        );
        ProxyInner::assemble(config, remoting)
    })
}
