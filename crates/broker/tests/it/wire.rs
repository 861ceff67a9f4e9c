//! A raw-frame client written for these tests from the public RocketMQ 4.x frame layout, with
//! its own encoding and decoding (none of `rocketpy_protocol`'s): what it sends is what a Java
//! or C++ client puts on the socket, byte for byte, so the servers are checked against the
//! format rather than against their own codec.
//!
//! ```text
//! [length i32][(serializeType << 24) | headerLen i32][header][body]      big-endian
//! JSON header: {"code":..,"extFields":{..},"flag":..,"language":"JAVA","opaque":..,...}
//! ROCKETMQ header: code i16 | language u8 | version i16 | opaque i32 | flag i32 |
//!                  remarkLen i32 + remark | extLen i32 + {keyLen i16 + key, valLen i32 + val}*
//! ```

use std::collections::BTreeMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

pub const JSON: u8 = 0;
pub const ROCKETMQ: u8 = 1;

static OPAQUE: AtomicI32 = AtomicI32::new(7000);

/// A received frame.
#[derive(Debug)]
pub struct Frame {
    pub code: i32,
    pub opaque: i32,
    pub flag: i32,
    pub remark: Option<String>,
    pub fields: BTreeMap<String, String>,
    pub body: Vec<u8>,
    pub serialize_type: u8,
}

impl Frame {
    pub fn field(&self, name: &str) -> &str {
        self.fields
            .get(name)
            .unwrap_or_else(|| panic!("no field {name} in {:?}", self.fields))
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }
}

fn json_header(code: i32, opaque: i32, flag: i32, fields: &[(&str, &str)]) -> Vec<u8> {
    // As fastjson writes it: keys in alphabetical order, every ext value a string.
    let ext: serde_json::Map<String, serde_json::Value> = fields
        .iter()
        .map(|(k, v)| ((*k).to_owned(), serde_json::Value::String((*v).to_owned())))
        .collect();
    let header = serde_json::json!({
        "code": code,
        "extFields": ext,
        "flag": flag,
        "language": "JAVA",
        "opaque": opaque,
        "serializeTypeCurrentRPC": "JSON",
        "version": 395,
    });
    serde_json::to_vec(&header).unwrap()
}

fn binary_header(code: i32, opaque: i32, flag: i32, fields: &[(&str, &str)]) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&(code as i16).to_be_bytes());
    h.push(1); // CPP
    h.extend_from_slice(&395i16.to_be_bytes());
    h.extend_from_slice(&opaque.to_be_bytes());
    h.extend_from_slice(&flag.to_be_bytes());
    h.extend_from_slice(&0i32.to_be_bytes()); // no remark
    let mut ext = Vec::new();
    for (k, v) in fields {
        ext.extend_from_slice(&(k.len() as i16).to_be_bytes());
        ext.extend_from_slice(k.as_bytes());
        ext.extend_from_slice(&(v.len() as i32).to_be_bytes());
        ext.extend_from_slice(v.as_bytes());
    }
    h.extend_from_slice(&(ext.len() as i32).to_be_bytes());
    h.extend_from_slice(&ext);
    h
}

/// The bytes of a request frame.
pub fn frame(
    serialize_type: u8,
    code: i32,
    opaque: i32,
    flag: i32,
    fields: &[(&str, &str)],
    body: &[u8],
) -> Vec<u8> {
    let header = match serialize_type {
        JSON => json_header(code, opaque, flag, fields),
        _ => binary_header(code, opaque, flag, fields),
    };
    let mut out = Vec::new();
    out.extend_from_slice(&((4 + header.len() + body.len()) as i32).to_be_bytes());
    out.extend_from_slice(&(((serialize_type as i32) << 24) | header.len() as i32).to_be_bytes());
    out.extend_from_slice(&header);
    out.extend_from_slice(body);
    out
}

fn be_i32(b: &[u8]) -> i32 {
    i32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn parse_binary(h: &[u8]) -> (i32, i32, i32, Option<String>, BTreeMap<String, String>) {
    let code = i16::from_be_bytes([h[0], h[1]]) as i32;
    let opaque = be_i32(&h[5..9]);
    let flag = be_i32(&h[9..13]);
    let remark_len = be_i32(&h[13..17]) as usize;
    let remark = (remark_len > 0).then(|| String::from_utf8_lossy(&h[17..17 + remark_len]).into());
    let mut pos = 17 + remark_len;
    let ext_len = be_i32(&h[pos..pos + 4]) as usize;
    pos += 4;
    let end = pos + ext_len;
    let mut fields = BTreeMap::new();
    while pos < end {
        let kl = i16::from_be_bytes([h[pos], h[pos + 1]]) as usize;
        let k = String::from_utf8_lossy(&h[pos + 2..pos + 2 + kl]).into_owned();
        pos += 2 + kl;
        let vl = be_i32(&h[pos..pos + 4]) as usize;
        let v = String::from_utf8_lossy(&h[pos + 4..pos + 4 + vl]).into_owned();
        pos += 4 + vl;
        fields.insert(k, v);
    }
    (code, opaque, flag, remark, fields)
}

fn parse_json(h: &[u8]) -> (i32, i32, i32, Option<String>, BTreeMap<String, String>) {
    let v: serde_json::Value = serde_json::from_slice(h).expect("JSON header");
    let int = |k: &str| v.get(k).and_then(|x| x.as_i64()).unwrap_or(0) as i32;
    let fields = v
        .get("extFields")
        .and_then(|e| e.as_object())
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default();
    let remark = v.get("remark").and_then(|r| r.as_str()).map(str::to_owned);
    (int("code"), int("opaque"), int("flag"), remark, fields)
}

/// One connection.
pub struct Wire {
    sock: TcpStream,
    pub serialize_type: u8,
}

impl Wire {
    pub fn connect(addr: SocketAddr) -> Wire {
        Wire::over(TcpStream::connect(addr).expect("connect"))
    }

    /// Frames over an open socket (e.g. one a test accepted).
    pub fn over(sock: TcpStream) -> Wire {
        sock.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Wire {
            sock,
            serialize_type: JSON,
        }
    }

    pub fn binary(mut self) -> Wire {
        self.serialize_type = ROCKETMQ;
        self
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.sock.write_all(bytes).expect("write");
    }

    pub fn read_frame(&mut self) -> Frame {
        self.read_raw_frame().expect("frame").1
    }

    /// The next frame's bytes as they came and decoded; `None` when the peer closed.
    pub fn read_raw_frame(&mut self) -> Option<(Vec<u8>, Frame)> {
        let mut prefix = [0u8; 8];
        self.sock.read_exact(&mut prefix).ok()?;
        let length = be_i32(&prefix[..4]) as usize;
        let mark = be_i32(&prefix[4..]) as u32;
        let serialize_type = (mark >> 24) as u8;
        let header_len = (mark & 0x00FF_FFFF) as usize;
        let mut rest = vec![0u8; length - 4];
        self.sock.read_exact(&mut rest).ok()?;
        let (code, opaque, flag, remark, fields) = match serialize_type {
            JSON => parse_json(&rest[..header_len]),
            _ => parse_binary(&rest[..header_len]),
        };
        let frame = Frame {
            code,
            opaque,
            flag,
            remark,
            fields,
            body: rest[header_len..].to_vec(),
            serialize_type,
        };
        let mut raw = prefix.to_vec();
        raw.extend_from_slice(&rest);
        Some((raw, frame))
    }

    /// Sends a request and returns its response (frames for other opaques are skipped).
    pub fn call(&mut self, code: i32, fields: &[(&str, &str)], body: &[u8]) -> Frame {
        let opaque = OPAQUE.fetch_add(1, Ordering::Relaxed);
        let bytes = frame(self.serialize_type, code, opaque, 0, fields, body);
        self.send_raw(&bytes);
        loop {
            let f = self.read_frame();
            if f.opaque == opaque && f.flag & 1 == 1 {
                assert_eq!(f.serialize_type, self.serialize_type, "answered in kind");
                return f;
            }
        }
    }

    /// Whether the peer closes the connection within a few seconds.
    pub fn closed_by_peer(&mut self) -> bool {
        self.sock
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut buf = [0u8; 256];
        loop {
            match self.sock.read(&mut buf) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return true,
                Err(_) => return false,
            }
        }
    }
}

/// A message of a SEND_BATCH_MESSAGE body: `[total][magic 0][crc 0][flag][bodyLen][body]
/// [propLen i16][props]`.
pub fn batch_item(flag: i32, body: &[u8], props: &str) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&((22 + body.len() + props.len()) as i32).to_be_bytes());
    out.extend_from_slice(&0i32.to_be_bytes());
    out.extend_from_slice(&0i32.to_be_bytes());
    out.extend_from_slice(&flag.to_be_bytes());
    out.extend_from_slice(&(body.len() as i32).to_be_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(&(props.len() as i16).to_be_bytes());
    out.extend_from_slice(props.as_bytes());
    out
}

/// A CommitLog record (IPv4 hosts) as the tests read it.
#[derive(Debug)]
pub struct Record {
    pub queue_offset: i64,
    pub physical_offset: i64,
    pub sys_flag: i32,
    pub reconsume_times: i32,
    pub prepared_transaction_offset: i64,
    pub body: Vec<u8>,
    pub topic: String,
    pub properties: String,
}

/// Splits a PULL_MESSAGE body into records, checking sizes and the magic code.
pub fn records(mut data: &[u8]) -> Vec<Record> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let total = be_i32(&data[0..4]) as usize;
        assert_eq!(
            be_i32(&data[4..8]) as u32,
            0xDAA3_20A7,
            "message magic code"
        );
        let queue_offset = i64::from_be_bytes(data[20..28].try_into().unwrap());
        let physical_offset = i64::from_be_bytes(data[28..36].try_into().unwrap());
        let sys_flag = be_i32(&data[36..40]);
        let reconsume_times = be_i32(&data[72..76]);
        let prepared_transaction_offset = i64::from_be_bytes(data[76..84].try_into().unwrap());
        let body_len = be_i32(&data[84..88]) as usize;
        let body = data[88..88 + body_len].to_vec();
        let t = 88 + body_len;
        let topic_len = data[t] as usize;
        let topic = String::from_utf8(data[t + 1..t + 1 + topic_len].to_vec()).unwrap();
        let p = t + 1 + topic_len;
        let prop_len = i16::from_be_bytes([data[p], data[p + 1]]) as usize;
        let properties = String::from_utf8(data[p + 2..p + 2 + prop_len].to_vec()).unwrap();
        assert_eq!(p + 2 + prop_len, total, "record size adds up");
        out.push(Record {
            queue_offset,
            physical_offset,
            sys_flag,
            reconsume_times,
            prepared_transaction_offset,
            body,
            topic,
            properties,
        });
        data = &data[total..];
    }
    out
}
