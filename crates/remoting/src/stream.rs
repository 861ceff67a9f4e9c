//! What a connection runs over: a TCP stream, TLS on one ([`crate::tls`]), or an in-process
//! pipe to a server in the same process ([`Stream::pair`]). Split into a read side and a
//! write side for the connection's two tasks; only the plain TCP write side can be written
//! without waiting (`try_write`), since a TLS record must be sealed first.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, DuplexStream, ReadBuf, ReadHalf, WriteHalf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio_rustls::TlsStream;

/// A connected stream.
pub enum Stream {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS over TCP (boxed: its buffers are large).
    Tls(Box<TlsStream<TcpStream>>),
    /// One end of an in-process pipe; `peer` is the address the other end stands for.
    Pipe {
        /// The pipe.
        io: DuplexStream,
        /// Who is at the other end.
        peer: SocketAddr,
    },
}

/// Bytes a pipe holds before its writer waits (as much as a socket's buffers would).
const PIPE_BUFFER: usize = 256 * 1024;

impl From<TcpStream> for Stream {
    fn from(tcp: TcpStream) -> Self {
        Stream::Plain(tcp)
    }
}

impl Stream {
    /// Two connected in-process ends: the first sees `a_peer` at its other end, the second
    /// `b_peer`. No socket and no system call carries their bytes.
    pub fn pair(a_peer: SocketAddr, b_peer: SocketAddr) -> (Stream, Stream) {
        let (a, b) = tokio::io::duplex(PIPE_BUFFER);
        (
            Stream::Pipe {
                io: a,
                peer: a_peer,
            },
            Stream::Pipe {
                io: b,
                peer: b_peer,
            },
        )
    }

    /// The TCP stream underneath (none for a pipe).
    pub fn tcp(&self) -> Option<&TcpStream> {
        match self {
            Stream::Plain(tcp) => Some(tcp),
            Stream::Tls(tls) => Some(tls.get_ref().0),
            Stream::Pipe { .. } => None,
        }
    }

    /// The remote address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        match self {
            Stream::Pipe { peer, .. } => Ok(*peer),
            _ => self
                .tcp()
                .map_or_else(|| Err(io::Error::other("no socket")), TcpStream::peer_addr),
        }
    }

    /// Whether writes may be made without waiting ([`WriteSide::try_write`]): plain TCP.
    pub fn writes_directly(&self) -> bool {
        matches!(self, Stream::Plain(_))
    }

    /// Whether this is an in-process pipe ([`Stream::pair`]): both ends in this process.
    pub fn is_in_process(&self) -> bool {
        matches!(self, Stream::Pipe { .. })
    }

    /// Whether it is TLS.
    pub fn is_tls(&self) -> bool {
        matches!(self, Stream::Tls(_))
    }

    /// Its read and write sides.
    pub(crate) fn split(self) -> (ReadSide, WriteSide) {
        match self {
            Stream::Plain(tcp) => {
                let (r, w) = tcp.into_split();
                (ReadSide::Plain(r), WriteSide::Plain(w))
            }
            Stream::Tls(tls) => {
                let (r, w) = tokio::io::split(tls);
                (ReadSide::Tls(r), WriteSide::Tls(w))
            }
            Stream::Pipe { io, .. } => {
                let (r, w) = tokio::io::split(io);
                (ReadSide::Pipe(r), WriteSide::Pipe(w))
            }
        }
    }
}

/// The read side of a [`Stream`].
pub(crate) enum ReadSide {
    Plain(OwnedReadHalf),
    Tls(ReadHalf<Box<TlsStream<TcpStream>>>),
    Pipe(ReadHalf<DuplexStream>),
}

/// The write side of a [`Stream`].
pub(crate) enum WriteSide {
    Plain(OwnedWriteHalf),
    Tls(WriteHalf<Box<TlsStream<TcpStream>>>),
    Pipe(WriteHalf<DuplexStream>),
}

impl WriteSide {
    /// Writes what the socket takes now without waiting; `None` for TLS and pipes, which
    /// cannot.
    pub(crate) fn try_write(&self, buf: &[u8]) -> Option<io::Result<usize>> {
        match self {
            WriteSide::Plain(w) => Some(w.try_write(buf)),
            WriteSide::Tls(_) | WriteSide::Pipe(_) => None,
        }
    }
}

impl AsyncRead for ReadSide {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ReadSide::Plain(r) => Pin::new(r).poll_read(cx, buf),
            ReadSide::Tls(r) => Pin::new(r).poll_read(cx, buf),
            ReadSide::Pipe(r) => Pin::new(r).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for WriteSide {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            WriteSide::Plain(w) => Pin::new(w).poll_write(cx, buf),
            WriteSide::Tls(w) => Pin::new(w).poll_write(cx, buf),
            WriteSide::Pipe(w) => Pin::new(w).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WriteSide::Plain(w) => Pin::new(w).poll_flush(cx),
            WriteSide::Tls(w) => Pin::new(w).poll_flush(cx),
            WriteSide::Pipe(w) => Pin::new(w).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WriteSide::Plain(w) => Pin::new(w).poll_shutdown(cx),
            WriteSide::Tls(w) => Pin::new(w).poll_shutdown(cx),
            WriteSide::Pipe(w) => Pin::new(w).poll_shutdown(cx),
        }
    }
}

/// A [`Stream`] is itself readable and writable (the gRPC proxy serves HTTP/2 over it).
impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Pipe { io, .. } => Pin::new(io).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Pipe { io, .. } => Pin::new(io).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s).poll_flush(cx),
            Stream::Pipe { io, .. } => Pin::new(io).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Pipe { io, .. } => Pin::new(io).poll_shutdown(cx),
        }
    }
}
