//! The gRPC listener's connections: accepted on one thread and dealt out in turn to the server
//! threads ([`crate::thread`]), each of which serves its connections from start to end; plain
//! TCP or TLS, as the broker's `tls.server.mode` says (TLS offers HTTP/2 by ALPN, which gRPC
//! clients require). Handshakes run in tasks of their own, so a slow or silent client never
//! holds up the next one.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rocketpy_remoting::{ServerTls, Stream};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::{Connected, TcpConnectInfo};

use crate::coalesce::Coalescing;

/// One accepted connection, with the addresses gRPC handlers see (`remote_addr`).
pub(crate) struct GrpcConn {
    /// Writes gathered until h2 flushes ([`Coalescing`]).
    stream: Coalescing<Stream>,
    info: TcpConnectInfo,
}

/// An accepted socket on its way to the server thread that will serve it.
pub(crate) type Accepted = (std::net::TcpStream, SocketAddr);

/// Accepts connections on `listener` and hands them to the server threads in turn (one
/// sender each); ends when no thread takes connections any more.
pub(crate) async fn accept(listener: TcpListener, mut threads: Vec<mpsc::Sender<Accepted>>) {
    let mut next = 0usize;
    while !threads.is_empty() {
        let (tcp, peer) = match listener.accept().await {
            Ok(pair) => pair,
            Err(e) => {
                tracing::warn!(error = %e, "gRPC accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        // The socket leaves this thread's reactor; the serving thread registers it with its
        // own.
        let Ok(tcp) = tcp.into_std() else { continue };
        next %= threads.len();
        if threads[next].send((tcp, peer)).await.is_err() {
            threads.remove(next);
            continue;
        }
        next += 1;
    }
}

/// The connections handed to this thread, TLS as `tls` says; ends when the server stops
/// reading them.
pub(crate) fn incoming(
    mut accepted: mpsc::Receiver<Accepted>,
    tls: Arc<ServerTls>,
) -> ReceiverStream<io::Result<GrpcConn>> {
    let tls = Arc::new(tls.with_alpn(&[b"h2"]));
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        loop {
            let (tcp, peer) = tokio::select! {
                got = accepted.recv() => match got {
                    Some(pair) => pair,
                    None => return,
                },
                _ = tx.closed() => return,
            };
            let tcp = match tokio::net::TcpStream::from_std(tcp) {
                Ok(tcp) => tcp,
                Err(e) => {
                    tracing::warn!(%peer, error = %e, "gRPC connection dropped");
                    continue;
                }
            };
            let (tls, tx) = (tls.clone(), tx.clone());
            tokio::spawn(async move {
                let info = TcpConnectInfo {
                    local_addr: tcp.local_addr().ok(),
                    remote_addr: Some(peer),
                };
                let _ = tcp.set_nodelay(true);
                match tls.accept(tcp).await {
                    Ok(stream) => {
                        let _ = tx
                            .send(Ok(GrpcConn {
                                stream: Coalescing::new(stream),
                                info,
                            }))
                            .await;
                    }
                    Err(e) => tracing::info!(%peer, error = %e, "gRPC connection closed"),
                }
            });
        }
    });
    ReceiverStream::new(rx)
}

impl Connected for GrpcConn {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        self.info.clone()
    }
}

impl AsyncRead for GrpcConn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(self.get_mut().stream.get_mut()).poll_read(cx, buf)
    }
}

impl AsyncWrite for GrpcConn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}
