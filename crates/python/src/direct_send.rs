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
use rocketpy_protocol::code::request;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::RemotingClient as NativeClient;

use crate::client::{invoke_blocking, RemotingResponse};
use crate::client_metrics;
use crate::errors;
use crate::send_answers::Answers;
use crate::send_lanes::{Lane, Outgoing, Template};
use crate::send_results::ResultMaker;

/// A producer's direct sends.
pub struct DirectSend {
    pub client: NativeClient,
    pub template: Arc<Template>,
    pub results: Arc<ResultMaker>,
    pub answers: Arc<Answers>,
}

/// How a direct send ended.
pub enum Sent {
    /// The broker stored the message: its `SendResult`.
    Stored(Py<PyAny>),
    /// It did not (an answer other than "stored", or no answer).
    Failed(Box<Failure>),
}

/// A direct send that did not store its message: its unique id, and the answer or the
/// error, for Python to retry or raise.
pub struct Failure {
    pub uniq: String,
    pub response: Option<RemotingResponse>,
    pub error: Option<PyErr>,
}

impl DirectSend {
    /// Sends `out` on `lane` within `timeout`.
    pub fn send(
        &self,
        py: Python<'_>,
        lane: &Lane,
        out: Outgoing<'_>,
        timeout: Duration,
    ) -> PyResult<Sent> {
        let header = self
            .template
            .header(lane, out.flag, Some(out.properties), false);
        let mut cmd = RemotingCommand::request(request::SEND_MESSAGE_V2).with_header(&header);
        cmd.body = Bytes::copy_from_slice(out.body.as_bytes());
        let started = Instant::now();
        let answer = invoke_blocking(py, &self.client, &lane.addr, cmd, timeout)?;
        let elapsed = started.elapsed();
        let resp = match answer {
            Ok(resp) => resp,
            Err(e) => {
                client_metrics::record(&self.answers.client_id, &lane.topic, elapsed, false, 1);
                return Ok(Sent::Failed(Box::new(Failure {
                    uniq: out.uniq,
                    response: None,
                    error: Some(errors::remoting(e)),
                })));
            }
        };
        let answers = &self.answers;
        let Some(stored) = answers.stored(&resp) else {
            client_metrics::record(&answers.client_id, &lane.topic, elapsed, false, 1);
            return Ok(Sent::Failed(Box::new(Failure {
                uniq: out.uniq,
                response: Some(RemotingResponse::new(request::SEND_MESSAGE_V2, resp)),
                error: None,
            })));
        };
        client_metrics::record(&answers.client_id, &lane.topic, elapsed, true, 1);
        let result = self.results.make(
            py,
            [
                stored.status.bind(py).clone(),
                PyString::new(py, &out.uniq).into_any(),
                PyString::new(py, stored.msg_ids()).into_any(),
                stored.queue(py, lane, &answers.queue_type)?,
                stored.offset().into_pyobject(py)?.into_any(),
                PyString::new(py, stored.region()).into_any(),
                stored.transaction_id(py),
            ],
        )?;
        Ok(Sent::Stored(result.unbind()))
    }
}
