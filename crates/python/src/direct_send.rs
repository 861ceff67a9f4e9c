//! A synchronous send of one message, natively from the `rocketpy.Message` to its
//! `SendResult`: the request is built here, this thread writes it and reads the answer over
//! a direct connection when one is free (`rocketpy_remoting::direct`), and the result is made
//! without running Python. Anything but a stored message goes back to Python, which owns the
//! retry policy and the errors (`Producer.send`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyType};
use rocketpy_protocol::code::request;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::RemotingClient as NativeClient;

use crate::client::{invoke_blocking, RemotingResponse};
use crate::client_metrics;
use crate::errors;
use crate::send_lanes::{Lane, Outgoing, Template};
use crate::send_results::ResultMaker;

/// A producer's direct sends.
pub struct DirectSend {
    pub client: NativeClient,
    pub template: Arc<Template>,
    pub results: Arc<ResultMaker>,
    /// Broker codes that mean "stored", with their `SendStatus`.
    pub statuses: HashMap<i32, Py<PyAny>>,
    /// `MessageQueue`.
    pub queue_type: Py<PyType>,
    /// For the client metrics.
    pub client_id: String,
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
                client_metrics::record(&self.client_id, &lane.topic, elapsed, false, 1);
                return Ok(Sent::Failed(Box::new(Failure {
                    uniq: out.uniq,
                    response: None,
                    error: Some(errors::remoting(e)),
                })));
            }
        };
        let Some(status) = self.statuses.get(&resp.code) else {
            client_metrics::record(&self.client_id, &lane.topic, elapsed, false, 1);
            return Ok(Sent::Failed(Box::new(Failure {
                uniq: out.uniq,
                response: Some(RemotingResponse::new(request::SEND_MESSAGE_V2, resp)),
                error: None,
            })));
        };
        client_metrics::record(&self.client_id, &lane.topic, elapsed, true, 1);
        // Read as leniently as the header spec reads them for Python (`Producer._result`).
        let field = |name: &str| resp.ext_fields.get(name).map(|v| v.trim());
        let queue_id = field("queueId").and_then(|v| v.parse::<i32>().ok());
        let queue = match queue_id {
            Some(id) if id != lane.queue_id => {
                self.queue_type
                    .bind(py)
                    .call1((&lane.topic, &lane.broker_name, id))?
            }
            _ => lane.queue(py, &self.queue_type)?,
        };
        let offset = field("queueOffset")
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(-1);
        let region = field("MSG_REGION")
            .filter(|r| !r.is_empty())
            .unwrap_or("DefaultRegion");
        let transaction_id = match resp.ext_fields.get("transactionId") {
            Some(t) => PyString::new(py, t).into_any(),
            None => py.None().into_bound(py),
        };
        let result = self.results.make(
            py,
            [
                status.bind(py).clone(),
                PyString::new(py, &out.uniq).into_any(),
                PyString::new(py, field("msgId").unwrap_or("")).into_any(),
                queue,
                offset.into_pyobject(py)?.into_any(),
                PyString::new(py, region).into_any(),
                transaction_id,
            ],
        )?;
        Ok(Sent::Stored(result.unbind()))
    }
}
