//! `Message` (exported as `rocketpy.Message`): a message to send, as a native object.
//!
//! Why native: applications make one per send, and as a Python class its constructor cost
//! more than the rest of an auto-batched send, and every instance was one more object for
//! the garbage collector to visit while its send was in flight. This one is made in one
//! allocation, is not tracked by the collector (it holds only a str, bytes, an int and a
//! dict of str), and the producer reads its fields without attribute look-ups.
//!
//! The properties dict is made on first use: most messages only carry the ids the producer
//! adds when sending.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use rocketpy_protocol::message::properties::keys;

/// A message to send.
///
/// Args:
///     topic: the topic (1 to 127 characters of letters, digits, ``%``, ``|``, ``_``, ``-``).
///     body: the payload (``bytes``; ``str`` is encoded as UTF-8; ``bytearray`` and
///         ``memoryview`` are copied).
///     tags: one tag, used for broker-side filtering (``subscribe(topic, "TagA || TagB")``).
///     keys: a key or several (a list, or one space-separated string), indexed for look-up.
///     properties: user properties; names and values must not contain the separators
///         ``\x01``/``\x02`` (sending such a message raises ``InvalidArgumentError``).
///     flag: an application-defined integer stored with the message.
///     delay_level: deliver after the broker's delay level N (1 = 1 s ... 18 = 2 h); 0 = now.
///     delivery_timestamp: deliver at this time (ms since the epoch; RocketMQ 5.x timer
///         messages: any time up to the broker's ``timerMaxDelaySec`` ahead). Not with
///         ``delay_level`` (one delay) nor ``message_group`` (5.x: FIFO or delayed, not both).
///     message_group: the 5.x FIFO message group: the producer sends every message of a
///         group to the same queue, so consumers see a group's messages in send order.
#[pyclass(module = "rocketpy._native", subclass)]
pub struct Message {
    topic: Py<PyString>,
    body: Py<PyBytes>,
    flag: i32,
    /// None until used (no property set, none asked for).
    properties: Option<Py<PyDict>>,
}

impl Message {
    /// The topic.
    pub fn topic_ref<'py>(&self, py: Python<'py>) -> &Bound<'py, PyString> {
        self.topic.bind(py)
    }

    /// The body.
    pub fn body_ref<'py>(&self, py: Python<'py>) -> &Bound<'py, PyBytes> {
        self.body.bind(py)
    }

    /// The flag.
    pub fn flag_value(&self) -> i32 {
        self.flag
    }

    /// The properties, when any were set (None: none).
    pub fn properties_ref<'py>(&self, py: Python<'py>) -> Option<&Bound<'py, PyDict>> {
        self.properties.as_ref().map(|d| d.bind(py))
    }

    /// A message of `topic` made again from what was sent: its body, flag and encoded
    /// properties (`k\x01v\x02...`).
    pub fn rebuilt(
        py: Python<'_>,
        topic: &str,
        body: Py<PyBytes>,
        flag: i32,
        properties: &str,
    ) -> PyResult<Py<Message>> {
        let d = PyDict::new(py);
        for (k, v) in rocketpy_protocol::message::properties::pairs(properties) {
            d.set_item(k, v)?;
        }
        Py::new(
            py,
            Message {
                topic: PyString::new(py, topic).unbind(),
                body,
                flag,
                properties: Some(d.unbind()),
            },
        )
    }

    fn dict<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyDict> {
        self.properties
            .get_or_insert_with(|| PyDict::new(py).unbind())
            .bind(py)
            .clone()
    }

    fn get(&self, py: Python<'_>, name: &str) -> PyResult<Option<String>> {
        match self.properties_ref(py) {
            Some(d) => d.get_item(name)?.map(|v| v.extract()).transpose(),
            None => Ok(None),
        }
    }

    fn set(&mut self, py: Python<'_>, name: &str, value: Option<&str>) -> PyResult<()> {
        match value {
            Some(v) => self.dict(py).set_item(name, v),
            None => match self.properties_ref(py) {
                Some(d) if d.contains(name)? => d.del_item(name),
                _ => Ok(()),
            },
        }
    }
}

/// A message given both delays: which one wins would be a guess (RocketMQ's broker takes the
/// delay level), so the message is refused.
fn both_delays() -> PyErr {
    pyo3::exceptions::PyValueError::new_err(
        "a message has delay_level or delivery_timestamp, not both: keep delivery_timestamp \
         to deliver at any time, or delay_level for one of the broker's delay levels",
    )
}

/// A message both grouped and timed: RocketMQ 5.x refuses it (a FIFO group's order cannot
/// hold while one of its messages waits in the timer).
fn grouped_and_timed() -> PyErr {
    pyo3::exceptions::PyValueError::new_err(
        "a message has message_group or delivery_timestamp, not both (RocketMQ 5.x: a message \
         is FIFO or delayed): keep message_group for ordering, or delivery_timestamp for a delay",
    )
}

/// What `__getnewargs_ex__` returns: positional arguments (topic, body) and keywords.
type NewArgs<'py> = ((Py<PyString>, Py<PyBytes>), Bound<'py, PyDict>);

/// `dict(items)`: a new dict of a mapping or of pairs.
fn new_dict<'py>(items: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    Ok(items
        .py()
        .get_type::<PyDict>()
        .call1((items,))?
        .cast_into::<PyDict>()?)
}

/// `body` as bytes: the same object for bytes, UTF-8 for str, a copy of anything else that
/// `bytes()` takes.
fn to_bytes<'py>(body: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    if let Ok(b) = body.cast::<PyBytes>() {
        return Ok(b.clone());
    }
    if let Ok(s) = body.cast::<PyString>() {
        return Ok(PyBytes::new(body.py(), s.to_str()?.as_bytes()));
    }
    Ok(body
        .py()
        .get_type::<PyBytes>()
        .call1((body,))?
        .cast_into::<PyBytes>()?)
}

#[pymethods]
impl Message {
    #[new]
    #[pyo3(signature = (topic, body, tags=None, keys=None, properties=None, *, flag=0, delay_level=0, delivery_timestamp=None, message_group=None))]
    #[allow(clippy::too_many_arguments)] // mirrors the Python signature
    fn new(
        py: Python<'_>,
        topic: Bound<'_, PyString>,
        body: &Bound<'_, PyAny>,
        tags: Option<&str>,
        keys: Option<&Bound<'_, PyAny>>,
        properties: Option<&Bound<'_, PyAny>>,
        flag: i32,
        delay_level: i64,
        delivery_timestamp: Option<i64>,
        message_group: Option<&str>,
    ) -> PyResult<Self> {
        let mut m = Message {
            topic: topic.unbind(),
            body: to_bytes(body)?.unbind(),
            flag,
            properties: None,
        };
        if let Some(props) = properties.filter(|p| p.is_truthy().unwrap_or(false)) {
            m.properties = Some(new_dict(props)?.unbind());
        }
        if let Some(t) = tags.filter(|t| !t.is_empty()) {
            m.set(py, keys::TAGS, Some(t))?;
        }
        if let Some(k) = keys.filter(|k| k.is_truthy().unwrap_or(false)) {
            m.set_keys(py, Some(k))?;
        }
        if delay_level != 0 {
            m.set_delay_level(py, delay_level)?;
        }
        if delivery_timestamp.is_some() {
            m.set_delivery_timestamp(py, delivery_timestamp)?;
        }
        if message_group.is_some() {
            m.set_message_group(py, message_group)?;
        }
        Ok(m)
    }

    /// The topic.
    #[getter]
    fn topic(&self, py: Python<'_>) -> Py<PyString> {
        self.topic.clone_ref(py)
    }

    #[setter]
    fn set_topic(&mut self, topic: Bound<'_, PyString>) {
        self.topic = topic.unbind();
    }

    /// The payload.
    #[getter]
    fn body(&self, py: Python<'_>) -> Py<PyBytes> {
        self.body.clone_ref(py)
    }

    #[setter]
    fn set_body(&mut self, body: &Bound<'_, PyAny>) -> PyResult<()> {
        self.body = to_bytes(body)?.unbind();
        Ok(())
    }

    /// The application-defined flag.
    #[getter]
    fn flag(&self) -> i32 {
        self.flag
    }

    #[setter]
    fn set_flag(&mut self, flag: i32) {
        self.flag = flag;
    }

    /// The properties (names and values are str); changes to the dict change the message.
    #[getter]
    fn properties<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyDict> {
        self.dict(py)
    }

    #[setter]
    fn set_properties(&mut self, properties: &Bound<'_, PyAny>) -> PyResult<()> {
        self.properties = Some(new_dict(properties)?.unbind());
        Ok(())
    }

    /// The TAGS property.
    #[getter]
    fn tags(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.get(py, keys::TAGS)
    }

    #[setter]
    fn set_tags(&mut self, py: Python<'_>, tags: Option<&str>) -> PyResult<()> {
        self.set(py, keys::TAGS, tags)
    }

    /// The KEYS property: keys separated by spaces (set a str or a list of keys).
    #[getter]
    fn keys(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.get(py, keys::KEYS)
    }

    #[setter]
    fn set_keys(&mut self, py: Python<'_>, keys: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let joined = match keys {
            None => None,
            Some(k) => match k.cast::<PyString>() {
                Ok(s) => Some(s.to_str()?.to_owned()),
                Err(_) => Some(
                    k.try_iter()?
                        .map(|item| item?.extract::<String>())
                        .collect::<PyResult<Vec<_>>>()?
                        .join(" "),
                ),
            },
        };
        self.set(py, keys::KEYS, joined.as_deref())
    }

    /// The delay level (0 = none).
    #[getter]
    fn delay_level(&self, py: Python<'_>) -> PyResult<i64> {
        match self.get(py, keys::DELAY_TIME_LEVEL)? {
            Some(v) => v.trim().parse().map_err(|_| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "delay level {v:?} is not a number"
                ))
            }),
            None => Ok(0),
        }
    }

    #[setter]
    fn set_delay_level(&mut self, py: Python<'_>, level: i64) -> PyResult<()> {
        if level > 0 && self.get(py, keys::TIMER_DELIVER_MS)?.is_some() {
            return Err(both_delays());
        }
        let value = (level > 0).then(|| level.to_string());
        self.set(py, keys::DELAY_TIME_LEVEL, value.as_deref())
    }

    /// When the broker delivers the message (ms since the epoch; RocketMQ 5.x's timer
    /// property ``TIMER_DELIVER_MS``), or None: at once.
    #[getter]
    fn delivery_timestamp(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        match self.get(py, keys::TIMER_DELIVER_MS)? {
            Some(v) => v.trim().parse().map(Some).map_err(|_| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "delivery timestamp {v:?} is not a number"
                ))
            }),
            None => Ok(None),
        }
    }

    #[setter]
    fn set_delivery_timestamp(&mut self, py: Python<'_>, at: Option<i64>) -> PyResult<()> {
        let Some(at) = at else {
            return self.set(py, keys::TIMER_DELIVER_MS, None);
        };
        if at < 0 {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "delivery_timestamp {at} is before the epoch: give milliseconds since the epoch"
            )));
        }
        if self.delay_level(py)? > 0 {
            return Err(both_delays());
        }
        if self.get(py, keys::SHARDING_KEY)?.is_some() {
            return Err(grouped_and_timed());
        }
        self.set(py, keys::TIMER_DELIVER_MS, Some(&at.to_string()))
    }

    /// The 5.x FIFO message group (the ``__SHARDINGKEY`` property RocketMQ's 5.x proxy
    /// sets), or None. A producer sends a group's messages to one queue, in order.
    #[getter]
    fn message_group(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.get(py, keys::SHARDING_KEY)
    }

    #[setter]
    fn set_message_group(&mut self, py: Python<'_>, group: Option<&str>) -> PyResult<()> {
        if let Some(g) = group {
            // The 5.x client's rule: a group is not blank.
            if g.trim().is_empty() {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "message_group is blank: give a name, or None for no group",
                ));
            }
            if self.get(py, keys::TIMER_DELIVER_MS)?.is_some() {
                return Err(grouped_and_timed());
            }
        }
        self.set(py, keys::SHARDING_KEY, group)
    }

    /// For pickle and copy: the constructor's arguments.
    fn __getnewargs_ex__<'py>(&self, py: Python<'py>) -> PyResult<NewArgs<'py>> {
        let kwargs = PyDict::new(py);
        kwargs.set_item("flag", self.flag)?;
        if let Some(d) = self.properties_ref(py) {
            kwargs.set_item("properties", d.copy()?)?;
        }
        Ok(((self.topic.clone_ref(py), self.body.clone_ref(py)), kwargs))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let repr = |v: Option<String>| -> PyResult<String> {
            match v {
                Some(s) => Ok(PyString::new(py, &s).repr()?.to_str()?.to_owned()),
                None => Ok("None".to_owned()),
            }
        };
        Ok(format!(
            "Message(topic={}, tags={}, keys={}, body={} bytes)",
            self.topic.bind(py).repr()?.to_str()?,
            repr(self.tags(py)?)?,
            repr(self.keys(py)?)?,
            self.body.bind(py).as_bytes().len()
        ))
    }
}
