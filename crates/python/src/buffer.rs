//! Read-only buffers over Rust bytes: Python sees them through `memoryview` with no copy.

use std::ffi::c_int;

use bytes::Bytes;
use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyMemoryView;

/// Bytes shared with Rust (a mapped store file, a received frame), exposed read-only.
#[pyclass(module = "rocketpy._native", frozen)]
pub struct BytesView {
    data: Bytes,
}

impl BytesView {
    /// A `memoryview` of `data` (no copy; the memory stays alive while the view does).
    pub fn memoryview(py: Python<'_>, data: Bytes) -> PyResult<Bound<'_, PyMemoryView>> {
        let view = Bound::new(py, BytesView { data })?;
        PyMemoryView::from(view.as_any())
    }
}

#[pymethods]
impl BytesView {
    fn __len__(&self) -> usize {
        self.data.len()
    }

    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        if view.is_null() {
            return Err(PyBufferError::new_err("null buffer view"));
        }
        if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
            return Err(PyBufferError::new_err(
                "rocketpy message bytes are read-only",
            ));
        }
        let data = &slf.get().data;
        // SAFETY: `view` is the caller's struct; FillInfo takes a new reference to `slf`, which
        // keeps `data` (and the memory it shares) alive until the buffer is released.
        let rc = unsafe {
            ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                data.as_ptr() as *mut std::ffi::c_void,
                data.len() as ffi::Py_ssize_t,
                1,
                flags,
            )
        };
        if rc != 0 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }
}
