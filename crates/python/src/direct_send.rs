//! A synchronous send of one message, natively from the `rocketpy.Message` to its
//! `SendResult`: the request is built here, this thread writes it and reads the answer over
//! a direct connection when one is free (`rocketpy_remoting::direct`), and the result is made
//! without running Python. Anything but a stored message goes back to Python, which owns the
//! retry policy and the errors (`Producer.send`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::types::PyString;
use rocketpy_client::Template;
use rocketpy_protocol::code::request;
use rocketpy_remoting::RemotingClient as NativeClient;

use crate::client::{invoke_blocking, RemotingResponse};
use crate::client_metrics;
use crate::errors;
use crate::send_answers::Answers;
use crate::send_lanes::{Lane, Outgoing};
use crate::send_results::ResultMaker;

/// A producer's direct sends.
pub struct DirectSend {
    pub client: NativeClient,
    pub template: Template,
    pub results: Arc<ResultMaker>,
    pub answers: Arc<Answers>,
}

/// How a direct send ended, as `ProducerCore.send` returns it (one type, read by its
/// fields): `result` when the broker stored the message; else, when it went (`lane` set),
/// the unique id it went with and the broker's answer or the transport error, for Python
/// to retry under its policy or raise; `lane` None when it did not go (see `send`).
#[pyclass(module = "rocketpy._native", frozen, get_all)]
pub struct SendOutcome {
    /// The `SendResult` of a stored message.
    pub result: Option<Py<PyAny>>,
    /// The lane the message went on; None when it did not go natively.
    pub lane: Option<u32>,
    /// The unique id (`UNIQ_KEY`) it went with.
    pub unique_id: Option<String>,
    /// The broker's answer when it was not "stored".
    pub response: Option<Py<RemotingResponse>>,
    /// The transport error when there was no answer.
    pub error: Option<Py<PyAny>>,
}

impl SendOutcome {
    /// The message did not go (no lanes known, or it must be sent from Python).
    pub fn unsent() -> Self {
        SendOutcome {
            result: None,
            lane: None,
            unique_id: None,
            response: None,
            error: None,
        }
    }

    fn stored(result: Py<PyAny>, lane: u32) -> Self {
        SendOutcome {
            result: Some(result),
            lane: Some(lane),
            ..Self::unsent()
        }
    }

    fn not_stored(
        lane: u32,
        uniq: String,
        response: Option<Py<RemotingResponse>>,
        error: Option<Py<PyAny>>,
    ) -> Self {
        SendOutcome {
            result: None,
            lane: Some(lane),
            unique_id: Some(uniq),
            response,
            error,
        }
    }
}

#[pymethods]
impl SendOutcome {
    /// Whether the message went natively and was not stored (retry or raise).
    #[getter]
    fn failed(&self) -> bool {
        self.lane.is_some() && self.result.is_none()
    }
}

impl DirectSend {
    /// Sends `out` on lane `lane_id` (`lane`) within `timeout`.
    pub fn send(
        &self,
        py: Python<'_>,
        lane_id: u32,
        lane: &Lane,
        out: Outgoing<'_>,
        timeout: Duration,
    ) -> PyResult<SendOutcome> {
        let body = Bytes::copy_from_slice(out.body.as_bytes());
        let cmd = self.template.single(lane, out.flag, out.properties, body);
        let started = Instant::now();
        let answer = invoke_blocking(py, &self.client, &lane.addr, cmd, timeout)?;
        let elapsed = started.elapsed();
        let resp = match answer {
            Ok(resp) => resp,
            Err(e) => {
                client_metrics::record(&self.answers.client_id, &lane.topic, elapsed, false, 1);
                let error = errors::remoting(e).into_value(py).into_any();
                return Ok(SendOutcome::not_stored(
                    lane_id,
                    out.uniq,
                    None,
                    Some(error),
                ));
            }
        };
        let answers = &self.answers;
        let Some(stored) = answers.stored(&resp) else {
            client_metrics::record(&answers.client_id, &lane.topic, elapsed, false, 1);
            let response = Py::new(py, RemotingResponse::new(request::SEND_MESSAGE_V2, resp))?;
            return Ok(SendOutcome::not_stored(
                lane_id,
                out.uniq,
                Some(response),
                None,
            ));
        };
        client_metrics::record(&answers.client_id, &lane.topic, elapsed, true, 1);
        let result = self.results.make(
            py,
            [
                stored.status.bind(py).clone(),
                PyString::new(py, &out.uniq).into_any(),
                PyString::new(py, stored.answer.msg_ids()).into_any(),
                stored.queue(py, lane, &answers.queue_type)?,
                stored.answer.offset().into_pyobject(py)?.into_any(),
                PyString::new(py, stored.answer.region()).into_any(),
                stored.transaction_id(py),
            ],
        )?;
        Ok(SendOutcome::stored(result.unbind(), lane_id))
    }
}
