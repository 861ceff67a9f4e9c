//! The producer's auto-batching below the GIL (see `rocketpy_client::batch`): Python
//! adds one message at a time (`ProducerCore.add`); each lane (broker address, topic, queue)
//! leaves as one request (`rocketpy_client::requests`). A stored
//! answer completes its messages here, in the order they were added; a failed one reaches
//! Python once per request, on the callback thread, with its messages to retry or fail.

use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};
use rocketpy_client::{BatchSink, Template};
use rocketpy_protocol::code::request;
use rocketpy_protocol::RemotingCommand;

use crate::callbacks;
use crate::client::RemotingResponse;
use crate::client_metrics;
use crate::errors;
use crate::send_answers::{Answers, Stored};
use crate::send_lanes::{Lane, Lanes};
use crate::send_results::{Outcome, Pending, ResultMaker};

/// Builds a producer's batched requests and hands their answers to Python.
pub struct Sink {
    pub lanes: Arc<Lanes>,
    pub template: Template,
    /// `on_failed(addr, topic, broker_name, queue_id, response, error, items)`.
    pub on_failed: Arc<Py<PyAny>>,
    /// `on_latency(broker_name, elapsed_s, failed)`, for fault avoidance.
    pub on_latency: Option<Arc<Py<PyAny>>>,
    pub maker: Arc<ResultMaker>,
    pub answers: Arc<Answers>,
}

impl BatchSink<u32, Pending> for Sink {
    fn request(&self, lane: &u32, body: Vec<u8>, count: usize) -> (String, RemotingCommand) {
        // Lanes are only ever added, and items only enter through a lane that exists.
        let lane = self.lanes.get(*lane).expect("a known lane");
        (lane.addr.clone(), self.template.batch(&lane, body, count))
    }

    fn done(
        &self,
        lane: &u32,
        items: Vec<Pending>,
        elapsed: Duration,
        result: rocketpy_remoting::Result<RemotingCommand>,
    ) {
        let lane = self.lanes.get(*lane).expect("a known lane");
        let answers = self.answers.clone();
        let stored = matches!(&result, Ok(cmd) if answers.stored(cmd).is_some());
        let count = items.len() as u64;
        client_metrics::record(&answers.client_id, &lane.topic, elapsed, stored, count);
        let on_latency = self.on_latency.clone();
        let (on_failed, maker) = (self.on_failed.clone(), self.maker.clone());
        callbacks::submit(move |py| {
            if let Some(on_latency) = on_latency {
                let args = (lane.broker_name.as_str(), elapsed.as_secs_f64(), !stored);
                if let Err(err) = on_latency.bind(py).call1(args) {
                    err.write_unraisable(py, Some(on_latency.bind(py)));
                }
            }
            let result = match result {
                Ok(cmd) => match answers.stored(&cmd) {
                    Some(stored) => return complete(py, &lane, &answers, &maker, &stored, items),
                    None => Ok(cmd),
                },
                Err(e) => Err(e),
            };
            let (response, error) = match result {
                Ok(cmd) => {
                    match Py::new(py, RemotingResponse::new(request::SEND_MESSAGE_V2, cmd)) {
                        Ok(r) => (r.into_any(), py.None()),
                        Err(e) => (py.None(), e.into_value(py).into_any()),
                    }
                }
                Err(e) => (py.None(), errors::remoting(e).into_value(py).into_any()),
            };
            // Python retries or fails the messages under its policy.
            let items = match Pending::into_list(py, &lane.topic, items) {
                Ok(items) => items,
                Err(err) => return err.write_unraisable(py, Some(on_failed.bind(py))),
            };
            let args = (
                lane.addr.as_str(),
                lane.topic.as_str(),
                lane.broker_name.as_str(),
                lane.queue_id,
                response,
                error,
                &items,
            );
            if let Err(err) = on_failed.bind(py).call1(args) {
                // Nothing is lost silently: every message learns of the handler's failure.
                fail_listed(py, &items, &err);
                err.write_unraisable(py, Some(on_failed.bind(py)));
            }
        });
    }
}

/// Ends each `(future, callback, ...)` of `items` with `err` (see `Pending::fail`).
fn fail_listed(py: Python<'_>, items: &Bound<'_, PyList>, err: &PyErr) {
    for item in items.iter() {
        let Ok(tuple) = item.cast_into::<PyTuple>() else {
            continue;
        };
        if let (Ok(future), Ok(callback)) = (tuple.get_item(0), tuple.get_item(1)) {
            Pending::fail_parts(py, future.unbind(), callback.unbind(), err);
        }
    }
}

/// Completes the messages of a stored request, each with its `SendResult`.
fn complete(
    py: Python<'_>,
    lane: &Lane,
    answers: &Answers,
    maker: &ResultMaker,
    stored: &Stored<'_>,
    items: Vec<Pending>,
) {
    let queue = match stored.queue(py, lane, &answers.queue_type) {
        Ok(queue) => queue,
        Err(err) => {
            // Nothing is lost silently: every message learns of it.
            for item in items {
                item.fail(py, &err);
            }
            err.write_unraisable(py, None);
            return;
        }
    };
    let outcome = Outcome {
        status: stored.status.bind(py).clone(),
        queue,
        region: PyString::new(py, stored.answer.region()).into_any(),
        ids: stored
            .answer
            .msg_ids()
            .split(',')
            .map(str::to_owned)
            .collect(),
        first_offset: stored.answer.offset(),
    };
    if let Err(err) = maker.complete_all(py, &outcome, items) {
        err.write_unraisable(py, None);
    }
}
