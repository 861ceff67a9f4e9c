//! The native half of `Producer.send_many` / `send_arrow`: bodies (and keys) read from a
//! Python list or from Arrow buffers, straight into SEND_BATCH_MESSAGE requests
//! (`rocketpy_client::bulk`), no Python object made per message; one call per bulk send.
//! Python chooses the lanes and owns retries: each chunk's outcome comes back by its place.

use std::time::Duration;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyString, PyTuple};
use rocketpy_client::bulk::{props_len, ChunkPlace, ChunkWriter, Flight};
use rocketpy_client::Template;
use rocketpy_remoting::RemotingClient as NativeClient;

use crate::client_metrics;
use crate::send_lanes::{self, Lanes};
use crate::unique_id::UniqueIds;

/// Read-only bytes exported by a Python object (`bytes`, a `pyarrow.Buffer`, ...), held
/// for as long as this lives.
struct Exported {
    ptr: *const u8,
    len: usize,
    // Keeps the export (and so the memory) alive; released with the GIL on drop.
    _u8: Option<PyBuffer<u8>>,
    _i8: Option<PyBuffer<i8>>,
}

// SAFETY: the pointer is into memory the held PyBuffer keeps exported; it is only read.
unsafe impl Send for Exported {}
unsafe impl Sync for Exported {}

impl Exported {
    fn of(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        // pyarrow exports its buffers as signed bytes ("b"), `bytes` as unsigned ("B").
        if let Ok(b) = PyBuffer::<u8>::get(obj) {
            return Self::check(b.buf_ptr() as *const u8, b.len_bytes(), b.is_c_contiguous()).map(
                |(ptr, len)| Exported {
                    ptr,
                    len,
                    _u8: Some(b),
                    _i8: None,
                },
            );
        }
        let b = PyBuffer::<i8>::get(obj)?;
        Self::check(b.buf_ptr() as *const u8, b.len_bytes(), b.is_c_contiguous()).map(
            |(ptr, len)| Exported {
                ptr,
                len,
                _u8: None,
                _i8: Some(b),
            },
        )
    }

    fn check(ptr: *const u8, len: usize, contiguous: bool) -> PyResult<(*const u8, usize)> {
        if !contiguous {
            return Err(PyValueError::new_err("an Arrow buffer must be contiguous"));
        }
        Ok((ptr, len))
    }

    fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `ptr..ptr+len` is the exported, read-only memory held alive by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// A variable-size Arrow column (binary or string, 32- or 64-bit offsets) handed over by its
/// buffers, as `pyarrow.Array.buffers()` gives them: rows `offset .. offset + length`.
#[pyclass(module = "rocketpy._native", frozen)]
pub struct ArrowColumn {
    validity: Option<Exported>,
    offsets: Exported,
    data: Exported,
    wide: bool,
    offset: usize,
    length: usize,
}

#[pymethods]
impl ArrowColumn {
    /// `validity` (a bitmap, or None when every row is present), `offsets` (`i32`, or `i64`
    /// when `wide`), `data`; checked here against `offset + length` so a row's bounds are
    /// checked once more against `data` when read.
    #[new]
    fn new(
        validity: Option<&Bound<'_, PyAny>>,
        offsets: &Bound<'_, PyAny>,
        data: Option<&Bound<'_, PyAny>>,
        wide: bool,
        offset: usize,
        length: usize,
    ) -> PyResult<Self> {
        let width = if wide { 8 } else { 4 };
        let offsets = Exported::of(offsets)?;
        let rows = offset
            .checked_add(length)
            .ok_or_else(|| PyValueError::new_err("offset + length overflows"))?;
        if offsets.len / width < rows + 1 {
            return Err(PyValueError::new_err(format!(
                "the offsets buffer holds {} bytes, too few for {rows} rows",
                offsets.len
            )));
        }
        let validity = validity.map(Exported::of).transpose()?;
        if let Some(v) = &validity {
            if v.len * 8 < rows {
                return Err(PyValueError::new_err("the validity bitmap is too short"));
            }
        }
        let data = match data {
            Some(d) => Exported::of(d)?,
            None => Exported {
                ptr: std::ptr::null(),
                len: 0,
                _u8: None,
                _i8: None,
            },
        };
        Ok(ArrowColumn {
            validity,
            offsets,
            data,
            wide,
            offset,
            length,
        })
    }

    fn __len__(&self) -> usize {
        self.length
    }
}

impl ArrowColumn {
    fn at(&self, i: usize) -> usize {
        let o = self.offsets.bytes();
        if self.wide {
            let b = &o[i * 8..i * 8 + 8];
            i64::from_le_bytes(b.try_into().expect("8 bytes")).max(0) as usize
        } else {
            let b = &o[i * 4..i * 4 + 4];
            i32::from_le_bytes(b.try_into().expect("4 bytes")).max(0) as usize
        }
    }

    /// Row `row` (None when null); an error when its offsets point outside the data.
    fn row(&self, row: usize) -> PyResult<Option<&[u8]>> {
        let i = self.offset + row;
        if let Some(v) = &self.validity {
            if v.bytes()[i / 8] & (1 << (i % 8)) == 0 {
                return Ok(None);
            }
        }
        let (start, end) = (self.at(i), self.at(i + 1));
        self.data
            .bytes()
            .get(start..end)
            .map(Some)
            .ok_or_else(|| PyValueError::new_err(format!("row {row}: offsets outside the data")))
    }
}

/// One input column: a list (or tuple) of values, or Arrow buffers.
enum Column<'py> {
    List(Bound<'py, PyList>),
    Tuple(Bound<'py, PyTuple>),
    Arrow(Bound<'py, ArrowColumn>),
}

impl<'py> Column<'py> {
    fn of(obj: Bound<'py, PyAny>) -> PyResult<Self> {
        if obj.cast::<ArrowColumn>().is_ok() {
            return Ok(Column::Arrow(obj.cast_into()?));
        }
        if obj.cast::<PyList>().is_ok() {
            return Ok(Column::List(obj.cast_into()?));
        }
        if obj.cast::<PyTuple>().is_ok() {
            return Ok(Column::Tuple(obj.cast_into()?));
        }
        Err(PyValueError::new_err(
            "a column is a list, a tuple or an ArrowColumn",
        ))
    }

    fn len(&self) -> PyResult<usize> {
        Ok(match self {
            Column::List(s) => s.len(),
            Column::Tuple(s) => s.len(),
            Column::Arrow(a) => a.get().length,
        })
    }

    /// Calls `f` with row `i` as bytes (None when null or `None`); `bytes`, `bytearray`,
    /// `str` (UTF-8) or any object exporting a buffer.
    fn with_row<T>(&self, i: usize, f: impl FnOnce(Option<&[u8]>) -> PyResult<T>) -> PyResult<T> {
        // Typed access: no index object is made per row.
        let item = match self {
            Column::Arrow(a) => return f(a.get().row(i)?),
            Column::List(l) => l.get_item(i)?,
            Column::Tuple(t) => t.get_item(i)?,
        };
        if let Ok(b) = item.cast::<PyBytes>() {
            return f(Some(b.as_bytes()));
        }
        if item.is_none() {
            return f(None);
        }
        if let Ok(s) = item.cast::<PyString>() {
            return f(Some(s.to_str()?.as_bytes()));
        }
        if let Ok(b) = item.cast::<PyByteArray>() {
            return f(Some(&b.to_vec()));
        }
        let e = Exported::of(&item).map_err(|_| {
            PyValueError::new_err(format!(
                "row {i}: {} is not bytes, str or a buffer",
                item.get_type().name().map_or("?".into(), |n| n.to_string())
            ))
        })?;
        f(Some(e.bytes()))
    }
}

/// `body` of row `row` when it can be sent: present, not empty, at most `max` bytes.
fn checked_body(body: Option<&[u8]>, row: usize, max: usize) -> PyResult<&[u8]> {
    match body {
        Some(b) if !b.is_empty() && b.len() <= max => Ok(b),
        Some(b) if !b.is_empty() => Err(PyValueError::new_err(format!(
            "row {row}: the body is {} bytes, over the limit {max}",
            b.len()
        ))),
        Some(_) => Err(PyValueError::new_err(format!(
            "row {row} has an empty body; every message needs one"
        ))),
        None => Err(PyValueError::new_err(format!(
            "row {row} has a null body; every message needs one"
        ))),
    }
}

/// The key of row `row` (None for none) when it can be sent: UTF-8, no separator.
fn checked_key(key: Option<&[u8]>, row: usize) -> PyResult<Option<&str>> {
    let key = key
        .map(std::str::from_utf8)
        .transpose()
        .map_err(|_| PyValueError::new_err(format!("row {row}: the key is not UTF-8")))?;
    if let Some(k) = key {
        rocketpy_protocol::message::properties::check("KEYS", k)
            .map_err(|e| PyValueError::new_err(format!("row {row}: {e}")))?;
    }
    Ok(key)
}

/// What every chunk of one bulk send shares.
pub struct BulkSend<'a> {
    pub client: &'a NativeClient,
    pub lanes: &'a Lanes,
    pub template: &'a Template,
    pub unique_ids: &'a UniqueIds,
    pub client_id: &'a str,
}

/// One chunk's outcome for Python: `(lane, segment, start, count, code, queue_id,
/// queue_offset, remark, error)`: `code` the broker's answer code (None when the transport
/// failed, `error` then says why), `queue_id` / `queue_offset` of the first message.
pub type Outcome = (
    u32,
    usize,
    usize,
    usize,
    Option<i32>,
    Option<i32>,
    Option<i64>,
    Option<String>,
    Option<String>,
);

/// The settings of one bulk send.
pub struct Limits {
    /// The largest body accepted (the producer's `max_message_size`).
    pub max_body: usize,
    /// A request carries at most this many bytes (one larger message goes alone).
    pub max_request_bytes: usize,
    /// Requests in flight at most.
    pub window: usize,
    pub timeout: Duration,
}

impl BulkSend<'_> {
    /// Sends rows `start..stop` of segment `segment` for each of `ranges`, chunk by chunk,
    /// in turn over `lanes`; every message gets the `shared` properties, its key, and a new
    /// unique id. Waits (GIL released) while the window is full, and at the end for every
    /// answer. Every row is checked first: a null, empty or oversized body, a key that
    /// cannot be sent, properties that do not fit or a range outside its segment raise
    /// ValueError before anything goes.
    pub fn run(
        &self,
        py: Python<'_>,
        lane_ids: &[u32],
        segments: Vec<(Bound<'_, PyAny>, Option<Bound<'_, PyAny>>, usize)>,
        ranges: &[(usize, usize, usize)],
        shared: &str,
        limits: &Limits,
    ) -> PyResult<Vec<Outcome>> {
        if lane_ids.is_empty() {
            return Err(PyValueError::new_err("no lanes to send on"));
        }
        let lanes = lane_ids
            .iter()
            .map(|&id| send_lanes::lane(self.lanes, id).map(|l| (id, l)))
            .collect::<PyResult<Vec<_>>>()?;
        let columns = segments
            .into_iter()
            .map(|(b, k, base)| Ok((Column::of(b)?, k.map(Column::of).transpose()?, base)))
            .collect::<PyResult<Vec<_>>>()?;
        // Every row is checked before any goes: a refused call sends nothing.
        let sample_id = self.unique_ids.next_id(py)?;
        for &(segment, start, stop) in ranges {
            let Some((bodies, keys, base)) = columns.get(segment) else {
                return Err(PyValueError::new_err(format!("no segment {segment}")));
            };
            let keys_len = keys.as_ref().map(Column::len).transpose()?;
            if start > stop || stop > bodies.len()? || keys_len.is_some_and(|n| stop > n) {
                return Err(PyValueError::new_err(format!(
                    "rows {start}..{stop} are outside segment {segment}"
                )));
            }
            for row in start..stop {
                bodies.with_row(row, |b| {
                    checked_body(b, base + row, limits.max_body).map(drop)
                })?;
                let props = match keys {
                    Some(k) => k.with_row(row, |key| {
                        Ok(props_len(shared, checked_key(key, base + row)?, &sample_id))
                    })?,
                    None => props_len(shared, None, &sample_id),
                };
                if props > i16::MAX as usize {
                    return Err(PyValueError::new_err(format!(
                        "row {}: the message's properties take {props} bytes, over 32767",
                        base + row
                    )));
                }
            }
        }
        let flight = Flight::new();
        let mut turn = 0usize;
        let mut uniq = String::with_capacity(32);
        let mut sent: PyResult<()> = Ok(());
        'ranges: for &(segment, start, stop) in ranges {
            let (bodies, keys, base) = &columns[segment];
            let mut row = start;
            while row < stop {
                let (lane_id, lane) = &lanes[turn % lanes.len()];
                turn += 1;
                let mut chunk = ChunkWriter::new(limits.max_request_bytes);
                let first = row;
                let now = rocketpy_protocol::clock::now_millis();
                while row < stop {
                    uniq.clear();
                    let fitted = self.unique_ids.write_next_at(py, now, &mut uniq);
                    let fitted = fitted.and_then(|()| {
                        bodies.with_row(row, |body| {
                            let body = checked_body(body, base + row, limits.max_body)?;
                            let mut key_of = |key: Option<&[u8]>| -> PyResult<bool> {
                                let key = checked_key(key, base + row)?;
                                if !chunk.fits(body.len(), props_len(shared, key, &uniq)) {
                                    return Ok(false);
                                }
                                chunk
                                    .push(body, shared, key, &uniq)
                                    .map_err(PyValueError::new_err)?;
                                Ok(true)
                            };
                            match keys {
                                Some(k) => k.with_row(row, key_of),
                                None => key_of(None),
                            }
                        })
                    });
                    match fitted {
                        Ok(true) => row += 1,
                        Ok(false) => break,
                        Err(e) => {
                            // Checked above: only a failure of Python's clock callback, or
                            // rows changed meanwhile by another thread, ends up here.
                            sent = Err(e);
                            break 'ranges;
                        }
                    }
                }
                let (body, count) = chunk.take();
                let place = ChunkPlace {
                    lane: *lane_id,
                    segment,
                    start: first,
                    count,
                };
                let cmd = self.template.batch(lane, body, count);
                let window = limits.window;
                let f = flight.clone();
                crate::process::detach(py, || f.wait_below(window));
                flight.send(self.client, &lane.addr, cmd, limits.timeout, place);
            }
        }
        // Whatever went is waited for, also when the loop ended on an error.
        let f = flight.clone();
        let outcomes = crate::process::detach(py, || f.wait_all());
        sent?;
        Ok(outcomes
            .into_iter()
            .map(|o| {
                let p = o.place;
                let topic = lanes
                    .iter()
                    .find(|(id, _)| *id == p.lane)
                    .map(|(_, l)| l.topic.as_str());
                match o.answer {
                    Ok(resp) => {
                        let a = rocketpy_client::SendAnswer::new(&resp);
                        if let Some(topic) = topic {
                            client_metrics::record(
                                self.client_id,
                                topic,
                                o.elapsed,
                                resp.code == 0,
                                p.count as u64,
                            );
                        }
                        (
                            p.lane,
                            p.segment,
                            p.start,
                            p.count,
                            Some(resp.code),
                            a.queue_id(),
                            Some(a.offset()),
                            resp.remark.clone(),
                            None,
                        )
                    }
                    Err(e) => {
                        if let Some(topic) = topic {
                            client_metrics::record(
                                self.client_id,
                                topic,
                                o.elapsed,
                                false,
                                p.count as u64,
                            );
                        }
                        (
                            p.lane,
                            p.segment,
                            p.start,
                            p.count,
                            None,
                            None,
                            None,
                            None,
                            Some(e),
                        )
                    }
                }
            })
            .collect())
    }
}
