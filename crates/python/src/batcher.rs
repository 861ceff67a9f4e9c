//! `SendAccumulator`: the producer's auto-batching below the GIL (see
//! `rocketpy_remoting::batch`). Python adds one message at a time; each lane (broker address,
//! topic, queue) leaves as SEND_BATCH_MESSAGE, or SEND_MESSAGE_V2 when it holds one message,
//! and each answer reaches Python once per request, on the callback thread, with the items
//! (opaque Python objects) in the order they were added.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyType};
use rocketpy_protocol::code::request;
use rocketpy_protocol::header::SendMessageRequestHeader;
use rocketpy_protocol::message::batch::encode_batch_item;
use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Accumulator, AddError, BatchSettings, BatchSink};

use crate::callbacks;
use crate::client::{RemotingClient, RemotingResponse};
use crate::errors;
use crate::process::{self, Owner};
use crate::send_results::{FutureMaker, Outcome, Pending, ResultMaker};
use crate::unique_id::{now_millis, UniqueIds};

/// Where a lane's requests go.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Lane {
    addr: String,
    broker_name: String,
    topic: String,
    queue_id: i32,
}

/// Lanes by number (`SendAccumulator.lane`): appended, never removed (a producer has one per
/// queue it sends to and broker address it knew).
#[derive(Default)]
struct LaneTable {
    by_id: Vec<Arc<Lane>>,
    ids: std::collections::HashMap<Arc<Lane>, u32>,
}

/// The header fields every request of one producer shares, and the lanes by number.
struct Sink {
    lanes: std::sync::RwLock<LaneTable>,
    group: String,
    default_topic: String,
    default_topic_queue_nums: i32,
    on_done: Arc<Py<PyAny>>,
    maker: Arc<ResultMaker>,
}

impl Sink {
    fn lane(&self, id: u32) -> Arc<Lane> {
        self.lanes.read().unwrap_or_else(|e| e.into_inner()).by_id[id as usize].clone()
    }

    fn header(
        &self,
        lane: &Lane,
        flag: i32,
        properties: Option<String>,
        batch: bool,
    ) -> SendMessageRequestHeader {
        SendMessageRequestHeader {
            producer_group: self.group.clone(),
            topic: lane.topic.clone(),
            default_topic: self.default_topic.clone(),
            default_topic_queue_nums: self.default_topic_queue_nums,
            queue_id: lane.queue_id,
            sys_flag: 0,
            born_timestamp: now_millis(),
            flag,
            properties,
            reconsume_times: Some(0),
            unit_mode: Some(false),
            max_reconsume_times: None,
            batch: Some(batch),
            broker_name: None,
        }
    }
}

/// The flag, body range and properties of one encoded batch item (the layout
/// `encode_batch_item` writes: `[total][magic][crc][flag][bodyLen][body][propLen][props]`).
fn split_item(item: &[u8]) -> Option<(i32, std::ops::Range<usize>, String)> {
    let be = |at: usize| {
        item.get(at..at + 4)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let flag = be(12)?;
    let body_len = usize::try_from(be(16)?).ok()?;
    let body = 20..20 + body_len;
    let props_len = item.get(body.end..body.end + 2)?;
    let props_len = u16::from_be_bytes([props_len[0], props_len[1]]) as usize;
    let props = item.get(body.end + 2..body.end + 2 + props_len)?;
    Some((flag, body, String::from_utf8_lossy(props).into_owned()))
}

impl BatchSink<u32, Pending> for Sink {
    fn request(&self, lane: &u32, body: Vec<u8>, count: usize) -> (String, RemotingCommand) {
        let lane = &*self.lane(*lane);
        // One message goes as a plain send: every broker takes it, and it is stored exactly
        // as a single send stores it.
        if count == 1 {
            if let Some((flag, range, props)) = split_item(&body) {
                let header = self.header(lane, flag, Some(props), false);
                let mut cmd =
                    RemotingCommand::request(request::SEND_MESSAGE_V2).with_header(&header);
                cmd.body = Bytes::from(body).slice(range);
                return (lane.addr.clone(), cmd);
            }
        }
        let header = self.header(lane, 0, None, true);
        let mut cmd = RemotingCommand::request(request::SEND_BATCH_MESSAGE).with_header(&header);
        cmd.body = Bytes::from(body);
        (lane.addr.clone(), cmd)
    }

    fn done(
        &self,
        lane: &u32,
        items: Vec<Pending>,
        elapsed: Duration,
        result: rocketpy_remoting::Result<RemotingCommand>,
    ) {
        let on_done = self.on_done.clone();
        let maker = self.maker.clone();
        let lane = self.lane(*lane);
        callbacks::submit(move |py| {
            let (response, error) = match result {
                Ok(cmd) => {
                    match Py::new(py, RemotingResponse::new(request::SEND_MESSAGE_V2, cmd)) {
                        Ok(r) => (r.into_any(), py.None()),
                        Err(e) => (py.None(), e.into_value(py).into_any()),
                    }
                }
                Err(e) => (py.None(), errors::remoting(e).into_value(py).into_any()),
            };
            let args = (
                lane.addr.as_str(),
                lane.topic.as_str(),
                lane.broker_name.as_str(),
                lane.queue_id,
                elapsed.as_secs_f64(),
                response,
                error,
                items.len(),
            );
            // Python reads the answer. On success what every message shares comes back and
            // the loop over the messages runs here; otherwise a function that takes them.
            let answer = match on_done.bind(py).call1(args) {
                Ok(answer) => answer,
                Err(err) => {
                    // Nothing is lost silently: every message learns of the failure.
                    for item in items {
                        item.fail(py, &err);
                    }
                    err.write_unraisable(py, Some(on_done.bind(py)));
                    return;
                }
            };
            let ended = if answer.is_callable() {
                Pending::into_list(py, items).and_then(|list| answer.call1((list,)).map(drop))
            } else {
                answer
                    .extract::<(
                        Bound<'_, PyAny>,
                        Bound<'_, PyAny>,
                        Bound<'_, PyAny>,
                        String,
                        i64,
                    )>()
                    .and_then(|(status, queue, region, ids, first_offset)| {
                        let outcome = Outcome {
                            status,
                            queue,
                            region,
                            ids: ids.split(',').map(str::to_owned).collect(),
                            first_offset,
                        };
                        maker.complete_all(py, &outcome, items)
                    })
            };
            if let Err(err) = ended {
                err.write_unraisable(py, Some(on_done.bind(py)));
            }
        });
    }
}

/// Gathers a producer's messages per queue and sends each queue's in order, one request at
/// a time (see `rocketpy_remoting::batch`).
#[pyclass(module = "rocketpy._native", frozen)]
pub struct SendAccumulator {
    inner: Accumulator<u32, Pending>,
    sink: Arc<Sink>,
    unique_ids: Py<UniqueIds>,
    futures: FutureMaker,
    compress_over: usize,
    owner: Owner,
}

#[pymethods]
impl SendAccumulator {
    /// `on_done(addr, topic, broker_name, queue_id, elapsed_s, response, error, items)` runs
    /// on the callback thread once per request; it returns None when it ended the items
    /// itself, or `(status, message_queue, region_id, msg_ids, first_offset)` for each
    /// item to get its `result_type` (`SendResult`) with `msg_ids` split at commas.
    /// `future_type` (`SendFuture`) lists the attributes of a new future in `_INITIAL`.
    /// Messages with a body over `compress_over` bytes are not taken (`add` returns "").
    #[new]
    #[pyo3(signature = (client, group, default_topic, default_topic_queue_nums, on_done, result_type, future_type, unique_ids, compress_over, max_bytes=32768, max_delay_ms=0, total_max_bytes=33554432, timeout_ms=3000))]
    #[allow(clippy::too_many_arguments)] // mirrors the Python signature
    fn new(
        py: Python<'_>,
        client: &RemotingClient,
        group: String,
        default_topic: String,
        default_topic_queue_nums: i32,
        on_done: Py<PyAny>,
        result_type: Py<PyType>,
        future_type: Py<PyType>,
        unique_ids: Py<UniqueIds>,
        compress_over: usize,
        max_bytes: usize,
        max_delay_ms: u64,
        total_max_bytes: usize,
        timeout_ms: u64,
    ) -> PyResult<Self> {
        let settings = BatchSettings {
            max_bytes: max_bytes.max(1),
            max_delay: Duration::from_millis(max_delay_ms),
            total_max_bytes: total_max_bytes.max(1),
            timeout: Duration::from_millis(timeout_ms.max(1)),
        };
        let sink = Arc::new(Sink {
            lanes: Default::default(),
            group,
            default_topic,
            default_topic_queue_nums,
            on_done: Arc::new(on_done),
            maker: Arc::new(ResultMaker::new(py, result_type)),
        });
        let native = client.native();
        let runtime = native.runtime().clone();
        Ok(SendAccumulator {
            inner: Accumulator::new(settings, native, runtime, sink.clone()),
            sink,
            unique_ids,
            futures: FutureMaker::new(py, future_type)?,
            compress_over,
            owner: Owner::current(),
        })
    }

    /// The number of the lane to queue `queue_id` of `topic` on broker `broker_name` at
    /// `addr` (the same number for the same four).
    fn lane(&self, addr: String, broker_name: String, topic: String, queue_id: i32) -> u32 {
        let lane = Lane {
            addr,
            broker_name,
            topic,
            queue_id,
        };
        let mut table = self.sink.lanes.write().unwrap_or_else(|e| e.into_inner());
        if let Some(&id) = table.ids.get(&lane) {
            return id;
        }
        let id = table.by_id.len() as u32;
        let lane = Arc::new(lane);
        table.by_id.push(lane.clone());
        table.ids.insert(lane, id);
        id
    }

    /// Adds `message` (a `rocketpy.Message`) to lane `lane` (see `lane()`) with its callback.
    /// Waits (GIL released) up to `timeout_ms` while the accumulator is full. Returns the
    /// message's new future (a `future_type`) when added; else a str: "" when the message
    /// cannot be batched (compressed or delayed: send it alone), or why it was refused (the
    /// caller raises it).
    #[pyo3(signature = (lane, message, callback, fixed, timeout_ms=3000))]
    fn add(
        &self,
        py: Python<'_>,
        lane: u32,
        message: &Bound<'_, PyAny>,
        callback: Py<PyAny>,
        fixed: bool,
        timeout_ms: u64,
    ) -> PyResult<Py<PyAny>> {
        let refuse = |why: &str| Ok(PyString::new(py, why).into_any().unbind());
        self.owner.check("producer")?;
        let known = self
            .sink
            .lanes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .by_id
            .len();
        if lane as usize >= known {
            return Err(errors::InvalidArgumentError::new_err(format!(
                "no lane {lane}"
            )));
        }
        let body_obj = message.getattr(pyo3::intern!(py, "body"))?;
        let Ok(body) = body_obj.cast::<PyBytes>() else {
            return refuse("");
        };
        let body = body.as_bytes();
        let properties = message.getattr(pyo3::intern!(py, "properties"))?;
        let properties = properties.cast::<PyDict>()?;
        if body.is_empty()
            || body.len() > self.compress_over
            || properties.contains(keys::DELAY_TIME_LEVEL)?
        {
            return refuse("");
        }
        let flag: i32 = message.getattr(pyo3::intern!(py, "flag"))?.extract()?;
        // Properties encoded straight from the dict (borrowed strings), UNIQ_KEY last.
        let mut uniq: Option<String> = None;
        let mut props = String::with_capacity(64);
        for (k, v) in properties.iter() {
            let k = k.cast_into::<PyString>()?;
            let v = v.cast_into::<PyString>()?;
            let (k, v) = (k.to_str()?, v.to_str()?);
            if k == keys::UNIQ_KEY {
                uniq = Some(v.to_owned());
            } else {
                properties::push(&mut props, k, v);
            }
        }
        let uniq = match uniq.filter(|u| !u.is_empty()) {
            Some(u) => u,
            None => self.unique_ids.get().next_id(py)?,
        };
        properties::push(&mut props, keys::UNIQ_KEY, &uniq);
        if props.len() > i16::MAX as usize {
            return Err(errors::InvalidArgumentError::new_err(
                "the message's properties exceed 32767 bytes",
            ));
        }
        let size = 22 + body.len() + props.len();
        let deadline = Instant::now() + Duration::from_millis(timeout_ms);
        let future = self.futures.make(py)?;
        let mut item = Pending {
            future: future.clone_ref(py),
            callback,
            uniq,
            message: message.clone().unbind(),
            fixed,
        };
        loop {
            let write = |out: &mut Vec<u8>| {
                // Cannot fail: the lengths were checked above.
                let _ = encode_batch_item(out, flag, body, &props);
            };
            let refused = match self.inner.add(&lane, size, write, item) {
                Ok(()) => return Ok(future),
                Err((refused, back)) => {
                    item = back;
                    refused
                }
            };
            if refused == AddError::Closed {
                return refuse("the producer was shut down");
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let inner = &self.inner;
            if !process::detach(py, || inner.wait_for_space(size, left)) {
                return refuse(&format!(
                    "the producer holds total_batch_max_bytes of unsent messages and none \
                     was answered within {timeout_ms} ms"
                ));
            }
        }
    }

    /// Sends whatever is gathering and waits (GIL released) up to `timeout_ms` until every
    /// message added was answered; False when the time ran out.
    fn flush(&self, py: Python<'_>, timeout_ms: u64) -> bool {
        if !self.owner.is_current() {
            return true;
        }
        let inner = &self.inner;
        process::detach(py, || inner.flush(Duration::from_millis(timeout_ms)))
    }

    /// Refuses further messages (those held still go).
    fn close(&self) {
        self.inner.close();
    }

    /// Bytes of messages held: gathering and in flight.
    #[getter]
    fn held_bytes(&self) -> usize {
        self.inner.held()
    }
}
