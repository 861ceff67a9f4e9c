//! Request and response headers for Python, by attribute name. The wire names (and the V2
//! aliases) stay in `rocketpy_protocol::header`: Python passes `{"queue_id": 3, ...}` for a
//! request and reads `response.header.next_begin_offset`, and the protocol's header spec of the
//! request code maps one to the other. Python holds no wire names of its own.

use pyo3::exceptions::{PyAttributeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyString};
use rocketpy_protocol::header::{exchange, HeaderSpec, Value};
use rocketpy_protocol::ExtFields;

use crate::errors::{CorruptDataError, InvalidArgumentError};

/// The extFields of a request with code `code` from `header` (attribute -> value; `None`
/// values are left out). A code without a request header takes no fields.
pub fn request_fields(code: i32, header: Option<&Bound<'_, PyDict>>) -> PyResult<ExtFields> {
    let Some(header) = header.filter(|h| !h.is_empty()) else {
        return match request_spec(code) {
            Some(spec) if spec.fields.iter().any(|f| f.required) => {
                Err(InvalidArgumentError::new_err(format!(
                    "request code {code} needs a {} header",
                    spec.name
                )))
            }
            _ => Ok(ExtFields::new()),
        };
    };
    let Some(spec) = request_spec(code) else {
        return Err(InvalidArgumentError::new_err(format!(
            "request code {code} has no request header"
        )));
    };
    let mut values = Vec::with_capacity(header.len());
    for (key, value) in header.iter() {
        if value.is_none() {
            continue;
        }
        let attr: String = key.extract().map_err(|_| {
            PyTypeError::new_err(format!("{} attribute names must be str", spec.name))
        })?;
        values.push((attr, to_value(&value)?));
    }
    spec.encode_values(code, values.iter().map(|(a, v)| (a.as_str(), v.clone())))
        .map_err(InvalidArgumentError::new_err)
}

fn request_spec(code: i32) -> Option<&'static HeaderSpec> {
    exchange(code).and_then(|e| e.request)
}

fn to_value(value: &Bound<'_, PyAny>) -> PyResult<Value> {
    // bool before int: Python's True is an int too.
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if value.is_instance_of::<PyInt>() {
        return Ok(Value::Int(value.extract()?));
    }
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(Value::Str(s.to_str()?.to_owned()));
    }
    Err(PyTypeError::new_err(format!(
        "header values are str, int or bool, not {}",
        value.get_type().name()?
    )))
}

/// Integer field `name` (an attribute name) of the response to request `code`: None when
/// absent; an error when the code has no such field or the value is not an integer.
pub fn response_int(code: i32, fields: &ExtFields, name: &str) -> PyResult<Option<i64>> {
    let spec = exchange(code).and_then(|e| e.response);
    let field = spec.and_then(|s| s.field(name)).ok_or_else(|| {
        PyAttributeError::new_err(format!("the response to {code} has no field {name:?}"))
    })?;
    match field
        .read(fields)
        .map_err(|e| CorruptDataError::new_err(e.to_string()))?
    {
        None => Ok(None),
        Some(Value::Int(i)) => Ok(Some(i)),
        Some(_) => Err(CorruptDataError::new_err(format!(
            "{name} of the response to {code} is not an integer"
        ))),
    }
}

/// `fields` as a new dict, by wire name.
pub fn fields_dict<'py>(py: Python<'py>, fields: &ExtFields) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in fields {
        d.set_item(k, v)?;
    }
    Ok(d)
}

/// A header as received: its fields by attribute name (`None` when absent), read through the
/// spec of the header it is.
#[pyclass(module = "rocketpy._native", frozen)]
pub struct Header {
    spec: Option<&'static HeaderSpec>,
    fields: ExtFields,
}

impl Header {
    /// The header of a response to request `code`.
    pub fn of_response(code: i32, fields: ExtFields) -> Self {
        Header {
            spec: exchange(code).and_then(|e| e.response),
            fields,
        }
    }

    /// The header of a request with code `code` (one a server sent to the client).
    pub fn of_request(code: i32, fields: ExtFields) -> Self {
        Header {
            spec: request_spec(code),
            fields,
        }
    }
}

#[pymethods]
impl Header {
    fn __getattr__<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        let field = self.spec.and_then(|s| s.field(name)).ok_or_else(|| {
            PyAttributeError::new_err(format!(
                "{} has no field {name:?}",
                self.spec.map_or("this header", |s| s.name)
            ))
        })?;
        let value = field
            .read(&self.fields)
            .map_err(|e| CorruptDataError::new_err(e.to_string()))?;
        Ok(match value {
            None => py.None().into_bound(py),
            Some(Value::Str(s)) => s.into_pyobject(py)?.into_any(),
            Some(Value::Int(i)) => i.into_pyobject(py)?.into_any(),
            Some(Value::Bool(b)) => PyBool::new(py, b).to_owned().into_any(),
        })
    }

    /// The fields as sent, by wire name (for diagnostics).
    #[getter]
    fn raw<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        fields_dict(py, &self.fields)
    }

    fn __repr__(&self) -> String {
        format!(
            "Header({}, {:?})",
            self.spec.map_or("?", |s| s.name),
            self.fields
        )
    }
}
