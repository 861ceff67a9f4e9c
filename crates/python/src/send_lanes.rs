//! The binding's side of a producer's lanes (`rocketpy_client::lanes`): each lane keeps its
//! `MessageQueue` once made, and a `rocketpy.Message` is read into wire form (flag, body,
//! properties with `UNIQ_KEY`) without running Python.

use std::sync::{Arc, OnceLock};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyType};
use rocketpy_client::Lanes as ClientLanes;
use rocketpy_protocol::message::properties::{self, keys};

use crate::errors;
use crate::outgoing::Message;
use crate::unique_id::UniqueIds;

/// A lane, with its `MessageQueue` made on first use.
pub type Lane = rocketpy_client::Lane<OnceLock<Py<PyAny>>>;

/// A producer's lanes.
pub type Lanes = ClientLanes<OnceLock<Py<PyAny>>>;

/// Lane `id` of `lanes`, or an error naming it when there is none.
pub fn lane(lanes: &Lanes, id: u32) -> PyResult<Arc<Lane>> {
    lanes
        .get(id)
        .ok_or_else(|| errors::InvalidArgumentError::new_err(format!("no lane {id}")))
}

/// `lane`'s `MessageQueue(topic, broker_name, queue_id)` (made once, by `queue_type`).
pub fn queue<'py>(
    py: Python<'py>,
    lane: &Lane,
    queue_type: &Py<PyType>,
) -> PyResult<Bound<'py, PyAny>> {
    if let Some(q) = lane.extra.get() {
        return Ok(q.bind(py).clone());
    }
    let made = queue_type
        .bind(py)
        .call1((&lane.topic, &lane.broker_name, lane.queue_id))?;
    Ok(lane.extra.get_or_init(|| made.unbind()).bind(py).clone())
}

/// A message read for sending as it is (no compression).
pub struct Outgoing<'py> {
    pub flag: i32,
    pub body: Bound<'py, PyBytes>,
    /// `k\x01v\x02...` with `UNIQ_KEY` last.
    pub properties: String,
    pub uniq: String,
    pub delayed: bool,
}

impl<'py> Outgoing<'py> {
    /// `message` (a `rocketpy.Message`) in wire form, taking a new unique id from `ids`
    /// unless it has one; None when it cannot go as it is: an empty body, a body that is
    /// not `bytes`, one over `compress_over` bytes (Python compresses it), or a message of a
    /// message group (Python picks the group's queue).
    pub fn read(
        message: &Bound<'py, PyAny>,
        ids: &UniqueIds,
        compress_over: usize,
    ) -> PyResult<Option<Self>> {
        let py = message.py();
        // A rocketpy.Message is read directly; anything else by attribute.
        let (body, props, flag) = match message.cast::<Message>() {
            Ok(m) => {
                let m = m.borrow();
                (
                    m.body_ref(py).clone(),
                    m.properties_ref(py).cloned(),
                    m.flag_value(),
                )
            }
            Err(_) => {
                let Ok(body) = message
                    .getattr(pyo3::intern!(py, "body"))?
                    .cast_into::<PyBytes>()
                else {
                    return Ok(None);
                };
                let props = message
                    .getattr(pyo3::intern!(py, "properties"))?
                    .cast_into::<PyDict>()?;
                let flag = message.getattr(pyo3::intern!(py, "flag"))?.extract()?;
                (body, Some(props), flag)
            }
        };
        let len = body.as_bytes().len();
        if len == 0 || len > compress_over {
            return Ok(None);
        }
        // Encoded straight from the dict (borrowed strings), UNIQ_KEY last.
        let mut uniq: Option<String> = None;
        let mut delayed = false;
        let mut out = String::with_capacity(64);
        for (k, v) in props.iter().flat_map(|d| d.iter()) {
            let k = k.cast_into::<PyString>()?;
            let v = v.cast_into::<PyString>()?;
            let (k, v) = (k.to_str()?, v.to_str()?);
            if k == keys::UNIQ_KEY {
                uniq = Some(v.to_owned());
                continue;
            }
            if k == keys::SHARDING_KEY {
                // A message group names its queue (the producer's `_choose`), not the next lane.
                return Ok(None);
            }
            // Batch requests deliver at once whatever timer property their messages carry.
            delayed |= matches!(
                k,
                keys::DELAY_TIME_LEVEL
                    | keys::TIMER_DELIVER_MS
                    | keys::TIMER_DELAY_SEC
                    | keys::TIMER_DELAY_MS
            );
            properties::check(k, v).map_err(errors::InvalidArgumentError::new_err)?;
            properties::push(&mut out, k, v);
        }
        let uniq = match uniq.filter(|u| !u.is_empty()) {
            Some(u) => u,
            None => ids.next_id(py)?,
        };
        properties::push(&mut out, keys::UNIQ_KEY, &uniq);
        if out.len() > i16::MAX as usize {
            return Err(errors::InvalidArgumentError::new_err(
                "the message's properties exceed 32767 bytes",
            ));
        }
        Ok(Some(Outgoing {
            flag,
            body,
            properties: out,
            uniq,
            delayed,
        }))
    }

    /// The message's size in a batch body.
    pub fn batch_size(&self) -> usize {
        22 + self.body.as_bytes().len() + self.properties.len()
    }
}
