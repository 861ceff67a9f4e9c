//! A broker's answer to a send, for Python: which codes mean the messages were stored (and
//! their `SendStatus`, from Python's table), and the shared fields of every `SendResult` of
//! the answer as Python objects (read by `rocketpy_client::SendAnswer`).

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{PyString, PyType};
use rocketpy_client::SendAnswer;
use rocketpy_protocol::RemotingCommand;

use crate::send_lanes::{self, Lane};

/// What turns a producer's answers into results.
pub struct Answers {
    /// Broker codes that mean "stored", with their `SendStatus`.
    pub statuses: HashMap<i32, Py<PyAny>>,
    /// `MessageQueue`.
    pub queue_type: Py<PyType>,
    /// For the client metrics.
    pub client_id: String,
}

/// An answer that says the messages were stored.
pub struct Stored<'a> {
    pub status: &'a Py<PyAny>,
    pub answer: SendAnswer<'a>,
}

impl Answers {
    /// `cmd` read as a stored answer, or None when its code says otherwise.
    pub fn stored<'a>(&'a self, cmd: &'a RemotingCommand) -> Option<Stored<'a>> {
        self.statuses.get(&cmd.code).map(|status| Stored {
            status,
            answer: SendAnswer::new(cmd),
        })
    }
}

impl Stored<'_> {
    /// The queue the messages went to: `lane`'s, unless the broker names another.
    pub fn queue<'py>(
        &self,
        py: Python<'py>,
        lane: &Lane,
        queue_type: &Py<PyType>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match self.answer.queue_id() {
            Some(id) if id != lane.queue_id => {
                queue_type
                    .bind(py)
                    .call1((&lane.topic, &lane.broker_name, id))
            }
            _ => send_lanes::queue(py, lane, queue_type),
        }
    }

    /// The transaction id (a half message's), or None.
    pub fn transaction_id<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        match self.answer.transaction_id() {
            Some(t) => PyString::new(py, t).into_any(),
            None => py.None().into_bound(py),
        }
    }
}
