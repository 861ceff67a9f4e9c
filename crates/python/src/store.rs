//! `EmbeddedStore`: the Rust message store used in-process, with no server (the Python class
//! `rocketpy.store.MessageStore` wraps it). Long operations release the GIL.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use pyo3::prelude::*;
use rocketpy_protocol::message::java_hash;
use rocketpy_protocol::message::properties;
use rocketpy_protocol::message::record::MessageToStore;
use rocketpy_store::{GetMessageStatus, MessageStore, PutStatus, StoreConfig};

use crate::errors;
use crate::message::MessageExt;
use crate::process;

/// The in-process store.
#[pyclass(module = "rocketpy._native", frozen)]
pub struct EmbeddedStore {
    inner: Arc<MessageStore>,
    host: SocketAddr,
    owner: process::Owner,
}

/// A stored message's placement: (status, offset message id, queue id, queue offset,
/// CommitLog offset, store timestamp).
type PutTuple = (&'static str, String, i32, i64, i64, i64);

/// A read: (status, next begin offset, min offset, max offset, messages).
type GetTuple = (&'static str, i64, i64, i64, Vec<MessageExt>);

fn status_name(s: GetMessageStatus) -> &'static str {
    match s {
        GetMessageStatus::Found => "FOUND",
        GetMessageStatus::NoMatchedMessage => "NO_MATCHED_MESSAGE",
        GetMessageStatus::MessageWasRemoving => "MESSAGE_WAS_REMOVING",
        GetMessageStatus::OffsetFoundNull => "OFFSET_FOUND_NULL",
        GetMessageStatus::OffsetOverflowBadly => "OFFSET_OVERFLOW_BADLY",
        GetMessageStatus::OffsetOverflowOne => "OFFSET_OVERFLOW_ONE",
        GetMessageStatus::OffsetTooSmall => "OFFSET_TOO_SMALL",
        GetMessageStatus::NoMatchedLogicQueue => "NO_MATCHED_LOGIC_QUEUE",
        GetMessageStatus::NoMessageInQueue => "NO_MESSAGE_IN_QUEUE",
    }
}

impl EmbeddedStore {
    fn message(
        &self,
        topic: &str,
        queue_id: i32,
        body: &[u8],
        props: &str,
        flag: i32,
        born: i64,
    ) -> MessageToStore {
        MessageToStore {
            topic: topic.to_owned(),
            queue_id,
            flag,
            body: Bytes::copy_from_slice(body),
            properties: props.to_owned(),
            tags_code: java_hash::tags_code(properties::find(props, properties::keys::TAGS)),
            sys_flag: 0,
            born_timestamp: born,
            born_host: self.host,
            store_host: self.host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
        }
    }

    fn records_to_messages(records: Vec<Bytes>) -> PyResult<Vec<MessageExt>> {
        let mut out = Vec::with_capacity(records.len());
        for r in records {
            out.extend(MessageExt::decode_all(&r, None)?);
        }
        Ok(out)
    }
}

#[pymethods]
impl EmbeddedStore {
    /// Opens (and recovers) the store at `path`; `config` holds RocketMQ store keys.
    #[new]
    #[pyo3(signature = (path, config=None, store_host="127.0.0.1:10911"))]
    fn new(
        py: Python<'_>,
        path: &str,
        config: Option<HashMap<String, String>>,
        store_host: &str,
    ) -> PyResult<Self> {
        let mut c = StoreConfig::new(path);
        for (k, v) in config.unwrap_or_default() {
            if !c.set(&k, &v).map_err(|e| errors::store(e.into()))? {
                return Err(errors::ConfigError::new_err(format!(
                    "unknown store setting {k:?}"
                )));
            }
        }
        let host: SocketAddr = store_host.parse().map_err(|_| {
            errors::ConfigError::new_err(format!("store_host {store_host:?} is not ip:port"))
        })?;
        let inner = process::detach(py, || MessageStore::open(c)).map_err(errors::store)?;
        Ok(EmbeddedStore {
            inner,
            host,
            owner: process::Owner::current(),
        })
    }

    /// Stores `(topic, queue_id, body, properties, flag, born_timestamp)` items in order.
    fn put_batch(
        &self,
        py: Python<'_>,
        items: Vec<(String, i32, Vec<u8>, String, i32, i64)>,
    ) -> PyResult<Vec<PutTuple>> {
        self.owner.check("store")?;
        let msgs: Vec<MessageToStore> = items
            .iter()
            .map(|(t, q, b, p, f, born)| self.message(t, *q, b, p, *f, *born))
            .collect();
        let results =
            process::detach(py, || self.inner.put_messages(&msgs)).map_err(errors::store)?;
        Ok(results
            .into_iter()
            .zip(&msgs)
            .map(|(r, m)| {
                let status = match r.status {
                    PutStatus::PutOk => "PUT_OK",
                    PutStatus::FlushDiskTimeout => "FLUSH_DISK_TIMEOUT",
                };
                // A delayed message waits in the schedule topic: its queue offset is there.
                let delayed = properties::find(&m.properties, properties::keys::DELAY_TIME_LEVEL)
                    .and_then(|l| l.trim().parse::<i32>().ok())
                    .is_some_and(|l| l > 0);
                let queue_id = if delayed { -1 } else { m.queue_id };
                (
                    status,
                    r.append.msg_id(),
                    queue_id,
                    r.append.logics_offset,
                    r.append.wrote_offset,
                    r.append.store_timestamp,
                )
            })
            .collect())
    }

    /// Up to `max_nums` messages of a queue from `offset`, optionally only those with one of
    /// `tags`.
    #[pyo3(signature = (topic, queue_id, offset, max_nums=32, tags=None))]
    fn get(
        &self,
        py: Python<'_>,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_nums: i32,
        tags: Option<Vec<String>>,
    ) -> PyResult<GetTuple> {
        self.owner.check("store")?;
        let codes: Option<Vec<i64>> =
            tags.map(|t| t.iter().map(|t| java_hash::tags_code(Some(t))).collect());
        let result = process::detach(py, || {
            let filter = codes.as_ref().map(|c| move |code: i64| c.contains(&code));
            let f = filter
                .as_ref()
                .map(|f| f as &dyn rocketpy_store::MessageFilter);
            self.inner.get_message(topic, queue_id, offset, max_nums, f)
        });
        let messages = Self::records_to_messages(result.messages)?;
        Ok((
            status_name(result.status),
            result.next_begin_offset,
            result.min_offset,
            result.max_offset,
            messages,
        ))
    }

    /// The first readable offset of a queue.
    fn min_offset(&self, topic: &str, queue_id: i32) -> i64 {
        self.inner.min_offset_in_queue(topic, queue_id)
    }

    /// One past the last offset of a queue.
    fn max_offset(&self, topic: &str, queue_id: i32) -> i64 {
        self.inner.max_offset_in_queue(topic, queue_id)
    }

    /// The first offset stored at or after `timestamp` (ms).
    fn offset_by_time(&self, py: Python<'_>, topic: &str, queue_id: i32, timestamp: i64) -> i64 {
        process::detach(py, || self.inner.offset_by_time(topic, queue_id, timestamp))
    }

    /// Store time of the first readable message of a queue.
    fn earliest_time(&self, topic: &str, queue_id: i32) -> Option<i64> {
        self.inner.earliest_message_time_in_queue(topic, queue_id)
    }

    /// Messages with UNIQ_KEY or a KEYS token equal to `key`, newest first.
    fn query_by_key(
        &self,
        py: Python<'_>,
        topic: &str,
        key: &str,
        max_num: usize,
        begin: i64,
        end: i64,
    ) -> PyResult<Vec<MessageExt>> {
        let records = process::detach(py, || {
            self.inner.query_message(topic, key, max_num, begin, end)
        });
        Self::records_to_messages(records)
    }

    /// The message named by an offset message id, if it is still stored.
    fn view_by_offset_msg_id(&self, msg_id: &str) -> PyResult<Option<MessageExt>> {
        match self
            .inner
            .look_message_by_offset_msg_id(msg_id)
            .map_err(errors::store)?
        {
            Some(r) => Ok(MessageExt::decode_all(&r, None)?.into_iter().next()),
            None => Ok(None),
        }
    }

    /// Every (topic, queue id) with messages.
    fn topic_queues(&self) -> Vec<(String, i32)> {
        self.inner.topic_queues()
    }

    /// Writes everything to disk.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.owner.check("store")?;
        process::detach(py, || self.inner.flush()).map_err(errors::store)
    }

    /// Flushes and closes; later calls fail with StoreError.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.owner.check("store")?;
        process::detach(py, || self.inner.shutdown()).map_err(errors::store)
    }

    /// Whether `close` ran.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_shut_down()
    }
}
