//! `UniqueIds`: message ids in the layout of RocketMQ's `MessageClientIDSetter`, made natively
//! because every send takes one (a formatted string from Python costs several times more).
//! The prefix (ip, pid, instance hash) and the month's bounds in local time come from Python,
//! which knows the time zone; the month is recomputed by calling back when it ends.

use std::sync::atomic::{AtomicI64, AtomicU32, Ordering};

use pyo3::prelude::*;

/// Unique message ids: `prefix | ms since the start of the month (8 hex) | counter (4 hex)`.
#[pyclass(module = "rocketpy._native", frozen)]
pub struct UniqueIds {
    prefix: String,
    counter: AtomicU32,
    month_start: AtomicI64,
    next_month: AtomicI64,
    /// `roll(now_ms) -> (month_start_ms, next_month_ms)`.
    roll: Py<PyAny>,
}

/// Wall-clock milliseconds since the epoch.
pub(crate) use rocketpy_protocol::clock::now_millis;

#[pymethods]
impl UniqueIds {
    /// `prefix`: 20 hex digits; `roll(now_ms)` gives the bounds of the month holding now_ms.
    #[new]
    fn new(prefix: String, roll: Py<PyAny>) -> Self {
        UniqueIds {
            prefix,
            counter: AtomicU32::new(0),
            month_start: AtomicI64::new(0),
            next_month: AtomicI64::new(0),
            roll,
        }
    }

    /// A new id.
    fn next(&self, py: Python<'_>) -> PyResult<String> {
        self.next_id(py)
    }
}

impl UniqueIds {
    /// A new id (for native callers).
    pub fn next_id(&self, py: Python<'_>) -> PyResult<String> {
        let mut id = String::with_capacity(self.prefix.len() + 12);
        self.write_next(py, &mut id)?;
        Ok(id)
    }

    /// Appends a new id to `out`.
    pub fn write_next(&self, py: Python<'_>, out: &mut String) -> PyResult<()> {
        self.write_next_at(py, now_millis(), out)
    }

    /// Appends a new id made at `now` (ms) to `out`: a bulk send reads the clock once per
    /// request, not per message (the counter keeps the ids apart).
    pub fn write_next_at(&self, py: Python<'_>, now: i64, out: &mut String) -> PyResult<()> {
        if now >= self.next_month.load(Ordering::Relaxed) {
            let (start, next): (i64, i64) = self.roll.call1(py, (now,))?.extract(py)?;
            self.month_start.store(start, Ordering::Relaxed);
            self.next_month.store(next, Ordering::Relaxed);
        }
        let diff = (now - self.month_start.load(Ordering::Relaxed)) as u32;
        let count = self.counter.fetch_add(1, Ordering::Relaxed) & 0xFFFF;
        // Hex by hand: `format!` costs more than the rest of the id.
        out.push_str(&self.prefix);
        push_hex(out, diff, 8);
        push_hex(out, count, 4);
        Ok(())
    }
}

/// Appends the low `digits` hex digits of `value`, upper case, most significant first.
fn push_hex(out: &mut String, value: u32, digits: u32) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for i in (0..digits).rev() {
        out.push(HEX[((value >> (i * 4)) & 0xF) as usize] as char);
    }
}

#[cfg(test)]
mod tests {
    use super::push_hex;

    #[test]
    fn hex_matches_format() {
        for v in [0u32, 1, 0xABCDEF, 0xFFFF_FFFF, 0x1234_5678] {
            let mut s = String::new();
            push_hex(&mut s, v, 8);
            assert_eq!(s, format!("{v:08X}"));
            let mut s = String::new();
            push_hex(&mut s, v & 0xFFFF, 4);
            assert_eq!(s, format!("{:04X}", v & 0xFFFF));
        }
    }
}
