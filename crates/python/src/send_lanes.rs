//! What a producer's native send paths share: lanes (broker address, topic, queue) by
//! number, the SEND_MESSAGE header fields common to every request, and a `rocketpy.Message`
//! read into wire form (flag, body, properties with `UNIQ_KEY`) without running Python.

use std::sync::{Arc, OnceLock, RwLock};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyType};
use rocketpy_protocol::header::SendMessageRequestHeader;
use rocketpy_protocol::message::properties::{self, keys};

use crate::errors;
use crate::outgoing::Message;
use crate::unique_id::{now_millis, UniqueIds};

/// Where a lane's requests go.
pub struct Lane {
    pub addr: String,
    pub broker_name: String,
    pub topic: String,
    pub queue_id: i32,
    /// Its `MessageQueue`, made on first use.
    queue: OnceLock<Py<PyAny>>,
}

impl Lane {
    /// The lane's `MessageQueue(topic, broker_name, queue_id)` (made once, by `queue_type`).
    pub fn queue<'py>(
        &self,
        py: Python<'py>,
        queue_type: &Py<PyType>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if let Some(q) = self.queue.get() {
            return Ok(q.bind(py).clone());
        }
        let made = queue_type
            .bind(py)
            .call1((&self.topic, &self.broker_name, self.queue_id))?;
        Ok(self.queue.get_or_init(|| made.unbind()).bind(py).clone())
    }
}

/// Lanes by number: appended, never removed (a producer has one per queue it sends to and
/// broker address it knew).
#[derive(Default)]
struct LaneTable {
    by_id: Vec<Arc<Lane>>,
    ids: std::collections::HashMap<Arc<Lane>, u32>,
}

impl Lane {
    /// What makes two lanes the same: where they lead (the cached queue object aside).
    fn key(&self) -> (&str, &str, &str, i32) {
        (&self.addr, &self.broker_name, &self.topic, self.queue_id)
    }
}

impl PartialEq for Lane {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Lane {}

impl std::hash::Hash for Lane {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state)
    }
}

/// The lanes of one producer and the header fields all its requests share.
pub struct Template {
    lanes: RwLock<LaneTable>,
    pub group: String,
    pub default_topic: String,
    pub default_topic_queue_nums: i32,
}

impl Template {
    pub fn new(group: String, default_topic: String, default_topic_queue_nums: i32) -> Self {
        Template {
            lanes: Default::default(),
            group,
            default_topic,
            default_topic_queue_nums,
        }
    }

    /// The number of the lane (the same number for the same four).
    pub fn lane_id(&self, addr: String, broker_name: String, topic: String, queue_id: i32) -> u32 {
        let lane = Lane {
            addr,
            broker_name,
            topic,
            queue_id,
            queue: OnceLock::new(),
        };
        let mut table = self.lanes.write().unwrap_or_else(|e| e.into_inner());
        if let Some(&id) = table.ids.get(&lane) {
            return id;
        }
        let id = table.by_id.len() as u32;
        let lane = Arc::new(lane);
        table.by_id.push(lane.clone());
        table.ids.insert(lane, id);
        id
    }

    /// Lane `id`, or an error naming it when there is none.
    pub fn lane(&self, id: u32) -> PyResult<Arc<Lane>> {
        self.lanes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .by_id
            .get(id as usize)
            .cloned()
            .ok_or_else(|| errors::InvalidArgumentError::new_err(format!("no lane {id}")))
    }

    /// The header of a request to `lane`.
    pub fn header(
        &self,
        lane: &Lane,
        flag: i32,
        properties: Option<String>,
        batch: bool,
    ) -> SendMessageRequestHeader {
        SendMessageRequestHeader {
            producer_group: self.group.clone(),
            topic: lane.topic.clone(),
            default_topic: self.default_topic.clone(),
            default_topic_queue_nums: self.default_topic_queue_nums,
            queue_id: lane.queue_id,
            sys_flag: 0,
            born_timestamp: now_millis(),
            flag,
            properties,
            reconsume_times: Some(0),
            unit_mode: Some(false),
            max_reconsume_times: None,
            batch: Some(batch),
            broker_name: None,
        }
    }
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
    /// not `bytes`, or one over `compress_over` bytes (Python compresses it).
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
            delayed |= k == keys::DELAY_TIME_LEVEL;
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
