//! Blocking request/response on connections that one caller owns at a time.
//!
//! Why: a synchronous request through the shared connection ([`crate::Connection`]) costs a
//! thread hop on the way back — the runtime's reader wakes for the answer, then wakes the
//! caller. Here the calling thread writes the request and reads the answer itself, so the
//! kernel wakes it directly (the way redis-py or a JDBC driver works). Producers use it for
//! synchronous sends, where that hop was a large share of the round trip.
//!
//! What must stay true:
//! - a connection carries one request at a time and goes back to the pool only after the
//!   answer was read whole, with nothing unread behind it; an error, a timeout or an
//!   interruption closes it (a late answer can never be taken for the next request's);
//! - an idle connection the peer may have closed — idle for [`IDLE_LIMIT`] (brokers close
//!   connections idle for 120 s), or readable while idle (end of stream, stray bytes) — is
//!   closed instead of reused, so no request is written to a socket already known dead;
//! - at most `max_per_addr` exist per address; beyond that [`DirectPool::take`] answers None
//!   and the caller uses the shared connection;
//! - servers send no requests here: a broker learns a client's channels from heartbeats,
//!   which go through the shared connection. A request frame arriving anyway is skipped.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use rocketpy_protocol::signature::Credentials;
use rocketpy_protocol::LanguageCode;
use rocketpy_protocol::{frame, RemotingCommand};

use crate::error::{RemotingError, Result};

/// A pooled connection idle this long is closed rather than reused: well under the 120 s
/// after which brokers close idle connections (`clientChannelMaxIdleTimeSeconds`).
pub const IDLE_LIMIT: Duration = Duration::from_secs(60);

/// Frames larger than this get a write timeout (smaller ones always fit the empty socket
/// buffer of a connection that carries one request at a time).
const LARGE_FRAME: usize = 64 * 1024;

/// Bytes read per system call.
const READ_CHUNK: usize = 16 * 1024;

/// Connections per address for blocking requests.
pub struct DirectPool {
    state: Mutex<PoolState>,
    connect_timeout: Duration,
    max_per_addr: usize,
    /// The client's account: requests are signed with it before they are written.
    credentials: Option<Credentials>,
    /// The language requests announce (see `ClientConfig::language`).
    language: LanguageCode,
}

#[derive(Default)]
struct PoolState {
    addrs: HashMap<String, AddrState>,
    /// Bumped by [`DirectPool::close`] and [`DirectPool::clear`]: a connection taken
    /// before is closed when it comes back.
    generation: u64,
}

#[derive(Default)]
struct AddrState {
    idle: Vec<Conn>,
    /// Connections that exist: idle plus taken.
    open: usize,
}

struct Conn {
    stream: TcpStream,
    buf: BytesMut,
    scratch: Box<[u8]>,
    idle_since: Instant,
    /// The read timeout set on the socket (a system call to change).
    read_timeout: Option<Duration>,
}

/// A connection taken from a [`DirectPool`]; it goes back when dropped, unless it broke.
pub struct DirectConnection<'a> {
    pool: &'a DirectPool,
    addr: String,
    generation: u64,
    conn: Option<Conn>,
}

impl DirectPool {
    /// A pool of at most `max_per_addr` connections per address (0: never any), each
    /// connecting within `connect_timeout`.
    pub fn new(
        connect_timeout: Duration,
        max_per_addr: usize,
        credentials: Option<Credentials>,
    ) -> Self {
        DirectPool {
            state: Mutex::new(PoolState::default()),
            connect_timeout,
            max_per_addr,
            credentials,
            language: LanguageCode::Rust,
        }
    }

    /// The pool, its requests announcing `language` (RUST unless set).
    pub fn with_language(mut self, language: LanguageCode) -> Self {
        self.language = language;
        self
    }

    fn lock(&self) -> MutexGuard<'_, PoolState> {
        // A poisoned lock only means a thread panicked while holding it; the table is valid.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A connection to `addr` for one request: an idle one, else a new one (connected
    /// within `timeout` at most) while fewer than `max_per_addr` exist; None when that many
    /// are taken.
    pub fn take(&self, addr: &str, timeout: Duration) -> Result<Option<DirectConnection<'_>>> {
        let generation = loop {
            let mut state = self.lock();
            let generation = state.generation;
            let Some(st) = state.addrs.get_mut(addr) else {
                if self.max_per_addr == 0 {
                    return Ok(None);
                }
                state.addrs.insert(
                    addr.to_owned(),
                    AddrState {
                        idle: Vec::new(),
                        open: 1,
                    },
                );
                break generation;
            };
            match st.idle.pop() {
                Some(conn) => {
                    drop(state);
                    if conn.usable() {
                        return Ok(Some(DirectConnection {
                            pool: self,
                            addr: addr.to_owned(),
                            generation,
                            conn: Some(conn),
                        }));
                    }
                    self.forget(addr);
                }
                None if st.open < self.max_per_addr => {
                    st.open += 1;
                    break generation;
                }
                None => return Ok(None),
            }
        };
        match connect(addr, self.connect_timeout.min(timeout)) {
            Ok(stream) => Ok(Some(DirectConnection {
                pool: self,
                addr: addr.to_owned(),
                generation,
                conn: Some(Conn::new(stream)),
            })),
            Err(e) => {
                self.forget(addr);
                Err(e)
            }
        }
    }

    /// One connection of `addr` no longer exists.
    fn forget(&self, addr: &str) {
        let mut state = self.lock();
        if let Some(st) = state.addrs.get_mut(addr) {
            st.open = st.open.saturating_sub(1);
            if st.open == 0 && st.idle.is_empty() {
                state.addrs.remove(addr);
            }
        }
    }

    fn give_back(&self, addr: &str, generation: u64, mut conn: Conn) {
        let mut state = self.lock();
        if state.generation == generation {
            if let Some(st) = state.addrs.get_mut(addr) {
                conn.idle_since = Instant::now();
                st.idle.push(conn);
                return;
            }
        }
        drop(state);
        // Closed meanwhile: this one closes too (dropping it closes the socket).
        drop(conn);
        self.forget(addr);
    }

    /// Closes the idle connections of `addr`; taken ones close when they come back.
    pub fn close(&self, addr: &str) {
        let mut state = self.lock();
        state.generation += 1;
        state.addrs.remove(addr);
    }

    /// Closes every idle connection; taken ones close when they come back.
    pub fn clear(&self) {
        let mut state = self.lock();
        state.generation += 1;
        state.addrs.clear();
    }

    /// Idle connections of `addr` (for tests and diagnostics).
    pub fn idle(&self, addr: &str) -> usize {
        self.lock().addrs.get(addr).map_or(0, |st| st.idle.len())
    }
}

impl DirectConnection<'_> {
    /// Writes `request` and reads its answer in the calling thread, within `timeout`. A pool
    /// with credentials signs `request` first (in place: signing again gives the same fields).
    ///
    /// `poll`, when given, runs whenever a blocking read was interrupted by a signal and at
    /// least every `interval` while waiting; returning false abandons the request
    /// ([`RemotingError::Interrupted`]). Any error closes the connection.
    pub fn invoke(
        &mut self,
        request: &mut RemotingCommand,
        timeout: Duration,
        mut poll: Option<(Duration, &mut dyn FnMut() -> bool)>,
    ) -> Result<RemotingCommand> {
        let Some(conn) = self.conn.as_mut() else {
            return Err(RemotingError::ConnectionClosed(self.addr.clone()));
        };
        let deadline = Instant::now() + timeout;
        request.language = self.pool.language;
        if let Some(c) = &self.pool.credentials {
            c.sign(request); // in place: a copy of every field per request cost more than it
        }
        let out = conn.round_trip(request, deadline, &self.addr, timeout, &mut poll);
        if out.is_err() {
            self.conn = None;
        }
        out
    }
}

impl Drop for DirectConnection<'_> {
    fn drop(&mut self) {
        match self.conn.take() {
            Some(conn) => self.pool.give_back(&self.addr, self.generation, conn),
            None => self.pool.forget(&self.addr),
        }
    }
}

fn connect(addr: &str, timeout: Duration) -> Result<TcpStream> {
    let fail = |reason: String| RemotingError::Connect {
        addr: addr.to_owned(),
        reason,
    };
    let resolved = addr.to_socket_addrs().map_err(|e| fail(e.to_string()))?;
    let mut last = fail("the address resolved to nothing".to_owned());
    for sock in resolved {
        match TcpStream::connect_timeout(&sock, timeout.max(Duration::from_millis(1))) {
            Ok(stream) => {
                stream.set_nodelay(true)?;
                return Ok(stream);
            }
            Err(e) => last = fail(e.to_string()),
        }
    }
    Err(last)
}

impl Conn {
    fn new(stream: TcpStream) -> Self {
        Conn {
            stream,
            buf: BytesMut::with_capacity(READ_CHUNK),
            scratch: vec![0; READ_CHUNK].into_boxed_slice(),
            idle_since: Instant::now(),
            read_timeout: None,
        }
    }

    /// Whether an idle connection may carry a request: not idle too long, and nothing to
    /// read (a closed peer reads as end of stream; stray bytes mean it is out of step).
    fn usable(&self) -> bool {
        if self.idle_since.elapsed() >= IDLE_LIMIT {
            return false;
        }
        let mut byte = 0u8;
        // SAFETY: a non-blocking peek of at most one byte into a valid local, on a socket
        // this value owns.
        let n = unsafe {
            libc::recv(
                self.stream.as_raw_fd(),
                (&mut byte as *mut u8).cast(),
                1,
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        n < 0 && std::io::Error::last_os_error().kind() == ErrorKind::WouldBlock
    }

    fn round_trip(
        &mut self,
        request: &RemotingCommand,
        deadline: Instant,
        addr: &str,
        timeout: Duration,
        poll: &mut Option<(Duration, &mut dyn FnMut() -> bool)>,
    ) -> Result<RemotingCommand> {
        let timed_out = || RemotingError::Timeout {
            addr: addr.to_owned(),
            millis: timeout.as_millis() as u64,
        };
        let frame = frame::encode_to_bytes(request)?;
        if frame.len() > LARGE_FRAME {
            let left = deadline.saturating_duration_since(Instant::now());
            self.stream
                .set_write_timeout(Some(left.max(Duration::from_millis(1))))?;
        }
        self.stream.write_all(&frame).map_err(|e| match e.kind() {
            ErrorKind::WouldBlock | ErrorKind::TimedOut => timed_out(),
            _ => RemotingError::Io(e),
        })?;
        loop {
            while let Some(cmd) = frame::decode(&mut self.buf)? {
                if cmd.is_response() && cmd.opaque == request.opaque {
                    if !self.buf.is_empty() {
                        // More than the answer arrived: out of step, never reused.
                        return Err(RemotingError::ConnectionClosed(addr.to_owned()));
                    }
                    return Ok(cmd);
                }
                tracing::debug!(
                    peer = addr,
                    code = cmd.code,
                    "frame skipped on a direct connection"
                );
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(timed_out());
            }
            let wait = match poll {
                Some((interval, _)) => left.min(*interval),
                None => left,
            };
            self.set_read_timeout(wait)?;
            match self.stream.read(&mut self.scratch) {
                Ok(0) => return Err(RemotingError::ConnectionClosed(addr.to_owned())),
                Ok(n) => self.buf.extend_from_slice(&self.scratch[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                    ) =>
                {
                    if let Some((_, check)) = poll {
                        if !check() {
                            return Err(RemotingError::Interrupted(addr.to_owned()));
                        }
                    }
                }
                Err(e) => return Err(RemotingError::Io(e)),
            }
        }
    }

    fn set_read_timeout(&mut self, wait: Duration) -> Result<()> {
        // Whole milliseconds, so that a timeout counting down does not cost a system call
        // per read.
        let wait = Duration::from_millis(wait.as_millis().max(1) as u64);
        if self.read_timeout != Some(wait) {
            self.stream.set_read_timeout(Some(wait))?;
            self.read_timeout = Some(wait);
        }
        Ok(())
    }
}
