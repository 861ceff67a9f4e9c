//! What a handler answers (RocketMQ's `ControllerResult`): the response code, the response
//! header's fields, an optional body, a remark, and the events to replicate.
//!
//! What must stay true: the answer may be sent only after its events are committed and
//! applied (RocketMQ answers only if the append succeeded); a result with events and a
//! non-SUCCESS code does not occur except for the controller-triggered failed election
//! (2004), whose event clears the master. Header values are strings, as `extFields` carry
//! them; a field RocketMQ leaves `null` is absent from the map.

use std::collections::BTreeMap;

use rocketpy_protocol::code::response::SUCCESS;

use crate::event::Event;

/// A handler's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerResult {
    /// Response code: SUCCESS or one of `rocketpy_protocol::code::controller::response`.
    pub code: i32,
    /// Response header fields by their RocketMQ wire names ([`crate::request::field`]).
    pub header: BTreeMap<&'static str, String>,
    /// The response body (JSON), if any.
    pub body: Option<Vec<u8>>,
    /// The remark, if any (RocketMQ's text for errors).
    pub remark: Option<String>,
    /// Events to append to the replicated log before answering.
    pub events: Vec<Event>,
    /// Set when the answer is that a Raft wait ran out of time (the outcome is unknown); not
    /// sent, only counted (the controller's `request_handle_status="timeout"`).
    pub timed_out: bool,
}

impl Default for ControllerResult {
    fn default() -> Self {
        Self::success()
    }
}

impl ControllerResult {
    /// SUCCESS with nothing in it yet.
    pub fn success() -> Self {
        Self {
            code: SUCCESS,
            header: BTreeMap::new(),
            body: None,
            remark: None,
            events: Vec::new(),
            timed_out: false,
        }
    }

    /// Sets a header field.
    pub fn with(mut self, name: &'static str, value: impl ToString) -> Self {
        self.header.insert(name, value.to_string());
        self
    }

    /// Sets a header field if there is a value (RocketMQ leaves `null` fields out).
    pub fn with_opt(mut self, name: &'static str, value: Option<impl ToString>) -> Self {
        if let Some(v) = value {
            self.header.insert(name, v.to_string());
        }
        self
    }

    /// Sets the body.
    pub fn with_body(mut self, body: Vec<u8>) -> Self {
        self.body = Some(body);
        self
    }

    /// Adds an event.
    pub fn with_event(mut self, event: Event) -> Self {
        self.events.push(event);
        self
    }

    /// Sets the code and the remark.
    pub fn fail(mut self, code: i32, remark: impl Into<String>) -> Self {
        self.code = code;
        self.remark = Some(remark.into());
        self
    }

    /// Marks the answer as a timeout.
    pub fn mark_timed_out(mut self) -> Self {
        self.timed_out = true;
        self
    }

    /// Whether the code is SUCCESS.
    pub fn is_success(&self) -> bool {
        self.code == SUCCESS
    }

    /// A header field's value.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.header.get(name).map(String::as_str)
    }
}
