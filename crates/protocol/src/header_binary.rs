//! The ROCKETMQ binary header serialisation (`serializeType` 1). All integers big-endian:
//!
//! ```text
//! code i16 | language u8 | version i16 | opaque i32 | flag i32 |
//! remarkLen i32 + remark (UTF-8) | extLen i32 + { keyLen i16 + key, valLen i32 + val }*
//! ```
//! `extLen` counts the bytes of the whole ext-fields block.

use bytes::BufMut;

use crate::code::LanguageCode;
use crate::command::{ExtFields, RemotingCommand, SerializeType};
use crate::error::{ProtocolError, Result};
use crate::limits::MAX_EXT_FIELDS;

/// Appends the binary header of `cmd` to `out`.
pub fn encode(cmd: &RemotingCommand, out: &mut Vec<u8>) -> Result<()> {
    let code = i16::try_from(cmd.code)
        .map_err(|_| ProtocolError::Malformed(format!("code {} does not fit i16", cmd.code)))?;
    let version = i16::try_from(cmd.version).unwrap_or(i16::MAX);
    out.put_i16(code);
    out.put_u8(cmd.language.code());
    out.put_i16(version);
    out.put_i32(cmd.opaque);
    out.put_i32(cmd.flag);
    match &cmd.remark {
        Some(remark) => {
            out.put_i32(remark.len() as i32);
            out.put_slice(remark.as_bytes());
        }
        None => out.put_i32(0),
    }
    let ext_len: usize = cmd
        .ext_fields
        .iter()
        .map(|(k, v)| 2 + k.len() + 4 + v.len())
        .sum();
    out.put_i32(ext_len as i32);
    for (key, value) in &cmd.ext_fields {
        let key_len = i16::try_from(key.len())
            .map_err(|_| ProtocolError::Malformed(format!("header key too long: {key:.40}")))?;
        out.put_i16(key_len);
        out.put_slice(key.as_bytes());
        out.put_i32(value.len() as i32);
        out.put_slice(value.as_bytes());
    }
    Ok(())
}

/// A bounds-checked big-endian reader over a header.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if self.buf.len() < n {
            return Err(ProtocolError::Malformed(format!(
                "binary header truncated reading {what}"
            )));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    fn i16(&mut self, what: &str) -> Result<i16> {
        let b = self.take(2, what)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self, what: &str) -> Result<i32> {
        let b = self.take(4, what)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn len(&mut self, len: i64, what: &str) -> Result<usize> {
        usize::try_from(len)
            .ok()
            .filter(|n| *n <= self.buf.len())
            .ok_or_else(|| ProtocolError::Malformed(format!("bad {what} length {len}")))
    }

    fn string(&mut self, len: usize, what: &str) -> Result<String> {
        let raw = self.take(len, what)?;
        String::from_utf8(raw.to_vec())
            .map_err(|_| ProtocolError::Malformed(format!("{what} is not UTF-8")))
    }
}

/// Parses a binary header.
pub fn decode(bytes: &[u8]) -> Result<RemotingCommand> {
    let mut r = Reader { buf: bytes };
    let code = r.i16("code")? as i32;
    let language = LanguageCode::from_code(r.take(1, "language")?[0]);
    let version = r.i16("version")? as i32;
    let opaque = r.i32("opaque")?;
    let flag = r.i32("flag")?;
    let remark_len = r.i32("remark length")?;
    let remark_len = r.len(remark_len as i64, "remark")?;
    let remark = if remark_len > 0 {
        Some(r.string(remark_len, "remark")?)
    } else {
        None
    };
    let ext_len = r.i32("ext length")?;
    let ext_len = r.len(ext_len as i64, "extFields")?;
    let mut ext = Reader {
        buf: r.take(ext_len, "extFields")?,
    };
    let mut ext_fields = ExtFields::new();
    while !ext.buf.is_empty() {
        if ext_fields.len() >= MAX_EXT_FIELDS {
            return Err(ProtocolError::Malformed(format!(
                "header has more than {MAX_EXT_FIELDS} extFields"
            )));
        }
        let key_len = ext.i16("key length")?;
        let key_len = ext.len(key_len as i64, "key")?;
        let key = ext.string(key_len, "key")?;
        let val_len = ext.i32("value length")?;
        let val_len = ext.len(val_len as i64, "value")?;
        let value = ext.string(val_len, "value")?;
        ext_fields.insert(key, value);
    }
    Ok(RemotingCommand {
        code,
        language,
        version,
        opaque,
        flag,
        remark,
        ext_fields,
        body: bytes::Bytes::new(),
        serialize_type: SerializeType::RocketMq,
        received_at: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ext_fields_are_bounded() {
        let mut cmd = RemotingCommand::request(11);
        cmd.serialize_type = SerializeType::RocketMq;
        for i in 0..=MAX_EXT_FIELDS {
            cmd.set_field(&i.to_string(), "");
        }
        let mut out = Vec::new();
        encode(&cmd, &mut out).unwrap();
        assert!(decode(&out)
            .unwrap_err()
            .to_string()
            .contains("more than 1024 extFields"));
        cmd.ext_fields.remove("0");
        out.clear();
        encode(&cmd, &mut out).unwrap();
        assert_eq!(decode(&out).unwrap().ext_fields.len(), MAX_EXT_FIELDS);
    }

    #[test]
    fn round_trip() {
        let mut cmd = RemotingCommand::request(11)
            .with_field("topic", "T")
            .with_field("queueId", "3")
            .with_remark("héllo");
        cmd.serialize_type = SerializeType::RocketMq;
        let mut out = Vec::new();
        encode(&cmd, &mut out).unwrap();
        let back = decode(&out).unwrap();
        assert_eq!(back.code, 11);
        assert_eq!(back.opaque, cmd.opaque);
        assert_eq!(back.ext_fields, cmd.ext_fields);
        assert_eq!(back.remark, cmd.remark);
    }

    #[test]
    fn known_bytes() {
        // code 105, JAVA, version 1, opaque 2, flag 0, no remark, one field a=b.
        let bytes = [
            0, 105, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0, 1, b'a', 0, 0, 0,
            1, b'b',
        ];
        let cmd = decode(&bytes).unwrap();
        assert_eq!(cmd.code, 105);
        assert_eq!(cmd.language, LanguageCode::Java);
        assert_eq!(cmd.field("a").unwrap(), "b");
        let mut out = Vec::new();
        encode(&cmd, &mut out).unwrap();
        assert_eq!(out, bytes);
    }

    #[test]
    fn truncated_and_lying_lengths_are_errors() {
        assert!(decode(&[0, 1]).is_err());
        let lying_remark = [0, 1, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0x7f, 0, 0, 0];
        assert!(decode(&lying_remark).is_err());
        let negative_ext = [
            0, 1, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
        ];
        assert!(decode(&negative_ext).is_err());
    }
}
