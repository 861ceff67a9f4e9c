//! `MessageExt`: a message decoded from CommitLog records (a PULL_MESSAGE body).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyMemoryView};
use rocketpy_protocol::flag::message as sys_flag;
use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::message::record::{self, RecordView};

use crate::buffer::BytesView;
use crate::errors::CorruptDataError;

/// A received message: every field of its stored record, properties parsed. The body is
/// shared with the record it came from; `body` copies it once, on first use.
#[pyclass(module = "rocketpy._native", frozen)]
pub struct MessageExt {
    /// Shared by the messages of one batch (most have one topic).
    topic: Arc<str>,
    #[pyo3(get)]
    flag: i32,
    body: Bytes,
    body_bytes: OnceLock<Py<PyBytes>>,
    /// The properties string (`k\x01v\x02...`, valid UTF-8), shared with the record: parsed
    /// on access, as most consumers read one or two properties at most.
    props: Bytes,
    #[pyo3(get)]
    queue_id: i32,
    #[pyo3(get)]
    queue_offset: i64,
    #[pyo3(get)]
    commit_log_offset: i64,
    #[pyo3(get)]
    sys_flag: i32,
    #[pyo3(get)]
    born_timestamp: i64,
    born_host: SocketAddr,
    #[pyo3(get)]
    store_timestamp: i64,
    store_host: SocketAddr,
    #[pyo3(get)]
    reconsume_times: i32,
    #[pyo3(get)]
    prepared_transaction_offset: i64,
    #[pyo3(get)]
    store_size: i32,
    #[pyo3(get)]
    body_crc: i32,
    broker_name: Option<Arc<str>>,
}

impl MessageExt {
    /// The message of `view`, a record inside `record` (whose memory the body shares);
    /// `topic` is `v.topic` (callers share one per batch).
    pub(crate) fn from_view(
        record: &Bytes,
        v: &RecordView<'_>,
        topic: Arc<str>,
        broker_name: Option<&Arc<str>>,
    ) -> PyResult<Self> {
        let body = if v.sys_flag & sys_flag::COMPRESSED != 0 {
            Bytes::from(
                rocketpy_protocol::message::compression::inflate(v.body)
                    .map_err(CorruptDataError::new_err)?,
            )
        } else {
            record.slice_ref(v.body)
        };
        Ok(MessageExt {
            topic,
            flag: v.flag,
            body,
            body_bytes: OnceLock::new(),
            props: record.slice_ref(v.properties.as_bytes()),
            queue_id: v.queue_id,
            queue_offset: v.queue_offset,
            commit_log_offset: v.physical_offset,
            sys_flag: v.sys_flag,
            born_timestamp: v.born_timestamp,
            born_host: v.born_host,
            store_timestamp: v.store_timestamp,
            store_host: v.store_host,
            reconsume_times: v.reconsume_times,
            prepared_transaction_offset: v.prepared_transaction_offset,
            store_size: v.total_size,
            body_crc: v.body_crc,
            broker_name: broker_name.cloned(),
        })
    }

    /// Decodes every record of `data` (records concatenated, as a PULL_MESSAGE body).
    pub(crate) fn decode_all(data: &Bytes, broker_name: Option<&str>) -> PyResult<Vec<Self>> {
        let views =
            record::decode_all(data).map_err(|e| CorruptDataError::new_err(e.to_string()))?;
        let broker_name = broker_name.map(Arc::<str>::from);
        let mut topic: Option<Arc<str>> = None;
        views
            .iter()
            .map(|v| {
                let shared = match &topic {
                    Some(t) if **t == *v.topic => t.clone(),
                    _ => topic.insert(Arc::from(v.topic)).clone(),
                };
                Self::from_view(data, v, shared, broker_name.as_ref())
            })
            .collect()
    }

    /// Sets the broker the messages were pulled from (decoding did not know it).
    pub(crate) fn with_broker_name(mut msgs: Vec<Self>, broker_name: Option<&str>) -> Vec<Self> {
        if let Some(name) = broker_name {
            let name = Arc::<str>::from(name);
            for m in &mut msgs {
                m.broker_name = Some(name.clone());
            }
        }
        msgs
    }

    /// The message's offset in its queue.
    pub(crate) fn queue_offset(&self) -> i64 {
        self.queue_offset
    }

    fn props_str(&self) -> &str {
        // Checked at decode (RecordView holds a &str); re-checking is cheap and keeps this safe.
        std::str::from_utf8(&self.props).unwrap_or_default()
    }

    fn prop_pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.props_str()
            .split(properties::PROPERTY_SEPARATOR)
            .filter_map(|item| item.split_once(properties::NAME_VALUE_SEPARATOR))
    }

    fn prop(&self, name: &str) -> Option<&str> {
        self.prop_pairs().find(|(k, _)| *k == name).map(|(_, v)| v)
    }

    fn offset_msg_id_string(&self) -> String {
        record::offset_msg_id(&self.store_host, self.commit_log_offset)
    }
}

#[pymethods]
impl MessageExt {
    /// The topic.
    #[getter]
    fn topic(&self) -> &str {
        &self.topic
    }

    /// The body (copied from the record once, then cached).
    #[getter]
    fn body<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        self.body_bytes
            .get_or_init(|| PyBytes::new(py, &self.body).unbind())
            .bind(py)
            .clone()
    }

    /// The body's length in bytes, without materialising it.
    #[getter]
    pub(crate) fn body_size(&self) -> usize {
        self.body.len()
    }

    /// The body as a read-only `memoryview` of the stored record: no copy.
    fn body_view<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyMemoryView>> {
        BytesView::memoryview(py, self.body.clone())
    }

    /// The TAGS property.
    #[getter]
    fn tags(&self) -> Option<&str> {
        self.prop(keys::TAGS)
    }

    /// The KEYS property (space-separated keys).
    #[getter]
    fn keys(&self) -> Option<&str> {
        self.prop(keys::KEYS)
    }

    /// The message id: the producer's UNIQ_KEY when set, else the offset message id.
    #[getter]
    fn msg_id(&self) -> String {
        match self.prop(keys::UNIQ_KEY) {
            Some(id) => id.to_owned(),
            None => self.offset_msg_id_string(),
        }
    }

    /// The offset message id: store host and CommitLog offset, in hex.
    #[getter]
    fn offset_msg_id(&self) -> String {
        self.offset_msg_id_string()
    }

    /// The address of the producer that sent it (`ip:port`).
    #[getter]
    fn born_host(&self) -> String {
        self.born_host.to_string()
    }

    /// The address of the broker that stored it (`ip:port`).
    #[getter]
    fn store_host(&self) -> String {
        self.store_host.to_string()
    }

    /// The broker it was pulled from, when known.
    #[getter]
    fn broker_name(&self) -> Option<&str> {
        self.broker_name.as_deref()
    }

    /// All properties as a new dict.
    #[getter]
    fn properties<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in self.prop_pairs() {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// One property, or `default`.
    #[pyo3(signature = (name, default=None))]
    fn get_property(&self, name: &str, default: Option<String>) -> Option<String> {
        self.prop(name).map(str::to_owned).or(default)
    }

    /// A copy with another topic and reconsume count (retry messages are handed to listeners
    /// under their original topic).
    #[pyo3(signature = (topic=None, reconsume_times=None))]
    fn replace(&self, topic: Option<String>, reconsume_times: Option<i32>) -> Self {
        MessageExt {
            topic: topic.map_or_else(|| self.topic.clone(), Arc::from),
            reconsume_times: reconsume_times.unwrap_or(self.reconsume_times),
            body: self.body.clone(),
            body_bytes: OnceLock::new(),
            props: self.props.clone(),
            broker_name: self.broker_name.clone(),
            ..*self
        }
    }

    fn __repr__(&self) -> String {
        let tags = self.tags().map_or("None".to_owned(), |t| format!("{t:?}"));
        format!(
            "MessageExt(topic={:?}, queue_id={}, queue_offset={}, msg_id={:?}, tags={tags}, body={} bytes)",
            self.topic,
            self.queue_id,
            self.queue_offset,
            self.msg_id(),
            self.body.len()
        )
    }
}

/// Decodes concatenated CommitLog records (a PULL_MESSAGE body) into messages.
#[pyfunction]
#[pyo3(signature = (data, broker_name=None))]
pub fn decode_messages(data: &[u8], broker_name: Option<&str>) -> PyResult<Vec<MessageExt>> {
    // One copy of the batch; every body then shares it.
    MessageExt::decode_all(&Bytes::copy_from_slice(data), broker_name)
}

/// Properties string (`k\x01v\x02...`) from a dict, in the dict's order; InvalidArgumentError
/// for an empty name, or a name or value holding a separator.
#[pyfunction]
pub fn encode_properties(props: Vec<(String, String)>) -> PyResult<String> {
    for (k, v) in &props {
        properties::check(k, v).map_err(crate::errors::InvalidArgumentError::new_err)?;
    }
    Ok(properties::encode(
        props.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    ))
}

/// Dict from a properties string.
#[pyfunction]
pub fn decode_properties(text: &str) -> HashMap<String, String> {
    properties::decode(text)
}

/// Java's `String.hashCode()` (tags codes, index keys).
#[pyfunction]
pub fn java_string_hash(s: &str) -> i32 {
    rocketpy_protocol::message::java_hash::java_string_hash(s)
}

/// A SEND_BATCH_MESSAGE body from `(flag, body, properties)` items: for each,
/// `[totalSize i32][magic 0][bodyCRC 0][flag i32][bodyLen i32][body][propLen i16][props]`.
#[pyfunction]
pub fn encode_batch<'py>(
    py: Python<'py>,
    items: Vec<(i32, pyo3::pybacked::PyBackedBytes, String)>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut out = Vec::with_capacity(items.iter().map(|(_, b, p)| 22 + b.len() + p.len()).sum());
    for (flag, body, props) in &items {
        rocketpy_protocol::message::batch::encode_batch_item(&mut out, *flag, body, props)
            .map_err(crate::errors::InvalidArgumentError::new_err)?;
    }
    Ok(PyBytes::new(py, &out))
}
