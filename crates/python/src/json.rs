//! Tolerant JSON for Python: RocketMQ's fastjson writes integer map keys without quotes.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::CorruptDataError;
use rocketpy_protocol::limits::{check_json, JsonLimits};

/// Standard JSON from fastjson output (bare integer keys quoted); other input is unchanged.
/// A body beyond [`JsonLimits::TABLE`] (a server's largest answers) or with object keys
/// nested in object keys raises `CorruptDataError` before Python's parser sees it, so a
/// hostile server cannot make `json.loads` recurse or allocate without bound.
#[pyfunction]
pub fn fastjson_to_json<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    check_json(data, JsonLimits::TABLE).map_err(CorruptDataError::new_err)?;
    let normalized =
        rocketpy_protocol::body::fastjson::normalize(data).map_err(CorruptDataError::new_err)?;
    Ok(PyBytes::new(py, &normalized))
}
