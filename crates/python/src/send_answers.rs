//! Reading a broker's answer to a send natively: which codes mean the messages were stored
//! (and their `SendStatus`), and the fields every `SendResult` of the answer shares. The
//! fields are read as leniently as the header spec reads them for Python
//! (`Producer._result`): absent or unparsable ones take the same defaults.

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{PyString, PyType};
use rocketpy_protocol::RemotingCommand;

use crate::send_lanes::Lane;

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
    cmd: &'a RemotingCommand,
}

impl Answers {
    /// `cmd` read as a stored answer, or None when its code says otherwise.
    pub fn stored<'a>(&'a self, cmd: &'a RemotingCommand) -> Option<Stored<'a>> {
        self.statuses
            .get(&cmd.code)
            .map(|status| Stored { status, cmd })
    }
}

impl Stored<'_> {
    fn field(&self, name: &str) -> Option<&str> {
        self.cmd.ext_fields.get(name).map(|v| v.trim())
    }

    /// The queue the messages went to: `lane`'s, unless the broker names another.
    pub fn queue<'py>(
        &self,
        py: Python<'py>,
        lane: &Lane,
        queue_type: &Py<PyType>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match self.field("queueId").and_then(|v| v.parse::<i32>().ok()) {
            Some(id) if id != lane.queue_id => {
                queue_type
                    .bind(py)
                    .call1((&lane.topic, &lane.broker_name, id))
            }
            _ => lane.queue(py, queue_type),
        }
    }

    /// The queue offset of the (first) message, -1 when the broker gave none.
    pub fn offset(&self) -> i64 {
        self.field("queueOffset")
            .and_then(|v| v.parse().ok())
            .unwrap_or(-1)
    }

    /// The broker's region.
    pub fn region(&self) -> &str {
        self.field("MSG_REGION")
            .filter(|r| !r.is_empty())
            .unwrap_or("DefaultRegion")
    }

    /// The broker's message ids (comma-separated for a batch).
    pub fn msg_ids(&self) -> &str {
        self.field("msgId").unwrap_or("")
    }

    /// The transaction id (a half message's), or None.
    pub fn transaction_id<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        match self.cmd.ext_fields.get("transactionId") {
            Some(t) => PyString::new(py, t).into_any(),
            None => py.None().into_bound(py),
        }
    }
}
