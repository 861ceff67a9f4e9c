//! `PendingMessages`: the messages pulled from one queue and not consumed yet, by queue
//! offset — the bookkeeping half of `rocketpy.consumer.process_queue.ProcessQueue`, natively,
//! because consumers touch every message here twice (pulled, consumed). The table and its
//! invariants are `rocketpy_client::pending::Pending`; this reads the messages' offsets and
//! sizes from Python lists.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::PyList;
use rocketpy_client::pending::Pending;

use crate::message::MessageExt;

/// Pulled, unconsumed messages of one queue.
#[pyclass(module = "rocketpy._native", frozen)]
pub struct PendingMessages {
    table: Mutex<Pending<Py<MessageExt>>>,
}

impl PendingMessages {
    fn lock(&self) -> std::sync::MutexGuard<'_, Pending<Py<MessageExt>>> {
        // A poisoned lock means a panic mid-update, which these updates cannot have.
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Each message of `msgs` (a TypeError for anything else).
fn each_message<'py>(
    msgs: &Bound<'py, PyList>,
    mut f: impl FnMut(Bound<'py, MessageExt>),
) -> PyResult<()> {
    for item in msgs.iter() {
        f(item.cast_into::<MessageExt>()?);
    }
    Ok(())
}

fn size_of(m: &Bound<'_, MessageExt>) -> u32 {
    u32::try_from(m.get().body_size()).unwrap_or(u32::MAX)
}

#[pymethods]
impl PendingMessages {
    #[new]
    fn new() -> Self {
        PendingMessages {
            table: Mutex::new(Pending::default()),
        }
    }

    /// Adds pulled messages; offsets already held are skipped.
    fn put(&self, msgs: &Bound<'_, PyList>) -> PyResult<()> {
        let mut items = Vec::with_capacity(msgs.len());
        each_message(msgs, |m| {
            items.push((m.get().queue_offset(), size_of(&m), m.unbind()))
        })?;
        self.lock().put_all(items);
        Ok(())
    }

    /// Removes consumed messages; returns the offset to commit: the smallest offset still
    /// held, or one past the largest ever put when none is; -1 if nothing was ever put.
    fn remove(&self, msgs: &Bound<'_, PyList>) -> PyResult<i64> {
        let mut t = self.lock();
        if t.max_offset() < 0 {
            return Ok(-1);
        }
        let mut removed = Vec::with_capacity(msgs.len());
        each_message(msgs, |m| removed.extend(t.remove(m.get().queue_offset())))?;
        let offset = t.commit_offset();
        drop(t);
        drop(removed); // released outside the lock
        Ok(offset)
    }

    /// Moves the first `n` messages to the consuming set and returns them (orderly).
    fn take<'py>(&self, py: Python<'py>, n: usize) -> PyResult<Bound<'py, PyList>> {
        let mut out = Vec::with_capacity(n.min(64));
        self.lock().take(n, |m| out.push(m.clone_ref(py)));
        PyList::new(py, out)
    }

    /// The consuming set is done: returns the offset to commit (one past its largest), or -1
    /// when it is empty.
    fn commit(&self) -> i64 {
        self.lock().commit()
    }

    /// Puts consuming messages back in front, to be handed out again.
    fn consume_again(&self, msgs: &Bound<'_, PyList>) -> PyResult<()> {
        let mut t = self.lock();
        each_message(msgs, |m| {
            t.consume_again(m.get().queue_offset(), size_of(&m), m.unbind());
        })
    }

    /// Messages waiting to be handed out (consuming ones excluded).
    #[getter]
    fn pending(&self) -> usize {
        self.lock().pending()
    }

    /// Messages held, consuming ones included.
    #[getter]
    fn count(&self) -> usize {
        self.lock().count()
    }

    /// Body bytes held.
    #[getter]
    fn size(&self) -> i64 {
        self.lock().size()
    }

    /// The largest offset ever put (-1 before any).
    #[getter]
    fn max_offset(&self) -> i64 {
        self.lock().max_offset()
    }

    /// Largest offset put minus the smallest waiting (0 when none waits).
    fn span(&self) -> i64 {
        self.lock().span()
    }
}
