//! `ProducerCore`: the native half of a `rocketpy.Producer` — auto-batched asynchronous sends
//! (`add`, see `batcher`) and direct synchronous sends (`send`, see `direct_send`), over the
//! lanes both share (`send_lanes`). Python picks the lane and owns retries and errors.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::types::PyType;
use rocketpy_client::{Accumulator, AddError, BatchSettings, Template, TopicLanes};
use rocketpy_protocol::message::batch::encode_batch_item;

use crate::batcher::Sink;
use crate::bulk_send;
use crate::client::RemotingClient;
use crate::direct_send::{DirectSend, SendOutcome};
use crate::errors::ClientError;
use crate::outgoing::Message;
use crate::process::{self, Owner};
use crate::send_answers::Answers;
use crate::send_lanes::{self, Lanes, Outgoing};
use crate::send_results::{FutureMaker, Pending, ResultMaker};
use crate::unique_id::UniqueIds;

/// A producer's native send paths.
#[pyclass(module = "rocketpy._native", frozen)]
pub struct ProducerCore {
    accumulator: Accumulator<u32, Pending>,
    lanes: Arc<Lanes>,
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
    /// `on_failed(addr, topic, broker_name, queue_id, response, error, items)` runs on the
    /// callback thread for each batched request the broker did not store (`response` its
    /// answer, or `error` the transport's), with the request's items as `(future, callback,
    /// uniq, message, fixed)` tuples to retry or fail; stored ones complete natively, each
    /// message getting its `result_type` (`SendResult`). `on_latency(broker_name, elapsed_s,
    /// failed)`, when given, learns every batched request's latency (fault avoidance).
    /// `future_type` (`SendFuture`) is made without running `__init__`: a bare instance.
    /// `statuses` maps the broker codes that mean "stored" to their `SendStatus`;
    /// `queue_type` is `MessageQueue`; `client_id` labels the client metrics.
    /// Messages with a body over `compress_over` bytes do not go natively (`add` returns
    /// None, `send` an unsent outcome).
    #[new]
    #[pyo3(signature = (client, group, default_topic, default_topic_queue_nums, on_failed, result_type, future_type, queue_type, statuses, client_id, unique_ids, compress_over, max_bytes=32768, max_delay_ms=0, total_max_bytes=33554432, timeout_ms=3000, on_latency=None))]
    #[allow(clippy::too_many_arguments)] // mirrors the Python signature
    fn new(
        py: Python<'_>,
        client: &RemotingClient,
        group: String,
        default_topic: String,
        default_topic_queue_nums: i32,
        on_failed: Py<PyAny>,
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
        on_latency: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let settings = BatchSettings {
            max_bytes: max_bytes.max(1),
            max_delay: Duration::from_millis(max_delay_ms),
            total_max_bytes: total_max_bytes.max(1),
            timeout: Duration::from_millis(timeout_ms.max(1)),
        };
        let template = Template {
            group,
            default_topic,
            default_topic_queue_nums,
        };
        let lanes = Arc::new(Lanes::default());
        let maker = Arc::new(ResultMaker::new(py, result_type));
        let answers = Arc::new(Answers {
            statuses,
            queue_type,
            client_id,
        });
        let sink = Arc::new(Sink {
            lanes: lanes.clone(),
            template: template.clone(),
            on_failed: Arc::new(on_failed),
            on_latency: on_latency.map(Arc::new),
            maker: maker.clone(),
            answers: answers.clone(),
        });
        let native = client.native();
        let runtime = native.runtime().clone();
        Ok(ProducerCore {
            accumulator: Accumulator::new(settings, native.clone(), runtime, sink),
            direct: DirectSend {
                client: native,
                template,
                results: maker,
                answers,
            },
            lanes,
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
        self.lanes.id(addr, broker_name, topic, queue_id)
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
    /// full. Returns the message's new future (a `future_type`) when added; None when it was
    /// not taken: `lane` None and the topic has no lanes (see `set_lanes`), or a message that
    /// cannot be batched (a body to compress, a delay: send it alone). Raises `ClientError`
    /// when the accumulator stayed full for `timeout_ms` or the producer was shut down.
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
        self.owner.check("producer")?;
        let sticky = match lane {
            Some(_) => None,
            None => Some(Self::topic_of(message)?),
        };
        let lane = match (lane, &sticky) {
            (Some(lane), _) => lane,
            (None, Some(topic)) => match self
                .topics
                .sticky(topic, |lane| self.accumulator.gathering(&lane))
            {
                Some(lane) => lane,
                None => return Ok(None),
            },
            (None, None) => return Ok(None),
        };
        send_lanes::lane(&self.lanes, lane)?;
        let Some(out) = Outgoing::read(message, self.unique_ids.get(), self.compress_over)? else {
            return Ok(None);
        };
        if out.delayed {
            return Ok(None);
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
            let refuse = |why: &str| -> PyResult<Option<Py<PyAny>>> {
                let topic = Self::topic_of(message)?;
                Err(ClientError::new_err(format!(
                    "async send to '{topic}' refused: {why}"
                )))
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
    /// reads over a direct connection when one is free). The `SendOutcome` holds its
    /// `SendResult` when stored; else the lane and unique id it went with and the broker's
    /// answer or the transport error; or no lane when it did not go: the topic has no lanes
    /// (`lane` None), or it must go from Python (a body to compress).
    fn send(
        &self,
        py: Python<'_>,
        lane: Option<u32>,
        message: &Bound<'_, PyAny>,
        timeout_ms: u64,
    ) -> PyResult<SendOutcome> {
        self.owner.check("producer")?;
        let lane_id = match lane {
            Some(lane) => lane,
            None => match self.topics.next(&Self::topic_of(message)?) {
                Some(lane) => lane,
                None => return Ok(SendOutcome::unsent()),
            },
        };
        let lane = send_lanes::lane(&self.lanes, lane_id)?;
        let Some(out) = Outgoing::read(message, self.unique_ids.get(), self.compress_over)? else {
            return Ok(SendOutcome::unsent());
        };
        let timeout = Duration::from_millis(timeout_ms.max(1));
        self.direct.send(py, lane_id, &lane, out, timeout)
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

    /// Sends rows of `segments` (each `(bodies, keys or None, the index of its first row)`,
    /// the columns lists or `ArrowColumn`s) natively in SEND_BATCH_MESSAGE requests of at most
    /// `max_request_bytes`, in turn over `lanes`, at most `window` in flight: for each
    /// `(segment, start, stop)` of `ranges`. Every message gets the encoded `properties`,
    /// its key and a new unique id. Waits (GIL released) for every answer; returns each
    /// chunk's outcome (see `bulk_send::Outcome`). Raises ValueError on a row it cannot
    /// send (nothing of that row's chunk went; earlier chunks did).
    #[pyo3(signature = (lanes, segments, ranges, properties, max_body, max_request_bytes=1048576, window=8, timeout_ms=3000))]
    #[allow(clippy::too_many_arguments)] // mirrors the Python signature
    fn send_many(
        &self,
        py: Python<'_>,
        lanes: Vec<u32>,
        segments: Vec<(Bound<'_, PyAny>, Option<Bound<'_, PyAny>>, usize)>,
        ranges: Vec<(usize, usize, usize)>,
        properties: &str,
        max_body: usize,
        max_request_bytes: usize,
        window: usize,
        timeout_ms: u64,
    ) -> PyResult<Vec<bulk_send::Outcome>> {
        self.owner.check("producer")?;
        crate::runtime::refuse_on_io_thread()?;
        let send = bulk_send::BulkSend {
            client: &self.direct.client,
            lanes: &self.lanes,
            template: &self.direct.template,
            unique_ids: self.unique_ids.get(),
            client_id: &self.direct.answers.client_id,
        };
        let limits = bulk_send::Limits {
            max_body,
            max_request_bytes: max_request_bytes.max(1),
            window: window.max(1),
            timeout: Duration::from_millis(timeout_ms.max(1)),
        };
        send.run(py, &lanes, segments, &ranges, properties, &limits)
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
