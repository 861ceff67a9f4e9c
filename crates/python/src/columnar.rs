//! Messages as columns in Apache Arrow's memory layout, built straight from CommitLog
//! records: the data path of the Spark reader, where a Python object per message would cost
//! more than reading the message.
//!
//! Layouts (Arrow columnar format): variable-size columns are `i32` offsets (`rows + 1`,
//! starting at 0) plus the bytes; a validity bitmap (LSB first, 1 = present) exists only
//! once a null was pushed; the properties map is list offsets plus key and value columns.
//! A batch stays below [`MAX_BATCH_BYTES`] of variable-size data so `i32` offsets never
//! overflow.

use std::collections::HashSet;

use rocketpy_protocol::flag::message as sys_flag;
use rocketpy_protocol::message::compression::inflate;
use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::message::record::{self, RecordView};
use rocketpy_protocol::subscription::tags_of;
use rocketpy_store::{Result, StoreError};

/// Variable-size bytes a batch holds at most before [`ColumnBatch::is_full`] says so.
pub const MAX_BATCH_BYTES: usize = 256 * 1024 * 1024;

/// A string or binary column.
#[derive(Debug, Clone)]
pub struct VarColumn {
    /// `len + 1` offsets into `data`.
    pub offsets: Vec<i32>,
    /// The values, back to back.
    pub data: Vec<u8>,
    /// Validity bitmap, present once a null was pushed.
    pub validity: Option<Vec<u8>>,
    len: usize,
}

impl Default for VarColumn {
    fn default() -> Self {
        VarColumn {
            offsets: vec![0],
            data: Vec::new(),
            validity: None,
            len: 0,
        }
    }
}

impl VarColumn {
    /// Appends a value (`None` = null).
    pub fn push(&mut self, value: Option<&[u8]>) {
        if let Some(v) = value {
            self.data.extend_from_slice(v);
        } else if self.validity.is_none() {
            // All earlier values were present.
            let mut bits = vec![0xFFu8; self.len.div_ceil(8)];
            if self.len % 8 != 0 {
                *bits.last_mut().expect("non-empty") = (1u8 << (self.len % 8)) - 1;
            }
            self.validity = Some(bits);
        }
        if let Some(bits) = self.validity.as_mut() {
            if self.len % 8 == 0 {
                bits.push(0);
            }
            if value.is_some() {
                bits[self.len / 8] |= 1 << (self.len % 8);
            }
        }
        self.len += 1;
        self.offsets.push(self.data.len() as i32);
    }

    /// Values pushed.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Nulls pushed.
    #[cfg(test)]
    pub fn null_count(&self) -> usize {
        match &self.validity {
            None => 0,
            Some(bits) => self.len - bits.iter().map(|b| b.count_ones() as usize).sum::<usize>(),
        }
    }
}

/// Which messages a read keeps: by exact tag (after the tags-hash filter of a broker), or
/// by an SQL92 expression on the properties (what a broker with `enablePropertyFilter=true`
/// evaluated already; a store read offline evaluates it here).
#[derive(Debug, Clone, Default)]
pub struct RowFilter {
    tags: Option<HashSet<String>>,
    sql: Option<rocketpy_filter::Filter>,
}

impl RowFilter {
    /// From a subscription: a tag expression (`*` or empty keeps all, `A || B` keeps those
    /// tags), or, when `expression_type` is `SQL92`, an SQL92 expression (Err: it does not
    /// compile, or the type is unknown).
    pub fn parse(
        expression: &str,
        expression_type: &str,
    ) -> std::result::Result<RowFilter, String> {
        match expression_type {
            "" | "TAG" => Ok(RowFilter {
                tags: tags_of(expression).map(|t| t.into_iter().map(str::to_owned).collect()),
                sql: None,
            }),
            "SQL92" => Ok(RowFilter {
                tags: None,
                sql: Some(rocketpy_filter::Filter::compile(expression).map_err(|e| e.to_string())?),
            }),
            other => Err(format!("unknown expression type {other:?} (TAG or SQL92)")),
        }
    }

    /// Whether a message with these tags and stored properties is kept.
    pub fn accepts(&self, tags: Option<&str>, properties: &str) -> bool {
        if let Some(sql) = &self.sql {
            return sql.matches(&rocketpy_filter::EncodedProperties(properties));
        }
        match (&self.tags, tags) {
            (None, _) => true,
            (Some(set), Some(t)) => set.contains(t),
            (Some(_), None) => false,
        }
    }
}

/// Messages in columns (the Spark reader's schema, in order).
#[derive(Debug, Clone, Default)]
pub struct ColumnBatch {
    pub topic: VarColumn,
    pub broker_name: VarColumn,
    pub queue_id: Vec<i32>,
    pub queue_offset: Vec<i64>,
    pub msg_id: VarColumn,
    pub tags: VarColumn,
    pub keys: VarColumn,
    pub body: VarColumn,
    /// Properties: `rows + 1` offsets into `property_keys` / `property_values`.
    pub property_offsets: Vec<i32>,
    pub property_keys: VarColumn,
    pub property_values: VarColumn,
    /// Milliseconds since the epoch.
    pub born_timestamp: Vec<i64>,
    /// Milliseconds since the epoch.
    pub store_timestamp: Vec<i64>,
    pub reconsume_times: Vec<i32>,
    bytes: usize,
}

impl ColumnBatch {
    /// An empty batch.
    pub fn new() -> ColumnBatch {
        ColumnBatch {
            property_offsets: vec![0],
            ..ColumnBatch::default()
        }
    }

    /// Rows held.
    pub fn rows(&self) -> usize {
        self.queue_offset.len()
    }

    /// Whether the batch should be handed on before more rows are pushed.
    pub fn is_full(&self) -> bool {
        self.bytes >= MAX_BATCH_BYTES
    }

    /// Appends the message of `v` if `filter` accepts it; returns whether it did.
    pub fn push(
        &mut self,
        v: &RecordView<'_>,
        broker_name: &str,
        filter: &RowFilter,
    ) -> Result<bool> {
        let mut tags = None;
        let mut msg_keys = None;
        let mut uniq = None;
        let pairs = v
            .properties
            .split(properties::PROPERTY_SEPARATOR)
            .filter_map(|item| item.split_once(properties::NAME_VALUE_SEPARATOR));
        for (k, val) in pairs.clone() {
            match k {
                keys::TAGS => tags = Some(val),
                keys::KEYS => msg_keys = Some(val),
                keys::UNIQ_KEY => uniq = Some(val),
                _ => {}
            }
        }
        if !filter.accepts(tags, v.properties) {
            return Ok(false);
        }
        let inflated;
        let body = if v.sys_flag & sys_flag::COMPRESSED != 0 {
            inflated = inflate(v.body).map_err(|e| {
                StoreError::corrupt(
                    format!("message at CommitLog offset {}", v.physical_offset),
                    e,
                )
            })?;
            &inflated[..]
        } else {
            v.body
        };
        self.topic.push(Some(v.topic.as_bytes()));
        self.broker_name.push(Some(broker_name.as_bytes()));
        self.queue_id.push(v.queue_id);
        self.queue_offset.push(v.queue_offset);
        match uniq {
            Some(id) => self.msg_id.push(Some(id.as_bytes())),
            None => self.msg_id.push(Some(
                record::offset_msg_id(&v.store_host, v.physical_offset).as_bytes(),
            )),
        }
        self.tags.push(tags.map(str::as_bytes));
        self.keys.push(msg_keys.map(str::as_bytes));
        self.body.push(Some(body));
        for (k, val) in pairs {
            self.property_keys.push(Some(k.as_bytes()));
            self.property_values.push(Some(val.as_bytes()));
        }
        self.property_offsets.push(self.property_keys.len() as i32);
        self.born_timestamp.push(v.born_timestamp);
        self.store_timestamp.push(v.store_timestamp);
        self.reconsume_times.push(v.reconsume_times);
        self.bytes += body.len() + v.properties.len() + v.topic.len() + 64;
        Ok(true)
    }

    /// Decodes concatenated records (a PULL_MESSAGE body) and appends those `filter` keeps
    /// with a queue offset below `end`; returns the last queue offset seen (kept or not).
    pub fn push_records(
        &mut self,
        data: &[u8],
        broker_name: &str,
        filter: &RowFilter,
        end: i64,
    ) -> Result<Option<i64>> {
        let mut last = None;
        for v in record::decode_all(data)? {
            if v.queue_offset >= end {
                break;
            }
            last = Some(v.queue_offset);
            self.push(&v, broker_name, filter)?;
        }
        Ok(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validity_appears_with_the_first_null() {
        let mut c = VarColumn::default();
        for i in 0..10 {
            c.push(Some(format!("v{i}").as_bytes()));
        }
        c.push(None);
        c.push(Some(b"x"));
        let bits = c.validity.as_ref().unwrap();
        assert_eq!(bits.len(), 2);
        assert_eq!(bits[0], 0xFF);
        assert_eq!(bits[1], 0b0000_1011); // rows 8, 9 present, 10 null, 11 present
        assert_eq!(c.null_count(), 1);
        assert_eq!(c.offsets.len(), 13);
        assert_eq!(*c.offsets.last().unwrap() as usize, c.data.len());
    }

    #[test]
    fn row_filter() {
        let f = RowFilter::parse("A || B", "TAG").unwrap();
        assert!(f.accepts(Some("A"), "") && f.accepts(Some("B"), ""));
        assert!(!f.accepts(Some("C"), "") && !f.accepts(None, ""));
        assert!(RowFilter::parse("*", "").unwrap().accepts(None, ""));
        let sql = RowFilter::parse("a > 5 AND TAGS = 'X'", "SQL92").unwrap();
        assert!(sql.accepts(Some("X"), "a\u{1}7\u{2}TAGS\u{1}X\u{2}"));
        assert!(!sql.accepts(Some("X"), "a\u{1}3\u{2}TAGS\u{1}X\u{2}"));
        assert!(
            !sql.accepts(None, ""),
            "a missing property makes the comparison false"
        );
        assert!(RowFilter::parse("a >", "SQL92")
            .unwrap_err()
            .contains("character"));
        assert!(RowFilter::parse("x", "CLASS").is_err());
    }
}
