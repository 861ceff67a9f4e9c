//! Tolerant JSON for Python: RocketMQ's fastjson writes integer map keys without quotes.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// Standard JSON from fastjson output (bare integer keys quoted); other input is unchanged.
#[pyfunction]
pub fn fastjson_to_json<'py>(py: Python<'py>, data: &[u8]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &rocketpy_protocol::body::fastjson::normalize(data))
}
