//! The protocol's tables and rules for Python: the code and flag tables (Python keeps typed
//! copies in `rocketpy/protocol.py`, checked against these by a test), the topic rule and
//! the SQL92 filter grammar (the broker's own, so a subscription is refused where it is made).

use pyo3::prelude::*;
use pyo3::types::PyDict;
use rocketpy_protocol::{code, flag, topic};

use crate::errors::InvalidArgumentError;

fn table<'py>(py: Python<'py>, entries: &[(&str, i32)]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, value) in entries {
        d.set_item(*name, *value)?;
    }
    Ok(d)
}

/// Adds `REQUEST_CODES`, `RESPONSE_CODES`, `PERM`, `PULL_SYS_FLAG`, `MESSAGE_SYS_FLAG`
/// (name -> value) to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("REQUEST_CODES", table(py, code::request::ALL)?)?;
    m.add("RESPONSE_CODES", table(py, code::response::ALL)?)?;
    m.add("PERM", table(py, flag::perm::ALL)?)?;
    m.add("PULL_SYS_FLAG", table(py, flag::pull::ALL)?)?;
    m.add("MESSAGE_SYS_FLAG", table(py, flag::message::ALL)?)?;
    m.add_function(wrap_pyfunction!(validate_topic, m)?)?;
    m.add_function(wrap_pyfunction!(validate_sql_filter, m)?)?;
    Ok(())
}

/// Raises `InvalidArgumentError` unless `name` is a valid topic name (1..=127 characters of
/// letters, digits, `%`, `|`, `_` and `-`: it becomes a directory name on the broker).
#[pyfunction]
fn validate_topic(name: &str) -> PyResult<()> {
    topic::validate_topic(name).map_err(|e| InvalidArgumentError::new_err(e.to_string()))
}

/// Raises `InvalidArgumentError` unless `expression` is an SQL92 filter a broker compiles
/// (RocketMQ's selector grammar); the message says what is wrong and at which character.
#[pyfunction]
fn validate_sql_filter(expression: &str) -> PyResult<()> {
    rocketpy_filter::Filter::compile(expression)
        .map(drop)
        .map_err(|e| InvalidArgumentError::new_err(e.to_string()))
}
