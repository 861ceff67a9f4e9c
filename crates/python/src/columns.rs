//! Messages as Arrow-layout column buffers for the Spark reader: from a store directory
//! (`StoreReader`) or from a broker (`RemotingClient.pull_columns`). Python assembles the
//! buffers into a `pyarrow.RecordBatch` without a Python object per message.

use std::sync::Arc;

use crate::columnar::{ColumnBatch, RowFilter, VarColumn};
use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use rocketpy_client::pull_range::{pull_range, PullSpec, Window};
use rocketpy_remoting::RemotingClient as NativeClient;
use rocketpy_store::reader::StoreReader as NativeReader;

use crate::buffer::BytesView;
use crate::errors::{self, DataLossError};
use crate::process;
use crate::runtime::wait;

fn le_bytes<'py, T: Copy, const N: usize>(
    py: Python<'py>,
    values: &[T],
    to: impl Fn(T) -> [u8; N],
) -> Bound<'py, PyBytes> {
    let mut out = Vec::with_capacity(values.len() * N);
    for v in values {
        out.extend_from_slice(&to(*v));
    }
    PyBytes::new(py, &out)
}

/// A variable-size column as `(validity or None, offsets, data)`; the data (most of the
/// bytes) is handed over without a copy, as a memoryview of the Rust buffer.
fn var<'py>(py: Python<'py>, c: VarColumn) -> PyResult<Bound<'py, PyTuple>> {
    let validity = match c.validity {
        Some(bits) => PyBytes::new(py, &bits).into_any(),
        None => py.None().into_bound(py),
    };
    PyTuple::new(
        py,
        [
            validity,
            le_bytes(py, &c.offsets, i32::to_le_bytes).into_any(),
            BytesView::memoryview(py, Bytes::from(c.data))?.into_any(),
        ],
    )
}

/// The batch as `{"rows": n, column: buffers...}` (see `pyspark_rocketmq.arrow`).
pub fn to_py(py: Python<'_>, b: ColumnBatch) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("rows", b.rows())?;
    d.set_item("queueId", le_bytes(py, &b.queue_id, i32::to_le_bytes))?;
    d.set_item(
        "queueOffset",
        le_bytes(py, &b.queue_offset, i64::to_le_bytes),
    )?;
    d.set_item(
        "bornTimestamp",
        le_bytes(py, &b.born_timestamp, i64::to_le_bytes),
    )?;
    d.set_item(
        "storeTimestamp",
        le_bytes(py, &b.store_timestamp, i64::to_le_bytes),
    )?;
    d.set_item(
        "reconsumeTimes",
        le_bytes(py, &b.reconsume_times, i32::to_le_bytes),
    )?;
    d.set_item(
        "properties",
        (
            le_bytes(py, &b.property_offsets, i32::to_le_bytes),
            var(py, b.property_keys)?,
            var(py, b.property_values)?,
        ),
    )?;
    d.set_item("topic", var(py, b.topic)?)?;
    d.set_item("brokerName", var(py, b.broker_name)?)?;
    d.set_item("msgId", var(py, b.msg_id)?)?;
    d.set_item("tags", var(py, b.tags)?)?;
    d.set_item("keys", var(py, b.keys)?)?;
    d.set_item("body", var(py, b.body)?)?;
    Ok(d)
}

/// A store directory opened read-only: no lock, no recovery, nothing written.
#[pyclass(module = "rocketpy._native", frozen)]
pub struct StoreReader {
    inner: NativeReader,
}

#[pymethods]
impl StoreReader {
    #[new]
    fn new(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Self> {
        let inner = process::detach(py, || NativeReader::open(&path)).map_err(errors::store)?;
        Ok(StoreReader { inner })
    }

    /// Topics that have a consume queue.
    fn topics(&self) -> PyResult<Vec<String>> {
        self.inner.topics().map_err(errors::store)
    }

    /// Queue ids of `topic`.
    fn queue_ids(&self, topic: &str) -> PyResult<Vec<i32>> {
        self.inner.queue_ids(topic).map_err(errors::store)
    }

    /// `(min, max)`: the first and one-past-last readable offsets of a queue.
    fn offsets(&self, topic: &str, queue_id: i32) -> PyResult<(i64, i64)> {
        self.inner.offsets(topic, queue_id).map_err(errors::store)
    }

    /// The first offset stored at or after `timestamp_ms` (the max offset if none).
    fn offset_by_time(&self, topic: &str, queue_id: i32, timestamp_ms: i64) -> PyResult<i64> {
        self.inner
            .offset_by_time(topic, queue_id, timestamp_ms)
            .map_err(errors::store)
    }

    /// Record sizes of offsets `[start, end)` from the consume queue (no message is read);
    /// shorter when the queue holds fewer.
    fn unit_sizes(&self, topic: &str, queue_id: i32, start: i64, end: i64) -> PyResult<Vec<i32>> {
        self.inner
            .unit_sizes(topic, queue_id, start..end)
            .map_err(errors::store)
    }

    /// Reads offsets `[start, end)` into column buffers; returns `(columns, next_offset)`
    /// (`next_offset < end` when the batch filled up first).
    #[pyo3(signature = (topic, queue_id, start, end, broker_name, subscription="*", expression_type="TAG"))]
    #[allow(clippy::too_many_arguments)] // the Python signature
    fn read_columns<'py>(
        &self,
        py: Python<'py>,
        topic: &str,
        queue_id: i32,
        start: i64,
        end: i64,
        broker_name: &str,
        subscription: &str,
        expression_type: &str,
    ) -> PyResult<(Bound<'py, PyDict>, i64)> {
        let filter = RowFilter::parse(subscription, expression_type)
            .map_err(crate::errors::InvalidArgumentError::new_err)?;
        let (batch, next) = process::detach(py, || {
            let mut batch = ColumnBatch::new();
            let next = self.inner.read(topic, queue_id, start..end, |v| {
                batch.push(v, broker_name, &filter)?;
                Ok(!batch.is_full())
            })?;
            Ok((batch, next))
        })
        .map_err(errors::store)?;
        Ok((to_py(py, batch)?, next))
    }
}

/// Pulls offsets `[start, end)` from the broker (see `crate::pull_range`) and
/// builds the columns, all with the GIL released.
pub fn pull_columns<'py>(
    py: Python<'py>,
    client: &NativeClient,
    spec: PullSpec,
    (start, end): (i64, i64),
    broker_name: &str,
    concurrency: usize,
    fail_on_data_loss: bool,
) -> PyResult<(Bound<'py, PyDict>, i64)> {
    let spec = Arc::new(spec);
    let filter = RowFilter::parse(&spec.subscription, &spec.expression_type)
        .map_err(crate::errors::InvalidArgumentError::new_err)?;
    let fut = async {
        let windows = pull_range(client, spec.clone(), start, end, concurrency)
            .await
            .map_err(crate::errors::RemotingError::new_err)?;
        let mut batch = ColumnBatch::new();
        let mut next = start;
        for (_, w_end, window) in windows {
            match window {
                Window::Bodies(bodies) => {
                    for body in bodies {
                        batch
                            .push_records(&body, broker_name, &filter, w_end)
                            .map_err(errors::store)?;
                    }
                }
                Window::Moved { at, next: hint } if fail_on_data_loss => {
                    return Err(DataLossError::new_err(format!(
                        "{}:{} offset {at} is no longer stored on {} (the broker suggests \
                         {hint}); set failOnDataLoss=false to skip lost messages",
                        spec.topic, spec.queue_id, spec.addr
                    )));
                }
                Window::Moved { .. } => {} // lost messages are skipped
            }
            next = w_end;
            if batch.is_full() {
                break;
            }
        }
        Ok((batch, next))
    };
    let (batch, next) = wait(py, fut)??;
    Ok((to_py(py, batch)?, next))
}
