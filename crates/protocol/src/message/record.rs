//! The CommitLog record, byte for byte as RocketMQ 4.x writes it. All integers big-endian.
//!
//! ```text
//!  0 TOTALSIZE i32          4 MAGICCODE i32 (0xDAA320A7)   8 BODYCRC i32 (crc32 & 0x7FFFFFFF)
//! 12 QUEUEID i32           16 FLAG i32                     20 QUEUEOFFSET i64
//! 28 PHYSICALOFFSET i64    36 SYSFLAG i32                  40 BORNTIMESTAMP i64
//! 48 BORNHOST (ip 4|16 + port i32)   STORETIMESTAMP i64   STOREHOST (ip 4|16 + port i32)
//!    RECONSUMETIMES i32    PREPAREDTRANSACTIONOFFSET i64
//!    BODYLEN i32 + body    TOPICLEN i8 + topic             PROPLEN i16 + properties
//! total = 91 + body + topic + properties   (+12 for each IPv6 host)
//! ```
//! End of file: `[remaining i32][0xCBD43194]`, written when a record does not fit with
//! 8 bytes to spare; readers treat it as the end of that file.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use bytes::Bytes;

use crate::error::{ProtocolError, Result};

/// MAGICCODE of a message record.
pub const MESSAGE_MAGIC_CODE: i32 = 0xDAA3_20A7_u32 as i32;
/// MAGICCODE of the end-of-file filler.
pub const BLANK_MAGIC_CODE: i32 = 0xCBD4_3194_u32 as i32;
/// Bytes always left for the end-of-file filler.
pub const END_FILE_MIN_BLANK_LENGTH: usize = 8;
/// Record size with empty body, topic and properties and IPv4 hosts.
pub const FIXED_LEN: usize = 91;
/// Offset of QUEUEOFFSET within a record.
pub const QUEUE_OFFSET_POS: usize = 20;
/// Offset of PHYSICALOFFSET within a record.
pub const PHYSICAL_OFFSET_POS: usize = 28;
/// Offset of STORETIMESTAMP within a record with an IPv4 born host.
pub const STORE_TIMESTAMP_POS_V4: usize = 56;

use crate::flag::message as sys_flag;
pub use crate::message::msg_id::{
    hex_upper, offset_msg_id, parse_offset_msg_id, push_offset_msg_id,
};

/// A message as handed to the store (`MessageExtBrokerInner`).
#[derive(Debug, Clone)]
pub struct MessageToStore {
    /// Topic (1..=127 bytes).
    pub topic: String,
    /// Queue within the topic.
    pub queue_id: i32,
    /// User flag.
    pub flag: i32,
    /// The body, stored as given (compressed bodies carry COMPRESSED in `sys_flag`).
    pub body: Bytes,
    /// Encoded properties (`name\x01value\x02...`, at most 32767 bytes).
    pub properties: String,
    /// Consume-queue tags code (tags hash, or delivery time for delayed messages).
    pub tags_code: i64,
    /// SYSFLAG; the host bits are set by the encoder from the addresses.
    pub sys_flag: i32,
    /// Producer's timestamp (ms).
    pub born_timestamp: i64,
    /// Producer's address.
    pub born_host: SocketAddr,
    /// This broker's address.
    pub store_host: SocketAddr,
    /// Times the message was re-delivered.
    pub reconsume_times: i32,
    /// Offset of the half message, for transactions.
    pub prepared_transaction_offset: i64,
}

fn host_len(addr: &SocketAddr) -> usize {
    match addr {
        SocketAddr::V4(_) => 8,
        SocketAddr::V6(_) => 20,
    }
}

impl MessageToStore {
    /// SYSFLAG with the IPv6 bits matching the addresses.
    pub fn effective_sys_flag(&self) -> i32 {
        let mut flag = self.sys_flag & !(sys_flag::BORNHOST_V6 | sys_flag::STOREHOST_V6);
        if self.born_host.is_ipv6() {
            flag |= sys_flag::BORNHOST_V6;
        }
        if self.store_host.is_ipv6() {
            flag |= sys_flag::STOREHOST_V6;
        }
        flag
    }

    /// The encoded record length, after checking the variable fields fit their length prefixes.
    pub fn record_len(&self) -> Result<usize> {
        if self.topic.is_empty() || self.topic.len() > 127 {
            return Err(ProtocolError::InvalidArgument(format!(
                "topic length {} outside 1..=127",
                self.topic.len()
            )));
        }
        if self.properties.len() > i16::MAX as usize {
            return Err(ProtocolError::InvalidArgument(format!(
                "properties of {} bytes exceed 32767",
                self.properties.len()
            )));
        }
        Ok(FIXED_LEN - 16
            + host_len(&self.born_host)
            + host_len(&self.store_host)
            + self.body.len()
            + self.topic.len()
            + self.properties.len())
    }
}

/// `crc32(body) & 0x7FFFFFFF`, as RocketMQ's `UtilAll.crc32`.
pub fn body_crc(body: &[u8]) -> i32 {
    (crc32fast::hash(body) & 0x7FFF_FFFF) as i32
}

struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl Writer<'_> {
    fn put(&mut self, bytes: &[u8]) {
        self.buf[self.pos..self.pos + bytes.len()].copy_from_slice(bytes);
        self.pos += bytes.len();
    }
    fn i32(&mut self, v: i32) {
        self.put(&v.to_be_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.put(&v.to_be_bytes());
    }
    fn host(&mut self, addr: &SocketAddr) {
        match addr.ip() {
            IpAddr::V4(ip) => self.put(&ip.octets()),
            IpAddr::V6(ip) => self.put(&ip.octets()),
        }
        self.i32(addr.port() as i32);
    }
}

/// Where and when a record is written; decided by the CommitLog under its lock.
#[derive(Debug, Clone, Copy)]
pub struct Placement {
    /// QUEUEOFFSET: index in the consume queue.
    pub queue_offset: i64,
    /// PHYSICALOFFSET: position in the CommitLog.
    pub physical_offset: i64,
    /// STORETIMESTAMP.
    pub store_timestamp: i64,
}

/// Writes the record of `msg` into `buf`, which must be exactly `msg.record_len()` long;
/// `crc` is `body_crc(&msg.body)` (computed by the caller, outside any lock).
pub fn encode_into(msg: &MessageToStore, at: Placement, crc: i32, buf: &mut [u8]) {
    let total = buf.len();
    let mut w = Writer { buf, pos: 0 };
    w.i32(total as i32);
    w.i32(MESSAGE_MAGIC_CODE);
    w.i32(crc);
    w.i32(msg.queue_id);
    w.i32(msg.flag);
    w.i64(at.queue_offset);
    w.i64(at.physical_offset);
    w.i32(msg.effective_sys_flag());
    w.i64(msg.born_timestamp);
    w.host(&msg.born_host);
    w.i64(at.store_timestamp);
    w.host(&msg.store_host);
    w.i32(msg.reconsume_times);
    w.i64(msg.prepared_transaction_offset);
    w.i32(msg.body.len() as i32);
    w.put(&msg.body);
    w.put(&[msg.topic.len() as u8]);
    w.put(msg.topic.as_bytes());
    w.put(&(msg.properties.len() as i16).to_be_bytes());
    w.put(msg.properties.as_bytes());
    debug_assert_eq!(w.pos, total);
}

/// Encodes `msg` into a new vector (tests, and callers that need a standalone record).
pub fn encode(msg: &MessageToStore, at: Placement) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; msg.record_len()?];
    encode_into(msg, at, body_crc(&msg.body), &mut buf);
    Ok(buf)
}

/// Writes the end-of-file filler into `buf` (at least 8 bytes).
pub fn encode_blank(buf: &mut [u8]) {
    let len = buf.len() as i32;
    buf[0..4].copy_from_slice(&len.to_be_bytes());
    buf[4..8].copy_from_slice(&BLANK_MAGIC_CODE.to_be_bytes());
}

/// A decoded record that borrows its variable fields from the buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordView<'a> {
    pub total_size: i32,
    pub body_crc: i32,
    pub queue_id: i32,
    pub flag: i32,
    pub queue_offset: i64,
    pub physical_offset: i64,
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub born_host: SocketAddr,
    pub store_timestamp: i64,
    pub store_host: SocketAddr,
    pub reconsume_times: i32,
    pub prepared_transaction_offset: i64,
    pub body: &'a [u8],
    pub topic: &'a str,
    pub properties: &'a str,
}

/// What a position in a CommitLog file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// A message record.
    Message(RecordView<'a>),
    /// The end-of-file filler: the rest of the file is unused.
    EndOfFile,
    /// Zeroes: nothing was ever written here.
    Empty,
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

/// The error of a field that runs past its record: out of line, so that the readers below
/// inline into `decode` (every indexed, pulled or recovered record goes through them).
#[cold]
#[inline(never)]
fn overrun(pos: usize, len: usize) -> ProtocolError {
    ProtocolError::corrupt(
        "commitlog record",
        format!("field at {pos} overruns the record of {len} bytes"),
    )
}

impl<'a> Reader<'a> {
    #[inline]
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.buf.len());
        let Some(end) = end else {
            return Err(overrun(self.pos, self.buf.len()));
        };
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    #[inline]
    fn i8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    #[inline]
    fn i16(&mut self) -> Result<i16> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }
    #[inline]
    fn i32(&mut self) -> Result<i32> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    #[inline]
    fn i64(&mut self) -> Result<i64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }
    #[inline]
    fn host(&mut self, v6: bool) -> Result<SocketAddr> {
        let ip = if v6 {
            let mut a = [0u8; 16];
            a.copy_from_slice(self.take(16)?);
            IpAddr::from(a)
        } else {
            let b = self.take(4)?;
            IpAddr::V4(Ipv4Addr::new(b[0], b[1], b[2], b[3]))
        };
        let port = self.i32()?;
        Ok(SocketAddr::new(ip, port as u16))
    }
    fn len_prefixed(&mut self, len: i64, what: &str) -> Result<&'a [u8]> {
        if len < 0 {
            return Err(ProtocolError::corrupt(
                "commitlog record",
                format!("negative {what} length {len}"),
            ));
        }
        self.take(len as usize)
    }
}

/// Reads the total size at the head of `buf` (a record, a filler, or 0 for unwritten space).
pub fn peek_size(buf: &[u8]) -> Option<(i32, i32)> {
    if buf.len() < 8 {
        return None;
    }
    let size = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    let magic = i32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
    Some((size, magic))
}

/// Decodes the record at the start of `buf` (the rest of a file from some position).
///
/// With `check_crc`, the body's CRC must match. Any inconsistency (a size that overruns the
/// buffer or disagrees with the fields, an unknown magic) is `Err`: recovery stops there.
pub fn decode(buf: &[u8], check_crc: bool) -> Result<Decoded<'_>> {
    let Some((total, magic)) = peek_size(buf) else {
        return if buf.iter().all(|b| *b == 0) {
            Ok(Decoded::Empty)
        } else {
            Err(ProtocolError::corrupt(
                "commitlog",
                "fewer than 8 bytes left and not zero",
            ))
        };
    };
    match magic {
        MESSAGE_MAGIC_CODE => {}
        BLANK_MAGIC_CODE => return Ok(Decoded::EndOfFile),
        0 if total == 0 => return Ok(Decoded::Empty),
        other => {
            return Err(ProtocolError::corrupt(
                "commitlog record",
                format!("bad magic code {other:#010x}"),
            ))
        }
    }
    if total < FIXED_LEN as i32 || total as usize > buf.len() {
        return Err(ProtocolError::corrupt(
            "commitlog record",
            format!("total size {total} outside {FIXED_LEN}..={}", buf.len()),
        ));
    }
    let mut r = Reader {
        buf: &buf[..total as usize],
        pos: 8,
    };
    let body_crc_field = r.i32()?;
    let queue_id = r.i32()?;
    let flag = r.i32()?;
    let queue_offset = r.i64()?;
    let physical_offset = r.i64()?;
    let sys_flag = r.i32()?;
    let born_timestamp = r.i64()?;
    let born_host = r.host(sys_flag & sys_flag::BORNHOST_V6 != 0)?;
    let store_timestamp = r.i64()?;
    let store_host = r.host(sys_flag & sys_flag::STOREHOST_V6 != 0)?;
    let reconsume_times = r.i32()?;
    let prepared_transaction_offset = r.i64()?;
    let body_len = r.i32()?;
    let body = r.len_prefixed(body_len as i64, "body")?;
    let topic_len = r.i8()?;
    let topic = r.len_prefixed(topic_len as i64, "topic")?;
    let prop_len = r.i16()?;
    let properties = r.len_prefixed(prop_len as i64, "properties")?;
    if r.pos != total as usize {
        return Err(ProtocolError::corrupt(
            "commitlog record",
            format!("fields end at {} but total size is {total}", r.pos),
        ));
    }
    if check_crc && body_crc(body) != body_crc_field {
        return Err(ProtocolError::corrupt(
            "commitlog record",
            format!("body CRC mismatch at physical offset {physical_offset}"),
        ));
    }
    let topic = std::str::from_utf8(topic)
        .map_err(|_| ProtocolError::corrupt("commitlog record", "topic is not UTF-8"))?;
    let properties = std::str::from_utf8(properties)
        .map_err(|_| ProtocolError::corrupt("commitlog record", "properties are not UTF-8"))?;
    Ok(Decoded::Message(RecordView {
        total_size: total,
        body_crc: body_crc_field,
        queue_id,
        flag,
        queue_offset,
        physical_offset,
        sys_flag,
        born_timestamp,
        born_host,
        store_timestamp,
        store_host,
        reconsume_times,
        prepared_transaction_offset,
        body,
        topic,
        properties,
    }))
}

/// Decodes every record of a buffer of concatenated records (a PULL_MESSAGE body).
pub fn decode_all(buf: &[u8]) -> Result<Vec<RecordView<'_>>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        match decode(&buf[pos..], false)? {
            Decoded::Message(view) => {
                pos += view.total_size as usize;
                out.push(view);
            }
            Decoded::EndOfFile | Decoded::Empty => {
                return Err(ProtocolError::corrupt(
                    "message batch",
                    "filler inside a message batch",
                ))
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> MessageToStore {
        MessageToStore {
            topic: "TopicTest".into(),
            queue_id: 3,
            flag: 7,
            body: Bytes::from_static(b"Hello RocketMQ"),
            properties: crate::message::properties::encode([("TAGS", "TagA"), ("KEYS", "k1")]),
            tags_code: crate::message::java_hash::tags_code(Some("TagA")),
            sys_flag: 0,
            born_timestamp: 1_700_000_000_123,
            born_host: "10.0.0.1:54321".parse().unwrap(),
            store_host: "10.0.0.2:10911".parse().unwrap(),
            reconsume_times: 2,
            prepared_transaction_offset: 0,
        }
    }

    #[test]
    fn layout_is_rocketmq() {
        let msg = sample();
        let at = Placement {
            queue_offset: 5,
            physical_offset: 1024,
            store_timestamp: 1_700_000_000_456,
        };
        let rec = encode(&msg, at).unwrap();
        assert_eq!(rec.len(), 91 + 14 + 9 + msg.properties.len());
        assert_eq!(&rec[0..4], &(rec.len() as i32).to_be_bytes());
        assert_eq!(&rec[4..8], &[0xDA, 0xA3, 0x20, 0xA7]);
        assert_eq!(&rec[12..16], &3i32.to_be_bytes());
        assert_eq!(&rec[20..28], &5i64.to_be_bytes());
        assert_eq!(&rec[28..36], &1024i64.to_be_bytes());
        assert_eq!(&rec[48..52], &[10, 0, 0, 1]);
        assert_eq!(&rec[52..56], &54321i32.to_be_bytes());
        assert_eq!(&rec[56..64], &1_700_000_000_456i64.to_be_bytes());
        assert_eq!(&rec[64..68], &[10, 0, 0, 2]);
        assert_eq!(&rec[84..88], &14i32.to_be_bytes());
        assert_eq!(&rec[88..102], b"Hello RocketMQ");
        assert_eq!(rec[102], 9);
    }

    #[test]
    fn round_trip_v4_and_v6() {
        for v6 in [false, true] {
            let mut msg = sample();
            if v6 {
                msg.born_host = "[::1]:4000".parse().unwrap();
            }
            let at = Placement {
                queue_offset: 9,
                physical_offset: 77,
                store_timestamp: 5,
            };
            let rec = encode(&msg, at).unwrap();
            let Decoded::Message(view) = decode(&rec, true).unwrap() else {
                panic!()
            };
            assert_eq!(view.body, &b"Hello RocketMQ"[..]);
            assert_eq!(view.topic, "TopicTest");
            assert_eq!(view.born_host, msg.born_host);
            assert_eq!(view.store_host, msg.store_host);
            assert_eq!(view.queue_offset, 9);
            assert_eq!(view.reconsume_times, 2);
            assert_eq!(view.sys_flag & sys_flag::BORNHOST_V6 != 0, v6);
            assert_eq!(
                crate::message::properties::find(view.properties, "TAGS"),
                Some("TagA")
            );
        }
    }

    #[test]
    fn corruption_is_detected() {
        let at = Placement {
            queue_offset: 0,
            physical_offset: 0,
            store_timestamp: 0,
        };
        let mut rec = encode(&sample(), at).unwrap();
        rec[90] ^= 0xFF; // inside the body
        assert!(decode(&rec, true).is_err());
        assert!(decode(&rec, false).is_ok());
        rec[0] = 0x7F; // size overruns
        assert!(decode(&rec, false).is_err());
        assert!(matches!(decode(&[0u8; 64], true), Ok(Decoded::Empty)));
        let mut blank = [0u8; 16];
        encode_blank(&mut blank);
        assert!(matches!(decode(&blank, true), Ok(Decoded::EndOfFile)));
    }
}
