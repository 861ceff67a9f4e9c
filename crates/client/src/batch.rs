//! Request batching per lane (RocketMQ 5.x `autoBatch`, Kafka's `linger.ms`): items bound for
//! one lane (a producer's queue) gather while a request of that lane is in flight and leave
//! together as its next request.
//!
//! What must stay true:
//! - at most one request per lane is in flight and items leave in the order they were added,
//!   so the order within a lane holds whatever the broker does with concurrent requests;
//! - every added item reaches [`BatchSink::done`] exactly once (answered, failed, or the
//!   accumulator closed);
//! - the bytes held (gathering plus in flight) stay under `total_max_bytes`: [`Accumulator::add`]
//!   refuses with [`AddError::Full`] and [`Accumulator::wait_for_space`] waits, which is how a
//!   producer faster than its brokers is slowed down;
//! - a lane with nothing gathering and nothing in flight is forgotten: memory follows traffic.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::runtime::Handle;

use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{RemotingClient, Result};

/// Limits of an [`Accumulator`].
#[derive(Debug, Clone)]
pub struct BatchSettings {
    /// A request carries at most this many bytes of items (one larger item goes alone).
    pub max_bytes: usize,
    /// How long an item may wait for company when its lane has nothing in flight (zero: it
    /// leaves at once; items that arrive while a request is in flight wait for its answer).
    pub max_delay: Duration,
    /// Bytes held in all lanes, gathering and in flight, before `add` refuses.
    pub total_max_bytes: usize,
    /// Time allowed for one request.
    pub timeout: Duration,
}

/// Builds a lane's requests and takes their outcomes.
pub trait BatchSink<K, T>: Send + Sync + 'static {
    /// The address and request that carry `body` (the items' encodings, concatenated in order)
    /// holding `count` items of `lane`.
    fn request(&self, lane: &K, body: Vec<u8>, count: usize) -> (String, RemotingCommand);

    /// The outcome of the request that carried `items` (in the order they were added);
    /// `elapsed` is the request's round trip. Called on a runtime thread: hand slow work off.
    fn done(&self, lane: &K, items: Vec<T>, elapsed: Duration, result: Result<RemotingCommand>);
}

/// Why [`Accumulator::add`] refused an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddError {
    /// `total_max_bytes` are held: wait for space (the item was not added).
    Full,
    /// The accumulator was closed.
    Closed,
}

/// Items of one lane that leave in one request.
struct Gathering<T> {
    /// Unique within the accumulator (see [`Added::batch`]).
    id: u64,
    body: Vec<u8>,
    items: Vec<T>,
}

/// Where [`Accumulator::add`] put an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Added {
    /// The batch it joined: while [`Accumulator::gathering`] names this batch, more items
    /// of the lane join it; once it names another (or none), this one is full or sent.
    pub batch: u64,
    /// The item went out at once, alone (its lane had nothing in flight).
    pub sent_alone: bool,
}

struct Lane<T> {
    waiting: VecDeque<Gathering<T>>,
    in_flight: bool,
    timer: bool,
}

impl<T> Default for Lane<T> {
    fn default() -> Self {
        Lane {
            waiting: VecDeque::new(),
            in_flight: false,
            timer: false,
        }
    }
}

struct State<K, T> {
    lanes: HashMap<K, Lane<T>>,
    held: usize,
    closed: bool,
    next_batch: u64,
}

struct Shared<K, T> {
    settings: BatchSettings,
    client: RemotingClient,
    runtime: Handle,
    sink: Arc<dyn BatchSink<K, T>>,
    state: Mutex<State<K, T>>,
    /// Signalled whenever bytes are released.
    released: Condvar,
}

/// Gathers items per lane and sends each lane's items in order, one request at a time.
pub struct Accumulator<K, T> {
    shared: Arc<Shared<K, T>>,
}

impl<K, T> Clone for Accumulator<K, T> {
    fn clone(&self) -> Self {
        Accumulator {
            shared: self.shared.clone(),
        }
    }
}

impl<K, T> Accumulator<K, T>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    T: Send + 'static,
{
    /// An accumulator whose requests go through `client` on `runtime`.
    pub fn new(
        settings: BatchSettings,
        client: RemotingClient,
        runtime: Handle,
        sink: Arc<dyn BatchSink<K, T>>,
    ) -> Self {
        Accumulator {
            shared: Arc::new(Shared {
                settings,
                client,
                runtime,
                sink,
                state: Mutex::new(State {
                    lanes: HashMap::new(),
                    held: 0,
                    closed: false,
                    next_batch: 0,
                }),
                released: Condvar::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<K, T>> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds an item of `size` bytes to `lane`: `write` appends its encoding to the request
    /// body being gathered. Never blocks; a refused item comes back with the reason.
    pub fn add(
        &self,
        lane: &K,
        size: usize,
        write: impl FnOnce(&mut Vec<u8>),
        item: T,
    ) -> std::result::Result<Added, (AddError, T)> {
        let settings = &self.shared.settings;
        let mut state = self.lock();
        if state.closed {
            return Err((AddError::Closed, item));
        }
        // An item larger than the whole allowance still goes, alone, once nothing is held.
        if state.held > 0 && state.held + size > settings.total_max_bytes {
            return Err((AddError::Full, item));
        }
        state.held += size;
        let id = state.next_batch;
        let l = state.lanes.entry(lane.clone()).or_default();
        let starts_new = match l.waiting.back() {
            None => true,
            Some(g) => !g.body.is_empty() && g.body.len() + size > settings.max_bytes,
        };
        if starts_new {
            l.waiting.push_back(Gathering {
                id,
                // Room for a few items at once: growing by doubling from one costs more.
                body: Vec::with_capacity(size.max(4096).min(settings.max_bytes.max(size))),
                items: Vec::new(),
            });
        }
        let g = l.waiting.back_mut().expect("a gathering batch");
        write(&mut g.body);
        g.items.push(item);
        let mut added = Added {
            batch: g.id,
            sent_alone: false,
        };
        if l.in_flight {
            state.next_batch += u64::from(starts_new);
            return Ok(added);
        }
        let front = l.waiting.front().expect("a gathering batch");
        let due = settings.max_delay.is_zero()
            || front.body.len() >= settings.max_bytes
            || l.waiting.len() > 1;
        if due {
            let batch = Self::take_front(l);
            added.sent_alone = batch.id == added.batch && batch.items.len() == 1;
            state.next_batch += u64::from(starts_new);
            drop(state);
            self.launch(lane.clone(), batch);
        } else {
            let start_timer = !l.timer;
            l.timer = true;
            state.next_batch += u64::from(starts_new);
            drop(state);
            if start_timer {
                let wait = settings.max_delay;
                let this = self.clone();
                let lane = lane.clone();
                self.shared.runtime.spawn(async move {
                    tokio::time::sleep(wait).await;
                    this.timer_fired(&lane);
                });
            }
        }
        Ok(added)
    }

    /// The batch of `lane` that new items join now (None: nothing is gathering).
    pub fn gathering(&self, lane: &K) -> Option<u64> {
        self.lock()
            .lanes
            .get(lane)
            .and_then(|l| l.waiting.back())
            .map(|g| g.id)
    }

    fn take_front(l: &mut Lane<T>) -> Gathering<T> {
        l.in_flight = true;
        l.waiting.pop_front().expect("a gathering batch")
    }

    fn timer_fired(&self, lane: &K) {
        let mut state = self.lock();
        let Some(l) = state.lanes.get_mut(lane) else {
            return;
        };
        l.timer = false;
        if l.in_flight {
            return;
        }
        if l.waiting.is_empty() {
            state.lanes.remove(lane);
            return;
        }
        let batch = Self::take_front(l);
        drop(state);
        self.launch(lane.clone(), batch);
    }

    fn launch(&self, lane: K, batch: Gathering<T>) {
        let this = self.clone();
        self.shared.runtime.spawn(async move {
            let bytes = batch.body.len();
            let count = batch.items.len();
            let (addr, request) = this.shared.sink.request(&lane, batch.body, count);
            let started = Instant::now();
            let result = this
                .shared
                .client
                .invoke(&addr, request, this.shared.settings.timeout)
                .await;
            this.shared
                .sink
                .done(&lane, batch.items, started.elapsed(), result);
            this.finished(lane, bytes);
        });
    }

    /// A lane's request ended: release its bytes and send what gathered meanwhile (it has
    /// waited a whole round trip already).
    fn finished(&self, lane: K, bytes: usize) {
        let mut state = self.lock();
        state.held = state.held.saturating_sub(bytes);
        let next = match state.lanes.get_mut(&lane) {
            Some(l) if !l.waiting.is_empty() => Some(Self::take_front(l)),
            Some(l) => {
                l.in_flight = false;
                if !l.timer {
                    state.lanes.remove(&lane);
                }
                None
            }
            None => None,
        };
        drop(state);
        self.shared.released.notify_all();
        if let Some(batch) = next {
            self.launch(lane, batch);
        }
    }

    /// Waits until `size` more bytes fit (or nothing is held), up to `timeout`; false when
    /// the time ran out or the accumulator closed.
    pub fn wait_for_space(&self, size: usize, timeout: Duration) -> bool {
        let total = self.shared.settings.total_max_bytes;
        self.wait_until(timeout, |state| {
            state.closed || state.held == 0 || state.held + size <= total
        })
        .is_some_and(|state| !state.closed)
    }

    /// Sends everything gathering now (ignoring `max_delay`) and waits up to `timeout` until
    /// nothing is held; true when everything was answered.
    pub fn flush(&self, timeout: Duration) -> bool {
        let mut ready = Vec::new();
        {
            let mut state = self.lock();
            for (lane, l) in state.lanes.iter_mut() {
                if !l.in_flight && !l.waiting.is_empty() {
                    ready.push((lane.clone(), Self::take_front(l)));
                }
            }
        }
        for (lane, batch) in ready {
            self.launch(lane, batch);
        }
        self.wait_until(timeout, |state| state.held == 0).is_some()
    }

    /// The state once `done` holds for it (checked whenever bytes are released), or None
    /// when `timeout` passed first.
    fn wait_until(
        &self,
        timeout: Duration,
        done: impl Fn(&State<K, T>) -> bool,
    ) -> Option<MutexGuard<'_, State<K, T>>> {
        let deadline = Instant::now() + timeout;
        let mut state = self.lock();
        while !done(&state) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            state = self
                .shared
                .released
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        Some(state)
    }

    /// Refuses further items and wakes anyone waiting for space; what is held still goes.
    pub fn close(&self) {
        self.lock().closed = true;
        self.shared.released.notify_all();
    }

    /// Bytes held, gathering and in flight.
    pub fn held(&self) -> usize {
        self.lock().held
    }
}
