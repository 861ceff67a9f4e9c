//! `apache.rocketmq.v2.AckMessageRequest` and `AckMessageResponse`, written by hand rather
//! than generated (build.rs maps them here with `extern_path`). An AckMessage carries an entry
//! per message of a received batch: decoded into generated types, each entry is two strings
//! allocated, and each answer entry a third (its status text, "OK") — a quarter of the
//! broker's allocations on the receive+ack path, measured. Here an entry's texts are slices
//! of the request's own buffer ([`ByteString`]), the answer writes the same slices back, and
//! an entry's status text is a constant when it is the usual one.
//!
//! What must stay true: the bytes are exactly the generated types' (the tests compare both
//! ways), unknown fields are skipped, and a string that is not UTF-8 is a decode error, as
//! it is for prost's own strings.

use std::borrow::Cow;

use bytes::{Buf, BufMut, Bytes};
use bytestring::ByteString;
use prost::encoding::{self, encode_key, encode_varint, encoded_len_varint, key_len};
use prost::encoding::{DecodeContext, WireType};
use prost::DecodeError;

use crate::pb;

/// AckMessage's request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AckMessageRequest {
    /// The consumer group.
    pub group: Option<pb::Resource>,
    /// The topic.
    pub topic: Option<pb::Resource>,
    /// A message each.
    pub entries: Vec<AckMessageEntry>,
}

/// One acked message.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AckMessageEntry {
    /// Its message id.
    pub message_id: ByteString,
    /// Its receipt handle.
    pub receipt_handle: ByteString,
    /// Its lite topic (lite consumers).
    pub lite_topic: Option<ByteString>,
}

/// AckMessage's answer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AckMessageResponse {
    /// The entries' status when they agree, MULTIPLE_RESULTS when not.
    pub status: Option<pb::Status>,
    /// A result per request entry.
    pub entries: Vec<AckMessageResultEntry>,
}

/// What became of one entry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AckMessageResultEntry {
    /// The entry's message id.
    pub message_id: ByteString,
    /// The entry's receipt handle.
    pub receipt_handle: ByteString,
    /// Its outcome.
    pub status: Option<EntryStatus>,
}

/// `apache.rocketmq.v2.Status` whose text is usually a constant.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EntryStatus {
    /// A `pb::Code`.
    pub code: i32,
    /// What happened.
    pub message: Cow<'static, str>,
}

impl EntryStatus {
    /// OK, as RocketMQ's proxy writes it.
    pub fn ok() -> EntryStatus {
        EntryStatus {
            code: pb::Code::Ok as i32,
            message: Cow::Borrowed("OK"),
        }
    }
}

impl From<pb::Status> for EntryStatus {
    fn from(s: pb::Status) -> Self {
        EntryStatus {
            code: s.code,
            message: Cow::Owned(s.message),
        }
    }
}

impl From<EntryStatus> for pb::Status {
    fn from(s: EntryStatus) -> Self {
        pb::Status {
            code: s.code,
            message: s.message.into_owned(),
        }
    }
}

/// Bytes of a string field written by [`put_text`].
fn text_len(tag: u32, s: &str, always: bool) -> usize {
    if always || !s.is_empty() {
        key_len(tag) + encoded_len_varint(s.len() as u64) + s.len()
    } else {
        0
    }
}

/// Writes a string field; a proto3 one (`always` false) only when not empty.
fn put_text(tag: u32, s: &str, always: bool, buf: &mut impl BufMut) {
    if always || !s.is_empty() {
        encode_key(tag, WireType::LengthDelimited, buf);
        encode_varint(s.len() as u64, buf);
        buf.put_slice(s.as_bytes());
    }
}

/// An optional message field: written when set.
fn put_message(tag: u32, m: &Option<impl prost::Message>, buf: &mut impl BufMut) {
    if let Some(m) = m {
        encoding::message::encode(tag, m, buf);
    }
}

/// Bytes of a field written by [`put_message`].
fn message_len(tag: u32, m: &Option<impl prost::Message>) -> usize {
    m.as_ref()
        .map_or(0, |m| encoding::message::encoded_len(tag, m))
}

/// Reads an optional message field (merged into what an earlier occurrence set).
fn merge_message<M: prost::Message + Default>(
    wire_type: WireType,
    m: &mut Option<M>,
    buf: &mut impl Buf,
    ctx: DecodeContext,
) -> Result<(), DecodeError> {
    encoding::message::merge(wire_type, m.get_or_insert_with(M::default), buf, ctx)
}

/// Reads a string field as a slice of the buffer being decoded (no copy when it is the
/// request's `Bytes`).
fn merge_text(
    wire_type: WireType,
    text: &mut ByteString,
    buf: &mut impl Buf,
    ctx: DecodeContext,
) -> Result<(), DecodeError> {
    let mut bytes = Bytes::new();
    encoding::bytes::merge(wire_type, &mut bytes, buf, ctx)?;
    *text = ByteString::try_from(bytes).map_err(|_| not_utf8())?;
    Ok(())
}

/// prost's own error for a string that is not UTF-8 (made by decoding one: prost has no
/// public constructor for it).
#[cold]
fn not_utf8() -> DecodeError {
    let invalid: &[u8] = &[0x0a, 0x01, 0xff]; // Resource.resource_namespace = b"\xff"
    match <pb::Resource as prost::Message>::decode(invalid) {
        Err(e) => e,
        Ok(_) => unreachable!("0xff is not UTF-8"),
    }
}

impl prost::Message for AckMessageRequest {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        put_message(1, &self.group, buf);
        put_message(2, &self.topic, buf);
        for e in &self.entries {
            encoding::message::encode(3, e, buf);
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        match tag {
            1 => merge_message(wire_type, &mut self.group, buf, ctx),
            2 => merge_message(wire_type, &mut self.topic, buf, ctx),
            3 => encoding::message::merge_repeated(wire_type, &mut self.entries, buf, ctx),
            _ => encoding::skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        message_len(1, &self.group)
            + message_len(2, &self.topic)
            + encoding::message::encoded_len_repeated(3, &self.entries)
    }

    fn clear(&mut self) {
        *self = AckMessageRequest::default();
    }
}

impl prost::Message for AckMessageEntry {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        put_text(1, &self.message_id, false, buf);
        put_text(2, &self.receipt_handle, false, buf);
        if let Some(l) = &self.lite_topic {
            put_text(3, l, true, buf);
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        match tag {
            1 => merge_text(wire_type, &mut self.message_id, buf, ctx),
            2 => merge_text(wire_type, &mut self.receipt_handle, buf, ctx),
            3 => merge_text(
                wire_type,
                self.lite_topic.get_or_insert_with(Default::default),
                buf,
                ctx,
            ),
            _ => encoding::skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        text_len(1, &self.message_id, false)
            + text_len(2, &self.receipt_handle, false)
            + self.lite_topic.as_ref().map_or(0, |l| text_len(3, l, true))
    }

    fn clear(&mut self) {
        *self = AckMessageEntry::default();
    }
}

impl prost::Message for AckMessageResponse {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        put_message(1, &self.status, buf);
        for e in &self.entries {
            encoding::message::encode(2, e, buf);
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        match tag {
            1 => merge_message(wire_type, &mut self.status, buf, ctx),
            2 => encoding::message::merge_repeated(wire_type, &mut self.entries, buf, ctx),
            _ => encoding::skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        message_len(1, &self.status) + encoding::message::encoded_len_repeated(2, &self.entries)
    }

    fn clear(&mut self) {
        *self = AckMessageResponse::default();
    }
}

impl prost::Message for AckMessageResultEntry {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        put_text(1, &self.message_id, false, buf);
        put_text(2, &self.receipt_handle, false, buf);
        put_message(3, &self.status, buf);
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        match tag {
            1 => merge_text(wire_type, &mut self.message_id, buf, ctx),
            2 => merge_text(wire_type, &mut self.receipt_handle, buf, ctx),
            3 => merge_message(wire_type, &mut self.status, buf, ctx),
            _ => encoding::skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        text_len(1, &self.message_id, false)
            + text_len(2, &self.receipt_handle, false)
            + message_len(3, &self.status)
    }

    fn clear(&mut self) {
        *self = AckMessageResultEntry::default();
    }
}

impl prost::Message for EntryStatus {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        if self.code != 0 {
            encoding::int32::encode(1, &self.code, buf);
        }
        put_text(2, &self.message, false, buf);
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        match tag {
            1 => encoding::int32::merge(wire_type, &mut self.code, buf, ctx),
            2 => {
                let mut text = ByteString::new();
                merge_text(wire_type, &mut text, buf, ctx)?;
                self.message = Cow::Owned(text.to_string());
                Ok(())
            }
            _ => encoding::skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        (if self.code != 0 {
            encoding::int32::encoded_len(1, &self.code)
        } else {
            0
        }) + text_len(2, &self.message, false)
    }

    fn clear(&mut self) {
        *self = EntryStatus::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message as _;

    /// The generated forms of the same protobuf messages, for comparison.
    mod generated {
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct Entry {
            #[prost(string, tag = "1")]
            pub message_id: String,
            #[prost(string, tag = "2")]
            pub receipt_handle: String,
            #[prost(string, optional, tag = "3")]
            pub lite_topic: Option<String>,
        }
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct Request {
            #[prost(message, optional, tag = "1")]
            pub group: Option<crate::pb::Resource>,
            #[prost(message, optional, tag = "2")]
            pub topic: Option<crate::pb::Resource>,
            #[prost(message, repeated, tag = "3")]
            pub entries: Vec<Entry>,
        }
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct ResultEntry {
            #[prost(string, tag = "1")]
            pub message_id: String,
            #[prost(string, tag = "2")]
            pub receipt_handle: String,
            #[prost(message, optional, tag = "3")]
            pub status: Option<crate::pb::Status>,
        }
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct Response {
            #[prost(message, optional, tag = "1")]
            pub status: Option<crate::pb::Status>,
            #[prost(message, repeated, tag = "2")]
            pub entries: Vec<ResultEntry>,
        }
    }

    fn resource(name: &str) -> pb::Resource {
        pb::Resource {
            resource_namespace: String::new(),
            name: name.into(),
        }
    }

    #[test]
    fn a_request_has_the_generated_types_bytes_both_ways() {
        let theirs = generated::Request {
            group: Some(resource("g")),
            topic: Some(resource("T")),
            entries: vec![
                generated::Entry {
                    message_id: "01AB".into(),
                    receipt_handle: "5 1000 60000 2 0 broker-a 0 5 4096".into(),
                    lite_topic: None,
                },
                generated::Entry {
                    message_id: String::new(),
                    receipt_handle: "h".into(),
                    lite_topic: Some(String::new()),
                },
            ],
        };
        let wire = Bytes::from(theirs.encode_to_vec());
        let ours = AckMessageRequest::decode(wire.clone()).unwrap();
        assert_eq!(ours.group, theirs.group);
        assert_eq!(
            &*ours.entries[0].receipt_handle,
            "5 1000 60000 2 0 broker-a 0 5 4096"
        );
        assert_eq!(ours.entries[1].lite_topic.as_deref(), Some(""));
        assert_eq!(ours.encode_to_vec(), wire.to_vec());
        assert_eq!(ours.encoded_len(), wire.len());
        // Unknown fields are skipped; a string that is not UTF-8 is refused.
        let mut more = wire.to_vec();
        more.extend_from_slice(&[9 << 3, 1]);
        assert_eq!(AckMessageRequest::decode(more.as_slice()).unwrap(), ours);
        let bad: &[u8] = &[3 << 3 | 2, 3, 1 << 3 | 2, 1, 0xff];
        let err = AckMessageRequest::decode(bad).unwrap_err().to_string();
        assert!(err.contains("UTF-8"), "{err}");
    }

    #[test]
    fn an_answer_has_the_generated_types_bytes_both_ways() {
        let ok = pb::Status {
            code: pb::Code::Ok as i32,
            message: "OK".into(),
        };
        let theirs = generated::Response {
            status: Some(ok.clone()),
            entries: vec![
                generated::ResultEntry {
                    message_id: "01AB".into(),
                    receipt_handle: "h1".into(),
                    status: Some(ok.clone()),
                },
                generated::ResultEntry {
                    message_id: "01AC".into(),
                    receipt_handle: String::new(),
                    status: Some(pb::Status {
                        code: pb::Code::InvalidReceiptHandle as i32,
                        message: "receipt handle is invalid".into(),
                    }),
                },
            ],
        };
        let ours = AckMessageResponse {
            status: Some(ok),
            entries: vec![
                AckMessageResultEntry {
                    message_id: "01AB".into(),
                    receipt_handle: "h1".into(),
                    status: Some(EntryStatus::ok()),
                },
                AckMessageResultEntry {
                    message_id: "01AC".into(),
                    receipt_handle: ByteString::new(),
                    status: Some(EntryStatus {
                        code: pb::Code::InvalidReceiptHandle as i32,
                        message: "receipt handle is invalid".into(),
                    }),
                },
            ],
        };
        assert_eq!(ours.encode_to_vec(), theirs.encode_to_vec());
        assert_eq!(ours.encoded_len(), theirs.encoded_len());
        let back = AckMessageResponse::decode(theirs.encode_to_vec().as_slice()).unwrap();
        assert_eq!(back, ours);
    }
}
