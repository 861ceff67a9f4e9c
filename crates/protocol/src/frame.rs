//! The frame: pure functions from commands to bytes and back, with no I/O.
//!
//! ```text
//! [length i32][(serializeType << 24) | headerLen i32][header][body]      big-endian
//! length = 4 + headerLen + bodyLen  (does not count itself)
//! ```
//! A peer that announces a length outside `4..=MAX_FRAME_LEN`, or a header longer than the
//! frame, is broken or hostile: decoding fails and the transport closes the connection.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::command::{RemotingCommand, SerializeType};
use crate::error::{ProtocolError, Result};
use crate::{header_binary, header_json};

pub use crate::limits::MAX_FRAME_LEN;

/// Appends the whole frame of `cmd` (prefix, header, body) to `dst`.
pub fn encode(cmd: &RemotingCommand, dst: &mut BytesMut) -> Result<()> {
    let mut header = Vec::with_capacity(128 + cmd.ext_fields.len() * 32);
    match cmd.serialize_type {
        SerializeType::Json => header_json::encode(cmd, &mut header)?,
        SerializeType::RocketMq => header_binary::encode(cmd, &mut header)?,
    }
    let length = 4 + header.len() + cmd.body.len();
    if length > MAX_FRAME_LEN || header.len() > 0x00FF_FFFF {
        return Err(ProtocolError::FrameTooLarge(length as i64));
    }
    dst.reserve(4 + length);
    dst.put_i32(length as i32);
    dst.put_i32(((cmd.serialize_type.code() as i32) << 24) | header.len() as i32);
    dst.put_slice(&header);
    dst.put_slice(&cmd.body);
    Ok(())
}

/// Encodes `cmd` into a fresh buffer.
pub fn encode_to_bytes(cmd: &RemotingCommand) -> Result<Bytes> {
    let mut dst = BytesMut::with_capacity(256 + cmd.body.len());
    encode(cmd, &mut dst)?;
    Ok(dst.freeze())
}

/// Takes one complete frame off the front of `src`, if one is there.
///
/// Returns `Ok(None)` when more bytes are needed (nothing is consumed), and an error when the
/// bytes cannot be a valid frame (the stream is then unusable: framing is lost).
pub fn decode(src: &mut BytesMut) -> Result<Option<RemotingCommand>> {
    if src.len() < 4 {
        return Ok(None);
    }
    let length = i32::from_be_bytes([src[0], src[1], src[2], src[3]]) as i64;
    if !(4..=MAX_FRAME_LEN as i64).contains(&length) {
        return Err(ProtocolError::FrameTooLarge(length));
    }
    let length = length as usize;
    if src.len() < 4 + length {
        src.reserve(4 + length - src.len());
        return Ok(None);
    }
    src.advance(4);
    let mut frame = src.split_to(length).freeze();
    let mark = frame.get_u32();
    let serialize_type = SerializeType::from_code((mark >> 24) as u8)?;
    let header_len = (mark & 0x00FF_FFFF) as usize;
    if header_len > frame.len() {
        return Err(ProtocolError::Malformed(format!(
            "header length {header_len} exceeds frame length {length}"
        )));
    }
    let header = frame.split_to(header_len);
    let mut cmd = match serialize_type {
        SerializeType::Json => header_json::decode(&header)?,
        SerializeType::RocketMq => header_binary::decode(&header)?,
    };
    cmd.body = frame;
    Ok(Some(cmd))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(serialize_type: SerializeType) -> RemotingCommand {
        let mut cmd = RemotingCommand::request(310)
            .with_field("b", "TopicTest")
            .with_field("e", "2")
            .with_body(Bytes::from_static(b"hello body"));
        cmd.serialize_type = serialize_type;
        cmd
    }

    #[test]
    fn round_trip_both_serialisations() {
        for st in [SerializeType::Json, SerializeType::RocketMq] {
            let cmd = sample(st);
            let mut buf = BytesMut::new();
            encode(&cmd, &mut buf).unwrap();
            let back = decode(&mut buf).unwrap().unwrap();
            assert_eq!(
                back,
                RemotingCommand {
                    language: back.language,
                    ..cmd
                }
            );
            assert!(buf.is_empty());
        }
    }

    #[test]
    fn frame_split_across_reads() {
        let bytes = encode_to_bytes(&sample(SerializeType::Json)).unwrap();
        let mut buf = BytesMut::new();
        for (i, chunk) in bytes.chunks(3).enumerate() {
            buf.extend_from_slice(chunk);
            let got = decode(&mut buf).unwrap();
            if (i + 1) * 3 < bytes.len() {
                assert!(got.is_none(), "decoded early at chunk {i}");
            } else {
                assert_eq!(got.unwrap().body, Bytes::from_static(b"hello body"));
            }
        }
    }

    #[test]
    fn two_frames_in_one_read() {
        let mut buf = BytesMut::new();
        let a = sample(SerializeType::Json);
        let b = sample(SerializeType::RocketMq);
        encode(&a, &mut buf).unwrap();
        encode(&b, &mut buf).unwrap();
        assert_eq!(decode(&mut buf).unwrap().unwrap().opaque, a.opaque);
        assert_eq!(decode(&mut buf).unwrap().unwrap().opaque, b.opaque);
        assert!(decode(&mut buf).unwrap().is_none());
    }

    #[test]
    fn java_bytes_decode() {
        let header = br#"{"code":0,"flag":1,"language":"JAVA","opaque":9,"serializeTypeCurrentRPC":"JSON","version":395}"#;
        let mut buf = BytesMut::new();
        buf.put_i32(4 + header.len() as i32 + 2);
        buf.put_i32(header.len() as i32);
        buf.put_slice(header);
        buf.put_slice(b"ok");
        let cmd = decode(&mut buf).unwrap().unwrap();
        assert!(cmd.is_response());
        assert_eq!(cmd.opaque, 9);
        assert_eq!(&cmd.body[..], b"ok");
    }

    #[test]
    fn bad_lengths_are_errors() {
        let mut huge = BytesMut::from(&[0x7f, 0xff, 0xff, 0xff][..]);
        assert!(matches!(
            decode(&mut huge),
            Err(ProtocolError::FrameTooLarge(_))
        ));
        let mut negative = BytesMut::from(&[0xff, 0xff, 0xff, 0xfe][..]);
        assert!(decode(&mut negative).is_err());
        let mut lying_header = BytesMut::new();
        lying_header.put_i32(8);
        lying_header.put_i32(100);
        lying_header.put_i32(0);
        assert!(decode(&mut lying_header).is_err());
        let mut bad_type = BytesMut::new();
        bad_type.put_i32(4);
        bad_type.put_i32(7 << 24);
        assert!(decode(&mut bad_type).is_err());
    }
}

#[cfg(test)]
mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Arbitrary bytes never panic the decoder; they give frames, "need more", or an error.
        #[test]
        fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut buf = BytesMut::from(&data[..]);
            while let Ok(Some(_)) = decode(&mut buf) {}
        }

        /// A valid prefix with an arbitrary header and body never panics either.
        #[test]
        fn arbitrary_headers_never_panic(
            st in 0u8..2,
            header in proptest::collection::vec(any::<u8>(), 0..256),
            body in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let mut buf = BytesMut::new();
            buf.put_i32((4 + header.len() + body.len()) as i32);
            buf.put_i32(((st as i32) << 24) | header.len() as i32);
            buf.put_slice(&header);
            buf.put_slice(&body);
            let _ = decode(&mut buf);
        }

        /// Every command with arbitrary fields survives a round trip in both serialisations.
        #[test]
        fn round_trip_arbitrary(
            code in -1000i32..1000,
            fields in proptest::collection::hash_map("[a-zA-Z]{1,8}", ".{0,20}", 0..6),
            remark in proptest::option::of(".{0,30}"),
            body in proptest::collection::vec(any::<u8>(), 0..64),
            binary in any::<bool>(),
        ) {
            let mut cmd = RemotingCommand::request(code);
            cmd.ext_fields = fields;
            cmd.remark = remark.filter(|r| !r.is_empty());
            cmd.body = Bytes::from(body);
            if binary { cmd.serialize_type = SerializeType::RocketMq; }
            let mut buf = BytesMut::new();
            encode(&cmd, &mut buf).unwrap();
            let back = decode(&mut buf).unwrap().unwrap();
            prop_assert_eq!(back, cmd);
        }
    }
}
