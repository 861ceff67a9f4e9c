//! Write coalescing for the gRPC connections. HTTP/2 (h2) writes one answer as several
//! pieces — a HEADERS frame, each DATA frame's head and then its payload (passed by
//! reference, not copied, when larger than a few hundred bytes), the trailers — and flushes
//! when it has nothing more to write. Written straight to the socket, each piece is a
//! `sendto` (three or four per call measured, each waking the client), which made the
//! syscalls and the wake-ups most of a small call's cost. Here the pieces are gathered and
//! leave in one write at the flush, which first lets the call's own task finish the answer
//! and the other calls' tasks add theirs (see `poll_flush`): one `sendto` per call measured
//! with strace on receive and ack, then 0.44 per receive+ack pair (16 in flight) once the
//! flush also waited for the other calls ready in the same turn.
//!
//! What must stay true: every byte accepted by `poll_write` reaches the socket by the end of
//! the next successful `poll_flush` (or `poll_shutdown`), in order; the buffer never holds
//! more than [`LIMIT`] plus one write, so a slow client costs bounded memory (h2's own
//! send buffers limit what waits behind it), and at most [`KEEP`] between answers.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::AsyncWrite;

/// Gathered bytes above which a write first sends what is gathered.
const LIMIT: usize = 64 * 1024;
/// Most times one flush lets the other tasks run first.
const MAX_DEFERRALS: u8 = 8;
/// Buffer a connection keeps between answers (a receive of 32 small messages fits).
const KEEP: usize = 16 * 1024;

/// A writer that sends what it is given at the flush, in as few writes as it can.
#[derive(Debug)]
pub(crate) struct Coalescing<W> {
    inner: W,
    out: Vec<u8>,
    /// How much of `out` has been written.
    sent: usize,
    /// How much was gathered when this flush last let other tasks run, and how many times
    /// it did (see `poll_flush`).
    deferred_at: Option<usize>,
    deferrals: u8,
}

impl<W: AsyncWrite + Unpin> Coalescing<W> {
    pub(crate) fn new(inner: W) -> Self {
        Coalescing {
            inner,
            out: Vec::new(),
            sent: 0,
            deferred_at: None,
            deferrals: 0,
        }
    }

    /// The inner writer (reads go to it directly).
    pub(crate) fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// Writes out everything gathered.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.out.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.out[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.out.clear();
        self.sent = 0;
        // An idle connection holds at most KEEP: one that once sent a large answer gives
        // the memory back (thousands of connections must not keep 64 KiB each). It keeps
        // KEEP, not nothing: a busy connection's next answers start there instead of growing
        // from a few bytes by doubling (a dozen copies per flush, measured).
        if self.out.capacity() > KEEP {
            self.out = Vec::with_capacity(KEEP);
        }
        Poll::Ready(Ok(()))
    }

    /// Makes room for `len` more bytes: sends what is gathered when it would go over the
    /// limit.
    fn poll_room(&mut self, cx: &mut Context<'_>, len: usize) -> Poll<io::Result<()>> {
        if !self.out.is_empty() && self.out.len() + len > LIMIT {
            ready!(self.poll_drain(cx))?;
        }
        Poll::Ready(Ok(()))
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Coalescing<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_room(cx, buf.len()))?;
        this.out.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let len: usize = bufs.iter().map(|b| b.len()).sum();
        ready!(this.poll_room(cx, len))?;
        for b in bufs {
            this.out.extend_from_slice(b);
        }
        Poll::Ready(Ok(len))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        // A call's answer is finished by its own task while the connection's task writes:
        // the trailers usually arrive just after the flush of the data, and the other calls
        // that arrived with it are being answered by their tasks. Letting the other tasks run
        // before the write takes their answers along — again while they keep adding to it,
        // up to MAX_DEFERRALS rounds (one socket write, and one wake-up of the client, for
        // all the answers ready in this turn of the runtime; an extra poll costs far less).
        let grew = this.deferred_at.is_none_or(|at| this.out.len() > at);
        if !this.out.is_empty() && grew && this.deferrals < MAX_DEFERRALS {
            this.deferred_at = Some(this.out.len());
            this.deferrals += 1;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        ready!(this.poll_drain(cx))?;
        (this.deferred_at, this.deferrals) = (None, 0);
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn pieces_leave_together_at_the_flush_in_order() {
        let (a, mut b) = tokio::io::duplex(1 << 20);
        let mut w = Coalescing::new(a);
        w.write_all(b"head").await.unwrap();
        let bufs = [IoSlice::new(b"-data"), IoSlice::new(b"-more")];
        assert_eq!(w.write_vectored(&bufs).await.unwrap(), 10);
        // Nothing has reached the other side before the flush.
        let mut probe = [0u8; 1];
        let early =
            tokio::time::timeout(std::time::Duration::from_millis(20), b.read(&mut probe)).await;
        assert!(early.is_err());
        w.flush().await.unwrap();
        let mut got = vec![0u8; 14];
        b.read_exact(&mut got).await.unwrap();
        assert_eq!(got, b"head-data-more");
    }

    #[tokio::test]
    async fn large_writes_go_out_before_the_buffer_passes_its_limit() {
        // A pipe smaller than what is written: the writer must drain as it goes, and the
        // reader sees every byte in order.
        let (a, mut b) = tokio::io::duplex(LIMIT / 2);
        let data: Vec<u8> = (0..(3 * LIMIT + 17)).map(|i| (i % 251) as u8).collect();
        let expected = data.clone();
        let writer = tokio::spawn(async move {
            let mut w = Coalescing::new(a);
            for chunk in data.chunks(1000) {
                w.write_all(chunk).await.unwrap();
                assert!(w.out.len() <= LIMIT);
            }
            w.flush().await.unwrap();
            assert!(w.out.capacity() <= KEEP, "an idle connection keeps little");
            w.shutdown().await.unwrap();
        });
        let mut got = Vec::new();
        b.read_to_end(&mut got).await.unwrap();
        writer.await.unwrap();
        assert_eq!(got, expected);
    }

    /// Records each write it is given.
    #[derive(Default)]
    struct Recorder(Vec<Vec<u8>>);

    impl AsyncWrite for Recorder {
        fn poll_write(
            self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            self.get_mut().0.push(buf.to_vec());
            Poll::Ready(Ok(buf.len()))
        }

        fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    struct Count(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Count {
        fn wake(self: std::sync::Arc<Self>) {
            self.wake_by_ref();
        }

        fn wake_by_ref(self: &std::sync::Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    fn a_flush_lets_the_answer_finish_then_writes_it_once() {
        let count = std::sync::Arc::new(Count(0.into()));
        let waker = std::task::Waker::from(count.clone());
        let mut cx = Context::from_waker(&waker);
        let mut w = Coalescing::new(Recorder::default());
        let mut pin = Pin::new(&mut w);
        assert!(pin.as_mut().poll_write(&mut cx, b"data").is_ready());
        // The first poll of the flush gives way (and asks to be polled again at once)...
        assert!(pin.as_mut().poll_flush(&mut cx).is_pending());
        assert_eq!(count.0.load(std::sync::atomic::Ordering::SeqCst), 1);
        // ...so the trailers written meanwhile leave with the data, in one write: it gives
        // way again while something was added, and writes once a round added nothing.
        assert!(pin.as_mut().poll_write(&mut cx, b"+trailers").is_ready());
        assert!(pin.as_mut().poll_flush(&mut cx).is_pending());
        assert!(pin.as_mut().poll_flush(&mut cx).is_ready());
        assert_eq!(w.inner.0, vec![b"data+trailers".to_vec()]);
        // Nothing gathered: a flush does not give way.
        assert!(Pin::new(&mut w).poll_flush(&mut cx).is_ready());
    }

    #[test]
    fn a_flush_gives_way_a_bounded_number_of_times() {
        let count = std::sync::Arc::new(Count(0.into()));
        let waker = std::task::Waker::from(count.clone());
        let mut cx = Context::from_waker(&waker);
        let mut w = Coalescing::new(Recorder::default());
        let mut pin = Pin::new(&mut w);
        // Other tasks that add to every round do not hold the write back for ever.
        let mut rounds = 0;
        loop {
            assert!(pin.as_mut().poll_write(&mut cx, b"x").is_ready());
            if pin.as_mut().poll_flush(&mut cx).is_ready() {
                break;
            }
            rounds += 1;
        }
        assert_eq!(rounds, usize::from(MAX_DEFERRALS));
        assert_eq!(w.inner.0.len(), 1);
    }
}
