//! `ProducerCore`: the native half of a `rocketpy.Producer` — auto-batched asynchronous sends
//! (`add`, see `batcher`) and direct synchronous sends (`send`, see `direct_send`), over the
//! lanes both share (`send_lanes`). Python picks the lane and owns retries and errors.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple, PyType};
use rocketpy_protocol::message::batch::encode_batch_item;
use rocketpy_remoting::{Accumulator, AddError, BatchSettings};

use crate::batcher::Sink;
use crate::client::RemotingClient;
use crate::direct_send::{DirectSend, Failure, Sent};
use crate::outgoing::Message;
use crate::process::{self, Owner};
use crate::send_answers::Answers;
use crate::send_lanes::{Outgoing, Template};
use crate::send_results::{FutureMaker, Pending, ResultMaker};
use crate::topic_lanes::TopicLanes;
use crate::unique_id::UniqueIds;

/// A producer's native send paths.
#[pyclass(module = "rocketpy._native", frozen)]
pub struct ProducerCore {
    accumulator: Accumulator<u32, Pending>,
    template: Arc<Template>,
    /// Per topic, the lanes of its write queues (set by Python from the route), for sends
    /// that name no lane.
    topics: TopicLanes,
    direct: DirectSend,
    unique_ids: Py<UniqueIds>,
    futures: FutureMaker,
    compress_over: usize,
    owner: Owner,
}

impl ProducerCore {
    /// `message`'s topic.
    fn topic_of(message: &Bound<'_, PyAny>) -> PyResult<String> {
        Ok(match message.cast::<Message>() {
            Ok(m) => m.borrow().topic_ref(message.py()).to_str()?.to_owned(),
            Err(_) => message
                .getattr(pyo3::intern!(message.py(), "topic"))?
                .extract()?,
        })
    }
}

#[pymethods]
impl ProducerCore {
    /// `on_done(addr, topic, broker_name, queue_id, elapsed_s, response, error, items)` runs
    /// on the callback thread once per batched request; it returns None when it ended the
    /// items itself, or `(status, message_queue, region_id, msg_ids, first_offset)` for each
    /// item to get its `result_type` (`SendResult`) with `msg_ids` split at commas.
    /// `future_type` (`SendFuture`) is made without running `__init__`: a bare instance.
    /// `statuses` maps the broker codes that mean "stored" to their `SendStatus`;
    /// `queue_type` is `MessageQueue`; `client_id` labels the client metrics. With
    /// `stored_natively`, a batched request whose answer says stored completes its messages
    /// without calling `on_done` (which then sees only failures).
    /// Messages with a body over `compress_over` bytes are not taken (`add` and `send`
    /// return "").
    #[new]
    #[pyo3(signature = (client, group, default_topic, default_topic_queue_nums, on_done, result_type, future_type, queue_type, statuses, client_id, unique_ids, compress_over, max_bytes=32768, max_delay_ms=0, total_max_bytes=33554432, timeout_ms=3000, stored_natively=true))]
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
        queue_type: Py<PyType>,
        statuses: HashMap<i32, Py<PyAny>>,
        client_id: String,
        unique_ids: Py<UniqueIds>,
        compress_over: usize,
        max_bytes: usize,
        max_delay_ms: u64,
        total_max_bytes: usize,
        timeout_ms: u64,
        stored_natively: bool,
    ) -> PyResult<Self> {
        let settings = BatchSettings {
            max_bytes: max_bytes.max(1),
            max_delay: Duration::from_millis(max_delay_ms),
            total_max_bytes: total_max_bytes.max(1),
            timeout: Duration::from_millis(timeout_ms.max(1)),
        };
        let template = Arc::new(Template::new(
            group,
            default_topic,
            default_topic_queue_nums,
        ));
        let maker = Arc::new(ResultMaker::new(py, result_type));
        let answers = Arc::new(Answers {
            statuses,
            queue_type,
            client_id,
        });
        let sink = Arc::new(Sink {
            template: template.clone(),
            on_done: Arc::new(on_done),
            maker: maker.clone(),
            answers: stored_natively.then(|| answers.clone()),
        });
        let native = client.native();
        let runtime = native.runtime().clone();
        Ok(ProducerCore {
            accumulator: Accumulator::new(settings, native.clone(), runtime, sink),
            direct: DirectSend {
                client: native,
                template: template.clone(),
                results: maker,
                answers,
            },
            template,
            topics: TopicLanes::default(),
            unique_ids,
            futures: FutureMaker::new(future_type),
            compress_over,
            owner: Owner::current(),
        })
    }

    /// The number of the lane to queue `queue_id` of `topic` on broker `broker_name` at
    /// `addr` (the same number for the same four).
    fn lane(&self, addr: String, broker_name: String, topic: String, queue_id: i32) -> u32 {
        self.template.lane_id(addr, broker_name, topic, queue_id)
    }

    /// The lanes that sends of `topic` naming no lane take in turn (from its route).
    fn set_lanes(&self, topic: String, lanes: Vec<u32>) {
        self.topics.set(topic, lanes);
    }

    /// Forgets `topic`'s lanes (its route changed, or a send to it failed).
    fn forget_lanes(&self, topic: &str) {
        self.topics.forget(topic);
    }

    /// Adds `message` (a `rocketpy.Message`) to lane `lane` (see `lane()`) with its callback,
    /// for auto-batching. Waits (GIL released) up to `timeout_ms` while the accumulator is
    /// full. Returns the message's new future (a `future_type`) when added; else a str: ""
    /// when the message cannot be batched (compressed or delayed: send it alone), or why it
    /// was refused (the caller raises it).
    /// With `lane` None, the message's topic's next lane (see `set_lanes`); None comes back
    /// when the topic has none.
    #[pyo3(signature = (lane, message, callback, fixed, timeout_ms=3000))]
    fn add(
        &self,
        py: Python<'_>,
        lane: Option<u32>,
        message: &Bound<'_, PyAny>,
        callback: Py<PyAny>,
        fixed: bool,
        timeout_ms: u64,
    ) -> PyResult<Option<Py<PyAny>>> {
        let refuse = |why: &str| Ok(Some(PyString::new(py, why).into_any().unbind()));
        self.owner.check("producer")?;
        let sticky = match lane {
            Some(_) => None,
            None => Some(Self::topic_of(message)?),
        };
        let lane = match (lane, &sticky) {
            (Some(lane), _) => lane,
            (None, Some(topic)) => match self.topics.sticky(topic, &self.accumulator) {
                Some(lane) => lane,
                None => return Ok(None),
            },
            (None, None) => return Ok(None),
        };
        self.template.lane(lane)?;
        let Some(out) = Outgoing::read(message, self.unique_ids.get(), self.compress_over)? else {
            return refuse("");
        };
        if out.delayed {
            return refuse("");
        }
        let size = out.batch_size();
        let deadline = Instant::now() + Duration::from_millis(timeout_ms);
        let future = self.futures.make(py)?;
        let (flag, body, props) = (out.flag, out.body.as_bytes(), out.properties.as_str());
        let mut item = Pending {
            future: future.clone_ref(py),
            callback,
            uniq: out.uniq.clone(),
            body: out.body.clone().unbind(),
            flag,
            properties: out.properties.clone(),
            fixed,
        };
        loop {
            let write = |buf: &mut Vec<u8>| {
                // Cannot fail: Outgoing::read checked the lengths.
                let _ = encode_batch_item(buf, flag, body, props);
            };
            let refused = match self.accumulator.add(&lane, size, write, item) {
                Ok(added) => {
                    if let Some(topic) = &sticky {
                        self.topics.added(topic, lane, added);
                    }
                    return Ok(Some(future));
                }
                Err((refused, back)) => {
                    item = back;
                    refused
                }
            };
            if refused == AddError::Closed {
                return refuse("the producer was shut down");
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let accumulator = &self.accumulator;
            if !process::detach(py, || accumulator.wait_for_space(size, left)) {
                return refuse(&format!(
                    "the producer holds total_batch_max_bytes of unsent messages and none \
                     was answered within {timeout_ms} ms"
                ));
            }
        }
    }

    /// Sends `message` alone on lane `lane` (None: its topic's next lane, see `set_lanes`)
    /// and waits up to `timeout_ms` for the broker (GIL released; this thread writes and
    /// reads over a direct connection when one is free). Returns its `SendResult` when
    /// stored; None when the topic has no lanes; "" when it cannot go this way (a body to
    /// compress: send it from Python); else `(lane, uniq, response, error)`: the lane and
    /// unique id it was sent with and the broker's answer, or the transport error.
    fn send(
        &self,
        py: Python<'_>,
        lane: Option<u32>,
        message: &Bound<'_, PyAny>,
        timeout_ms: u64,
    ) -> PyResult<Option<Py<PyAny>>> {
        self.owner.check("producer")?;
        let lane_id = match lane {
            Some(lane) => lane,
            None => match self.topics.next(&Self::topic_of(message)?) {
                Some(lane) => lane,
                None => return Ok(None),
            },
        };
        let lane = self.template.lane(lane_id)?;
        let Some(out) = Outgoing::read(message, self.unique_ids.get(), self.compress_over)? else {
            return Ok(Some(PyString::new(py, "").into_any().unbind()));
        };
        let timeout = Duration::from_millis(timeout_ms.max(1));
        Ok(Some(match self.direct.send(py, &lane, out, timeout)? {
            Sent::Stored(result) => result,
            Sent::Failed(failure) => {
                let Failure {
                    uniq,
                    response,
                    error,
                } = *failure;
                let response = match response {
                    Some(r) => Py::new(py, r)?.into_any(),
                    None => py.None(),
                };
                let error = match error {
                    Some(e) => e.into_value(py).into_any(),
                    None => py.None(),
                };
                let lane = lane_id.into_pyobject(py)?.into_any().unbind();
                let uniq = PyString::new(py, &uniq).into_any().unbind();
                PyTuple::new(py, [lane, uniq, response, error])?
                    .into_any()
                    .unbind()
            }
        }))
    }

    /// Sends whatever is gathering and waits (GIL released) up to `timeout_ms` until every
    /// message added was answered; False when the time ran out.
    fn flush(&self, py: Python<'_>, timeout_ms: u64) -> bool {
        if !self.owner.is_current() {
            return true;
        }
        let accumulator = &self.accumulator;
        process::detach(py, || accumulator.flush(Duration::from_millis(timeout_ms)))
    }

    /// Refuses further messages (those held still go).
    fn close(&self) {
        self.accumulator.close();
    }

    /// Bytes of messages held: gathering and in flight.
    #[getter]
    fn held_bytes(&self) -> usize {
        self.accumulator.held()
    }
}
