//! Per-message completion of an auto-batched request, natively: one `SendResult` per message
//! (built like `object.__new__` plus the dataclass's slots, which is what the frozen
//! dataclass's `__init__` does at several times the cost), then the future ends as
//! `SendFuture._finish` would end it (see `rocketpy._future`) and the message's callback
//! runs. Failed requests go to Python (`Producer._batch_failed`), which owns the retries.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyType};

use crate::outgoing::Message;

/// Slots of `rocketpy.message.SendResult`, in the order they are set.
const SLOTS: [&str; 7] = [
    "status",
    "msg_id",
    "offset_msg_id",
    "message_queue",
    "queue_offset",
    "region_id",
    "transaction_id",
];

/// A message waiting for its answer. Held natively, not as a Python tuple: thousands are in
/// flight, and the garbage collector would visit each tuple on every collection.
pub struct Pending {
    pub future: Py<PyAny>,
    pub callback: Py<PyAny>,
    pub uniq: String,
    /// What a retry needs to send the message again (not the `Message` itself: letting it
    /// go at once keeps thousands of in-flight objects away from the garbage collector).
    pub body: Py<PyBytes>,
    pub flag: i32,
    /// Its properties as sent, `UNIQ_KEY` included.
    pub properties: String,
    /// The caller chose the queue (no retry on another broker).
    pub fixed: bool,
}

impl Pending {
    /// Ends the message with `err` (its future and callback), as Python's `_complete` does.
    pub fn fail(self, py: Python<'_>, err: &PyErr) {
        Self::fail_parts(py, self.future, self.callback, err);
    }

    /// Ends `future` and calls `callback` (unless None) with `err`.
    pub fn fail_parts(py: Python<'_>, future: Py<PyAny>, callback: Py<PyAny>, err: &PyErr) {
        let future = future.into_bound(py);
        let value = err.value(py).clone().into_any();
        let none = py.None().into_bound(py);
        if let Err(e) = future.call_method1(pyo3::intern!(py, "_finish"), (&none, &value)) {
            e.write_unraisable(py, Some(&future));
        }
        let callback = callback.into_bound(py);
        if !callback.is_none() {
            if let Err(e) = callback.call1((&none, &value)) {
                e.write_unraisable(py, Some(&callback));
            }
        }
    }

    /// The messages of `topic` as `(future, callback, uniq, message, fixed)` tuples (a
    /// failed request's messages, for Python to retry or fail), each `message` made again.
    pub fn into_list<'py>(
        py: Python<'py>,
        topic: &str,
        items: Vec<Pending>,
    ) -> PyResult<Bound<'py, PyList>> {
        let mut tuples = Vec::with_capacity(items.len());
        for p in items {
            let message = Message::rebuilt(py, topic, p.body, p.flag, &p.properties)?;
            tuples.push((p.future, p.callback, p.uniq, message, p.fixed));
        }
        PyList::new(py, tuples)
    }
}

/// Makes `SendFuture`s as their `__init__` does: a bare instance, whose state is the class's
/// defaults until set (see `rocketpy._future`).
pub struct FutureMaker {
    future_type: Py<PyType>,
}

impl FutureMaker {
    pub fn new(future_type: Py<PyType>) -> Self {
        FutureMaker { future_type }
    }

    /// A new pending future.
    pub fn make(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(generic_alloc(self.future_type.bind(py))?.unbind())
    }
}

/// A zeroed instance of `tp` (what `object.__new__(tp)` makes), not initialised.
fn generic_alloc<'py>(tp: &Bound<'py, PyType>) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: PyType_GenericAlloc returns a new reference (or NULL with an exception set)
    // to a zeroed instance of `tp`, tracked by the GC when the type is.
    unsafe {
        let raw = pyo3::ffi::PyType_GenericAlloc(tp.as_ptr().cast(), 0);
        Bound::from_owned_ptr_or_err(tp.py(), raw)
    }
}

/// Makes `SendResult`s without calling their `__init__`.
pub struct ResultMaker {
    result_type: Py<PyType>,
    slots: Vec<Py<PyString>>,
}

/// What every message of one successful request shares.
pub struct Outcome<'py> {
    pub status: Bound<'py, PyAny>,
    pub queue: Bound<'py, PyAny>,
    pub region: Bound<'py, PyAny>,
    /// Broker ids of the messages (`offset_msg_id`), in order.
    pub ids: Vec<String>,
    /// Queue offset of the first message (-1: unknown).
    pub first_offset: i64,
}

impl ResultMaker {
    pub fn new(py: Python<'_>, result_type: Py<PyType>) -> Self {
        let slots = SLOTS
            .iter()
            .map(|s| PyString::intern(py, s).unbind())
            .collect();
        ResultMaker { result_type, slots }
    }

    /// A `SendResult` of these values, in the order of `SLOTS`.
    pub fn make<'py>(
        &self,
        py: Python<'py>,
        values: [Bound<'py, PyAny>; 7],
    ) -> PyResult<Bound<'py, PyAny>> {
        let obj = generic_alloc(self.result_type.bind(py))?;
        for (name, value) in self.slots.iter().zip(values) {
            // SAFETY: object, name and value are valid; the generic setter writes the slot
            // through its member descriptor, bypassing the frozen dataclass's __setattr__.
            let rc = unsafe {
                pyo3::ffi::PyObject_GenericSetAttr(obj.as_ptr(), name.as_ptr(), value.as_ptr())
            };
            if rc != 0 {
                return Err(PyErr::fetch(py));
            }
        }
        Ok(obj)
    }

    /// Completes every message of `items` with its result; a callback that raises is
    /// reported as unraisable (it has no caller).
    pub fn complete_all(
        &self,
        py: Python<'_>,
        outcome: &Outcome<'_>,
        items: Vec<Pending>,
    ) -> PyResult<()> {
        let none = py.None().into_bound(py);
        for (i, item) in items.into_iter().enumerate() {
            if let Err(err) = self.complete(py, outcome, i, &none, item) {
                err.write_unraisable(py, None);
            }
        }
        Ok(())
    }

    /// Completes message `i` of the request; an error making its result fails it instead.
    fn complete(
        &self,
        py: Python<'_>,
        outcome: &Outcome<'_>,
        i: usize,
        none: &Bound<'_, PyAny>,
        item: Pending,
    ) -> PyResult<()> {
        let offset_id = outcome.ids.get(i).map(String::as_str).unwrap_or("");
        let offset = if outcome.first_offset < 0 {
            -1
        } else {
            outcome.first_offset + i as i64
        };
        let offset = match offset.into_pyobject(py) {
            Ok(offset) => offset.into_any(),
            Err(never) => match never {},
        };
        let made = self.make(
            py,
            [
                outcome.status.clone(),
                PyString::new(py, &item.uniq).into_any(),
                PyString::new(py, offset_id).into_any(),
                outcome.queue.clone(),
                offset,
                outcome.region.clone(),
                none.clone(),
            ],
        );
        let result = match made {
            Ok(result) => result,
            Err(err) => {
                item.fail(py, &err);
                return Err(err);
            }
        };
        let future = item.future.bind(py);
        finish_future(future, &result, none)?;
        let callback = item.callback.bind(py);
        if !callback.is_none() {
            if let Err(err) = callback.call1((&result, none)) {
                err.write_unraisable(py, Some(callback));
            }
        }
        Ok(())
    }
}

/// Ends a `SendFuture` with `result`: when nothing made its condition (nobody waits, no
/// callback was added) and it is pending, its state and result are set directly — no
/// Python code runs between these reads and writes, so no other thread can intervene —
/// else `SendFuture._finish` does it with the condition.
fn finish_future(
    future: &Bound<'_, PyAny>,
    result: &Bound<'_, PyAny>,
    none: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let py = future.py();
    let state = pyo3::intern!(py, "_state");
    if future
        .getattr(pyo3::intern!(py, "_lazy_condition"))?
        .is_none()
        && future.getattr(state)?.eq(pyo3::intern!(py, "PENDING"))?
    {
        future.setattr(pyo3::intern!(py, "_result"), result)?;
        future.setattr(state, pyo3::intern!(py, "FINISHED"))?;
        return Ok(());
    }
    future.call_method1(pyo3::intern!(py, "_finish"), (result, none))?;
    Ok(())
}
