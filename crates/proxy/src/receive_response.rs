//! `apache.rocketmq.v2.ReceiveMessageResponse`, written by hand rather than generated
//! (build.rs maps the protobuf type here with `extern_path`): its `message` is carried as the
//! bytes of an encoded `Message`, so a received message goes from the stored record to the
//! wire without a `pb::Message` in between ([`crate::delivered::encode`]).
//!
//! On the wire it is exactly the generated type's: a oneof of `status = 1`, `message = 2`,
//! `delivery_timestamp = 3`. An embedded message and a `bytes` field have the same encoding
//! (length-delimited), so writing the message's bytes as field 2 is writing the message; a
//! decoded one keeps field 2's bytes ([`EncodedMessage::decode`] reads them).

use bytes::{Buf, BufMut, Bytes};
use prost::encoding::{self, DecodeContext, WireType};
use prost::DecodeError;

use crate::pb;

/// One item of a ReceiveMessage answer's stream.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReceiveMessageResponse {
    /// The oneof `content`.
    pub content: Option<Content>,
}

/// What an item carries.
#[derive(Clone, Debug, PartialEq)]
pub enum Content {
    /// The receive's outcome (first item).
    Status(pb::Status),
    /// A message.
    Message(EncodedMessage),
    /// When the answer was sent (last item).
    DeliveryTimestamp(prost_types::Timestamp),
}

/// The protobuf encoding of an `apache.rocketmq.v2.Message`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EncodedMessage(pub Bytes);

impl EncodedMessage {
    /// The message.
    pub fn decode(&self) -> Result<pb::Message, DecodeError> {
        prost::Message::decode(self.0.clone())
    }
}

impl prost::Message for ReceiveMessageResponse {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        match &self.content {
            Some(Content::Status(s)) => encoding::message::encode(1, s, buf),
            Some(Content::Message(m)) => encoding::bytes::encode(2, &m.0, buf),
            Some(Content::DeliveryTimestamp(t)) => encoding::message::encode(3, t, buf),
            None => {}
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        // A oneof field seen again merges into the same variant (protobuf's rule); another
        // variant replaces it.
        match tag {
            1 => {
                let mut s = match self.content.take() {
                    Some(Content::Status(s)) => s,
                    _ => pb::Status::default(),
                };
                encoding::message::merge(wire_type, &mut s, buf, ctx)?;
                self.content = Some(Content::Status(s));
            }
            2 => {
                let mut more = Bytes::new();
                encoding::bytes::merge(wire_type, &mut more, buf, ctx)?;
                let bytes = match self.content.take() {
                    // Two encodings of a message, one after the other, are their merge.
                    Some(Content::Message(m)) => [m.0, more].concat().into(),
                    _ => more,
                };
                self.content = Some(Content::Message(EncodedMessage(bytes)));
            }
            3 => {
                let mut t = match self.content.take() {
                    Some(Content::DeliveryTimestamp(t)) => t,
                    _ => prost_types::Timestamp::default(),
                };
                encoding::message::merge(wire_type, &mut t, buf, ctx)?;
                self.content = Some(Content::DeliveryTimestamp(t));
            }
            _ => encoding::skip_field(wire_type, tag, buf, ctx)?,
        }
        Ok(())
    }

    fn encoded_len(&self) -> usize {
        match &self.content {
            Some(Content::Status(s)) => encoding::message::encoded_len(1, s),
            Some(Content::Message(m)) => encoding::bytes::encoded_len(2, &m.0),
            Some(Content::DeliveryTimestamp(t)) => encoding::message::encoded_len(3, t),
            None => 0,
        }
    }

    fn clear(&mut self) {
        self.content = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message as _;

    /// The generated form of the same protobuf message, for comparison.
    #[derive(Clone, PartialEq, prost::Message)]
    struct Generated {
        #[prost(oneof = "generated::Content", tags = "1, 2, 3")]
        content: Option<generated::Content>,
    }

    mod generated {
        #[allow(clippy::large_enum_variant)] // as prost generates it
        #[derive(Clone, PartialEq, prost::Oneof)]
        pub enum Content {
            #[prost(message, tag = "1")]
            Status(crate::pb::Status),
            #[prost(message, tag = "2")]
            Message(crate::pb::Message),
            #[prost(message, tag = "3")]
            DeliveryTimestamp(prost_types::Timestamp),
        }
    }

    fn message() -> pb::Message {
        pb::Message {
            topic: Some(pb::Resource {
                resource_namespace: String::new(),
                name: "T".into(),
            }),
            user_properties: [("a".to_owned(), "b".to_owned())].into(),
            system_properties: Some(pb::SystemProperties {
                message_id: "01".into(),
                queue_offset: Some(0),
                ..Default::default()
            }),
            body: b"hello".to_vec(),
        }
    }

    #[test]
    fn each_variant_has_the_generated_types_bytes() {
        let status = pb::Status {
            code: pb::Code::Ok as i32,
            message: "OK".into(),
        };
        let at = prost_types::Timestamp {
            seconds: 5,
            nanos: 6,
        };
        let pairs = [
            (
                Content::Status(status.clone()),
                generated::Content::Status(status),
            ),
            (
                Content::Message(EncodedMessage(message().encode_to_vec().into())),
                generated::Content::Message(message()),
            ),
            (
                Content::DeliveryTimestamp(at),
                generated::Content::DeliveryTimestamp(at),
            ),
        ];
        for (ours, theirs) in pairs {
            let ours = ReceiveMessageResponse {
                content: Some(ours),
            };
            let theirs = Generated {
                content: Some(theirs),
            };
            assert_eq!(ours.encode_to_vec(), theirs.encode_to_vec());
            assert_eq!(ours.encoded_len(), theirs.encoded_len());
            let back = ReceiveMessageResponse::decode(theirs.encode_to_vec().as_slice()).unwrap();
            assert_eq!(back, ours);
        }
    }

    #[test]
    fn a_decoded_message_reads_back_and_unknown_fields_are_skipped() {
        let mut wire = Generated {
            content: Some(generated::Content::Message(message())),
        }
        .encode_to_vec();
        // Field 9, a varint: not ours, skipped.
        wire.extend_from_slice(&[9 << 3, 1]);
        let back = ReceiveMessageResponse::decode(wire.as_slice()).unwrap();
        match back.content {
            Some(Content::Message(m)) => assert_eq!(m.decode().unwrap(), message()),
            other => panic!("not a message: {other:?}"),
        }
    }
}
