//! `PendingMessages`: the messages pulled from one queue and not consumed yet, by queue
//! offset — the bookkeeping half of `rocketpy.consumer.process_queue.ProcessQueue`, natively,
//! because consumers touch every message here twice (pulled, consumed).
//!
//! What stays true: `ready` and `consuming` never share an offset; `size` is the body bytes of
//! both; `max_offset` is the largest offset ever put (-1 before any). The offset to commit is
//! the smallest offset still held in `ready`, or one past `max_offset` when none is — an
//! orderly consumer commits its `consuming` set itself (`commit`).

use std::collections::BTreeMap;
use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::message::MessageExt;

#[derive(Default)]
struct Table {
    ready: BTreeMap<i64, Py<MessageExt>>,
    consuming: BTreeMap<i64, Py<MessageExt>>,
    size: i64,
    max_offset: i64,
}

/// Pulled, unconsumed messages of one queue.
#[pyclass(module = "rocketpy._native", frozen)]
pub struct PendingMessages {
    table: Mutex<Table>,
}

impl PendingMessages {
    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        // A poisoned lock means a panic mid-update, which these updates cannot have.
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn body_size(m: &Bound<'_, MessageExt>) -> i64 {
    m.get().body_size() as i64
}

#[pymethods]
impl PendingMessages {
    #[new]
    fn new() -> Self {
        PendingMessages {
            table: Mutex::new(Table {
                max_offset: -1,
                ..Table::default()
            }),
        }
    }

    /// Adds pulled messages; offsets already held are skipped.
    fn put(&self, msgs: &Bound<'_, PyList>) -> PyResult<()> {
        let mut t = self.lock();
        for item in msgs.iter() {
            let m = item.cast_into::<MessageExt>()?;
            let offset = m.get().queue_offset();
            if t.ready.contains_key(&offset) || t.consuming.contains_key(&offset) {
                continue;
            }
            t.size += body_size(&m);
            t.max_offset = t.max_offset.max(offset);
            t.ready.insert(offset, m.unbind());
        }
        Ok(())
    }

    /// Removes consumed messages; returns the offset to commit: the smallest offset still
    /// held, or one past the largest ever put when none is; -1 if nothing was ever put.
    fn remove(&self, msgs: &Bound<'_, PyList>) -> PyResult<i64> {
        let mut t = self.lock();
        if t.max_offset < 0 {
            return Ok(-1);
        }
        for item in msgs.iter() {
            let m = item.cast_into::<MessageExt>()?;
            if let Some(held) = t.ready.remove(&m.get().queue_offset()) {
                t.size -= held.get().body_size() as i64;
            }
        }
        Ok(match t.ready.keys().next() {
            Some(&first) => first,
            None => t.max_offset + 1,
        })
    }

    /// Moves the first `n` messages to the consuming set and returns them (orderly).
    fn take<'py>(&self, py: Python<'py>, n: usize) -> PyResult<Bound<'py, PyList>> {
        let mut t = self.lock();
        let mut out = Vec::with_capacity(n.min(t.ready.len()));
        while out.len() < n {
            let Some((offset, m)) = t.ready.pop_first() else {
                break;
            };
            out.push(m.clone_ref(py));
            t.consuming.insert(offset, m);
        }
        PyList::new(py, out)
    }

    /// The consuming set is done: returns the offset to commit (one past its largest), or -1
    /// when it is empty.
    fn commit(&self) -> i64 {
        let mut t = self.lock();
        let Some(&last) = t.consuming.keys().next_back() else {
            return -1;
        };
        let done: i64 = t
            .consuming
            .values()
            .map(|m| m.get().body_size() as i64)
            .sum();
        t.size -= done;
        t.consuming.clear();
        last + 1
    }

    /// Puts consuming messages back in front, to be handed out again.
    fn consume_again(&self, msgs: &Bound<'_, PyList>) -> PyResult<()> {
        let mut t = self.lock();
        for item in msgs.iter() {
            let m = item.cast_into::<MessageExt>()?;
            let offset = m.get().queue_offset();
            t.consuming.remove(&offset);
            t.ready.insert(offset, m.unbind());
        }
        Ok(())
    }

    /// Messages waiting to be handed out (consuming ones excluded).
    #[getter]
    fn pending(&self) -> usize {
        self.lock().ready.len()
    }

    /// Messages held, consuming ones included.
    #[getter]
    fn count(&self) -> usize {
        let t = self.lock();
        t.ready.len() + t.consuming.len()
    }

    /// Body bytes held.
    #[getter]
    fn size(&self) -> i64 {
        self.lock().size
    }

    /// The largest offset ever put (-1 before any).
    #[getter]
    fn max_offset(&self) -> i64 {
        self.lock().max_offset
    }

    /// Largest offset put minus the smallest waiting (0 when none waits).
    fn span(&self) -> i64 {
        let t = self.lock();
        t.ready
            .keys()
            .next()
            .map_or(0, |&first| t.max_offset - first)
    }
}
