//! BATCH_ACK_MESSAGE's body (RocketMQ 5.x `BatchAckMessageRequestBody`): many popped messages
//! acked in one request, grouped by the pop that took them. Java writes the short field names
//! of `BatchAck` (`@JSONField(name = "c", alternateNames = {"consumerGroup"})`) and reads both;
//! the acked offsets are a `java.util.BitSet` over `offset - startOffset`, written as the
//! base64 of `BitSet.toByteArray()` (little-endian: bit i is bit i % 8 of byte i / 8).

use base64::Engine;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// `BatchAckMessageRequestBody`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchAckMessageRequestBody {
    /// The broker the acks are for.
    #[serde(default)]
    pub broker_name: String,
    /// One entry per pop (checkpoint) acked.
    #[serde(default)]
    pub acks: Vec<BatchAck>,
}

/// `BatchAck`: offsets of one checkpoint, acked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchAck {
    /// Consumer group.
    #[serde(rename = "c", alias = "consumerGroup", default)]
    pub consumer_group: String,
    /// The topic the client knows (the normal topic, also for retried messages).
    #[serde(rename = "t", alias = "topic", default)]
    pub topic: String,
    /// POP_CK's retry flag: "0" the topic, "1"/"2" the group's pop retry topic (v1/v2 name).
    #[serde(rename = "r", alias = "retry", default)]
    pub retry: String,
    /// The checkpoint's first offset.
    #[serde(rename = "so", alias = "startOffset", default)]
    pub start_offset: i64,
    /// Queue.
    #[serde(rename = "q", alias = "queueId", default)]
    pub queue_id: i32,
    /// The checkpoint's revive queue (999: a FIFO pop).
    #[serde(rename = "rq", alias = "reviveQueueId", default)]
    pub revive_queue_id: i32,
    /// The checkpoint's pop time (ms).
    #[serde(rename = "pt", alias = "popTime", default)]
    pub pop_time: i64,
    /// The checkpoint's invisible time (ms).
    #[serde(rename = "it", alias = "invisibleTime", default)]
    pub invisible_time: i64,
    /// Acked offsets, as bits over `offset - start_offset`.
    #[serde(rename = "b", alias = "bitSet", default)]
    pub bit_set: AckBits,
}

/// A `java.util.BitSet` as RocketMQ serializes it: base64 of its little-endian bytes (a JSON
/// array of byte values is read too, as fastjson's `byte[]` reader accepts one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AckBits(pub Vec<u8>);

impl AckBits {
    /// The bits at `indexes`.
    pub fn from_indexes(indexes: impl IntoIterator<Item = usize>) -> AckBits {
        let mut bytes = Vec::new();
        for i in indexes {
            if bytes.len() <= i / 8 {
                bytes.resize(i / 8 + 1, 0);
            }
            bytes[i / 8] |= 1 << (i % 8);
        }
        AckBits(bytes)
    }

    /// The set bits' indexes, ascending.
    pub fn indexes(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(at, byte)| {
            (0..8)
                .filter(move |bit| byte & (1 << bit) != 0)
                .map(move |bit| at * 8 + bit)
        })
    }
}

impl Serialize for AckBits {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for AckBits {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AckBits;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a base64 string or an array of bytes")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<AckBits, E> {
                base64::engine::general_purpose::STANDARD
                    .decode(v.trim())
                    .map(AckBits)
                    .map_err(|e| E::custom(format!("bitSet is not base64: {e}")))
            }
            fn visit_unit<E: de::Error>(self) -> Result<AckBits, E> {
                Ok(AckBits::default())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<AckBits, A::Error> {
                let mut bytes = Vec::new();
                while let Some(b) = seq.next_element::<i64>()? {
                    bytes.push(b as u8); // Java bytes are signed
                }
                Ok(AckBits(bytes))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::fastjson;

    #[test]
    fn bits_are_java_bitset_bytes() {
        // new BitSet(); set(0); set(3); set(9) -> toByteArray() = [0x09, 0x02]
        let bits = AckBits::from_indexes([0, 3, 9]);
        assert_eq!(bits.0, vec![0x09, 0x02]);
        assert_eq!(bits.indexes().collect::<Vec<_>>(), vec![0, 3, 9]);
        assert_eq!(serde_json::to_string(&bits).unwrap(), "\"CQI=\"");
    }

    #[test]
    fn body_reads_short_and_long_names() {
        let short = br#"{"acks":[{"b":"CQI=","c":"g","it":60000,"pt":1000,"q":1,"r":"0","rq":3,"so":5,"t":"T"}],"brokerName":"broker-a"}"#;
        let long = br#"{"brokerName":"broker-a","acks":[{"consumerGroup":"g","topic":"T","retry":"0","startOffset":"5","queueId":1,"reviveQueueId":3,"popTime":1000,"invisibleTime":60000,"bitSet":[9,2]}],"unknown":1}"#;
        let a: BatchAckMessageRequestBody = fastjson::from_slice(short).unwrap();
        let b: BatchAckMessageRequestBody = fastjson::from_slice(long).unwrap();
        assert_eq!(a, b);
        assert_eq!(
            a.acks[0].bit_set.indexes().collect::<Vec<_>>(),
            vec![0, 3, 9]
        );
        let written = serde_json::to_value(&a).unwrap();
        assert_eq!(written["acks"][0]["so"], 5);
        assert_eq!(written["acks"][0]["b"], "CQI=");
        assert!(fastjson::from_slice::<BatchAckMessageRequestBody>(
            br#"{"acks":[{"b":"not base64!"}]}"#
        )
        .is_err());
    }
}
