//! The events of the replicated log, and their bytes exactly as RocketMQ's `EventSerializer`
//! writes them: a 2-byte big-endian type id ([`EventType`]), then fastjson's JSON of the event
//! object (its getters' names, in name order, `eventType` as the enum's name, null fields
//! left out).
//!
//! What must stay true:
//! - [`Event::decode`] never panics and is bounded: input over [`MAX_EVENT_LEN`] is refused
//!   before parsing, the JSON passes `rocketpy_protocol`'s nesting and element limits, and an
//!   event that could not be applied as meant (an elected master without an id, an empty
//!   broker name, an unknown type, READ_EVENT) is an error, not a default.
//! - `decode(encode(e)) == e` for every event (tests below and in `tests/`).
//! - Type ids and JSON field names are a compatibility surface with RocketMQ's controller:
//!   never renumber or rename them.

use std::collections::BTreeSet;

use rocketpy_protocol::body::fastjson;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Largest encoded event accepted by [`Event::decode`]. Real events are under a kilobyte (a
/// SyncStateSet of a few ids); this only bounds what a corrupt log entry can cost.
pub const MAX_EVENT_LEN: usize = 1024 * 1024;

/// RocketMQ's `EventType`: the id written before the JSON, and the name fastjson writes as
/// `eventType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    AlterSyncStateSet = 1,
    ApplyBrokerId = 2,
    ElectMaster = 3,
    /// Never serialized (RocketMQ appends an empty entry for reads instead).
    Read = 4,
    CleanBrokerData = 5,
    UpdateBrokerAddress = 6,
}

impl EventType {
    /// The 2-byte id.
    pub fn id(self) -> u16 {
        self as u16
    }

    /// The Java enum constant's name, as fastjson writes it in `eventType`.
    pub fn java_name(self) -> &'static str {
        match self {
            EventType::AlterSyncStateSet => "ALTER_SYNC_STATE_SET_EVENT",
            EventType::ApplyBrokerId => "APPLY_BROKER_ID_EVENT",
            EventType::ElectMaster => "ELECT_MASTER_EVENT",
            EventType::Read => "READ_EVENT",
            EventType::CleanBrokerData => "CLEAN_BROKER_DATA_EVENT",
            EventType::UpdateBrokerAddress => "UPDATE_BROKER_ADDRESS",
        }
    }

    /// The type of an id, if RocketMQ defines it.
    pub fn from_id(id: u16) -> Option<Self> {
        Some(match id {
            1 => EventType::AlterSyncStateSet,
            2 => EventType::ApplyBrokerId,
            3 => EventType::ElectMaster,
            4 => EventType::Read,
            5 => EventType::CleanBrokerData,
            6 => EventType::UpdateBrokerAddress,
            _ => return None,
        })
    }
}

/// Why bytes are not an event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    #[error("event of {0} bytes is shorter than its 2-byte type id")]
    TooShort(usize),
    #[error("event of {0} bytes exceeds the bound of {max} bytes", max = MAX_EVENT_LEN)]
    TooLong(usize),
    #[error("unknown event type id {0}")]
    UnknownType(u16),
    #[error("event type {0:?} is never written to the log")]
    NotReplicated(EventType),
    #[error("malformed {kind:?} event: {reason}")]
    Malformed { kind: EventType, reason: String },
}

/// Replaces a group's SyncStateSet (`AlterSyncStateSetEvent`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AlterSyncStateSetEvent {
    pub broker_name: String,
    pub new_sync_state_set: BTreeSet<i64>,
}

/// Adds a member to a group, creating the group on its first member (`ApplyBrokerIdEvent`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApplyBrokerIdEvent {
    pub broker_address: String,
    pub broker_name: String,
    pub cluster_name: String,
    pub new_broker_id: i64,
    pub register_check_code: String,
}

/// The outcome of an election (`ElectMasterEvent`): a new master, or none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElectMasterEvent {
    pub broker_name: String,
    /// Set exactly when `new_master_elected` (checked by [`Event::decode`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_master_broker_id: Option<i64>,
    pub new_master_elected: bool,
}

/// Removes members, or a whole group (`CleanBrokerDataEvent`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CleanBrokerDataEvent {
    /// `None` or empty: the whole group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broker_id_set_to_clean: Option<BTreeSet<i64>>,
    pub broker_name: String,
}

/// A member registered from a new address (`UpdateBrokerAddressEvent`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateBrokerAddressEvent {
    pub broker_address: String,
    pub broker_id: i64,
    pub broker_name: String,
    pub cluster_name: String,
}

/// One entry of the replicated log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    AlterSyncStateSet(AlterSyncStateSetEvent),
    ApplyBrokerId(ApplyBrokerIdEvent),
    ElectMaster(ElectMasterEvent),
    CleanBrokerData(CleanBrokerDataEvent),
    UpdateBrokerAddress(UpdateBrokerAddressEvent),
}

impl ElectMasterEvent {
    /// `id` became master.
    pub fn elected(broker_name: &str, id: i64) -> Self {
        Self {
            broker_name: broker_name.to_owned(),
            new_master_broker_id: Some(id),
            new_master_elected: true,
        }
    }

    /// Nobody could be elected: the master is cleared.
    pub fn none_elected(broker_name: &str) -> Self {
        Self {
            broker_name: broker_name.to_owned(),
            new_master_broker_id: None,
            new_master_elected: false,
        }
    }
}

impl Event {
    /// Its type.
    pub fn event_type(&self) -> EventType {
        match self {
            Event::AlterSyncStateSet(_) => EventType::AlterSyncStateSet,
            Event::ApplyBrokerId(_) => EventType::ApplyBrokerId,
            Event::ElectMaster(_) => EventType::ElectMaster,
            Event::CleanBrokerData(_) => EventType::CleanBrokerData,
            Event::UpdateBrokerAddress(_) => EventType::UpdateBrokerAddress,
        }
    }

    /// The group it changes.
    pub fn broker_name(&self) -> &str {
        match self {
            Event::AlterSyncStateSet(e) => &e.broker_name,
            Event::ApplyBrokerId(e) => &e.broker_name,
            Event::ElectMaster(e) => &e.broker_name,
            Event::CleanBrokerData(e) => &e.broker_name,
            Event::UpdateBrokerAddress(e) => &e.broker_name,
        }
    }

    /// The event's bytes as RocketMQ's `EventSerializer` writes them.
    pub fn encode(&self) -> Vec<u8> {
        let fields = match self {
            Event::AlterSyncStateSet(e) => serde_json::to_value(e),
            Event::ApplyBrokerId(e) => serde_json::to_value(e),
            Event::ElectMaster(e) => serde_json::to_value(e),
            Event::CleanBrokerData(e) => serde_json::to_value(e),
            Event::UpdateBrokerAddress(e) => serde_json::to_value(e),
        };
        // Plain structs of strings, integers and sets always convert; the fallback only keeps
        // this function total.
        let fields = match fields {
            Ok(serde_json::Value::Object(map)) => map,
            _ => serde_json::Map::new(),
        };
        // fastjson writes a bean's getters in name order; `eventType` is one of them. A BTreeMap
        // sorts whatever serde_json's map order is configured to be.
        let mut sorted: std::collections::BTreeMap<String, serde_json::Value> =
            fields.into_iter().collect();
        sorted.insert(
            "eventType".to_owned(),
            serde_json::Value::from(self.event_type().java_name()),
        );
        let mut out = Vec::with_capacity(64);
        out.extend_from_slice(&self.event_type().id().to_be_bytes());
        // Writing a map of JSON values into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut out, &sorted);
        out
    }

    /// Reads an event written by [`Event::encode`] or by RocketMQ (fastjson's JSON, read as
    /// tolerantly as fastjson reads it). Never panics; see the module's bounds.
    pub fn decode(bytes: &[u8]) -> Result<Event, EventError> {
        if bytes.len() < 2 {
            return Err(EventError::TooShort(bytes.len()));
        }
        if bytes.len() > MAX_EVENT_LEN {
            return Err(EventError::TooLong(bytes.len()));
        }
        let id = u16::from_be_bytes([bytes[0], bytes[1]]);
        let kind = EventType::from_id(id).ok_or(EventError::UnknownType(id))?;
        let json = &bytes[2..];
        let event = match kind {
            EventType::AlterSyncStateSet => Event::AlterSyncStateSet(parse(kind, json)?),
            EventType::ApplyBrokerId => Event::ApplyBrokerId(parse(kind, json)?),
            EventType::ElectMaster => Event::ElectMaster(parse(kind, json)?),
            EventType::CleanBrokerData => Event::CleanBrokerData(parse(kind, json)?),
            EventType::UpdateBrokerAddress => Event::UpdateBrokerAddress(parse(kind, json)?),
            EventType::Read => return Err(EventError::NotReplicated(kind)),
        };
        event.validate()?;
        Ok(event)
    }

    /// Refuses events whose fields parse but cannot be applied as meant.
    fn validate(&self) -> Result<(), EventError> {
        let kind = self.event_type();
        let bad = |reason: &str| {
            Err(EventError::Malformed {
                kind,
                reason: reason.to_owned(),
            })
        };
        if self.broker_name().is_empty() {
            return bad("empty brokerName");
        }
        if let Event::ElectMaster(e) = self {
            if e.new_master_elected != e.new_master_broker_id.is_some() {
                return bad("newMasterBrokerId must be set exactly when newMasterElected");
            }
        }
        Ok(())
    }
}

fn parse<T: DeserializeOwned>(kind: EventType, json: &[u8]) -> Result<T, EventError> {
    if json.is_empty() {
        return Err(EventError::Malformed {
            kind,
            reason: "no JSON after the type id".to_owned(),
        });
    }
    fastjson::from_slice(json).map_err(|e| EventError::Malformed {
        kind,
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json_of(event: &Event) -> String {
        String::from_utf8(event.encode()[2..].to_vec()).unwrap()
    }

    #[test]
    fn writes_what_rocketmq_writes() {
        let e = Event::ElectMaster(ElectMasterEvent::elected("broker-a", 2));
        let bytes = e.encode();
        assert_eq!(&bytes[..2], &[0, 3]);
        assert_eq!(
            json_of(&e),
            r#"{"brokerName":"broker-a","eventType":"ELECT_MASTER_EVENT","newMasterBrokerId":2,"newMasterElected":true}"#
        );
        let none = Event::ElectMaster(ElectMasterEvent::none_elected("broker-a"));
        assert_eq!(
            json_of(&none),
            r#"{"brokerName":"broker-a","eventType":"ELECT_MASTER_EVENT","newMasterElected":false}"#
        );
        let alter = Event::AlterSyncStateSet(AlterSyncStateSetEvent {
            broker_name: "b".into(),
            new_sync_state_set: [2, 1].into(),
        });
        assert_eq!(
            json_of(&alter),
            r#"{"brokerName":"b","eventType":"ALTER_SYNC_STATE_SET_EVENT","newSyncStateSet":[1,2]}"#
        );
    }

    #[test]
    fn reads_fastjson_output_with_its_quirks() {
        // Numbers as strings, an unknown field, eventType in another place.
        let mut bytes = vec![0, 2];
        bytes.extend_from_slice(
            br#"{"eventType":"APPLY_BROKER_ID_EVENT","brokerAddress":"127.0.0.1:10911","brokerName":"a","clusterName":"c","newBrokerId":"1","registerCheckCode":"127.0.0.1:10911;1","extra":[1]}"#,
        );
        let Event::ApplyBrokerId(e) = Event::decode(&bytes).unwrap() else {
            panic!("wrong type");
        };
        assert_eq!(e.new_broker_id, 1);
        assert_eq!(e.broker_address, "127.0.0.1:10911");
    }

    #[test]
    fn refuses_garbage_without_panicking() {
        let cases: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![0, 0],
            vec![0, 4, b'{', b'}'],
            vec![0, 7, b'{', b'}'],
            vec![0xff, 0xff, b'{'],
            vec![0, 1],
            vec![0, 1, b'{'],
            vec![0, 1, 0xc3, 0x28],
            b"\x00\x01{\"brokerName\":\"a\"}".to_vec(),
            b"\x00\x01{\"brokerName\":\"a\",\"newSyncStateSet\":{\"x\":1}}".to_vec(),
            b"\x00\x03{\"brokerName\":\"a\",\"newMasterElected\":true}".to_vec(),
            b"\x00\x03{\"brokerName\":\"\",\"newMasterElected\":false}".to_vec(),
            b"\x00\x06{\"brokerName\":\"a\",\"brokerId\":\"x\"}".to_vec(),
            [&[0u8, 1][..], &b"[".repeat(10_000)[..]].concat(),
            vec![0u8; MAX_EVENT_LEN + 1],
        ];
        for case in &cases {
            assert!(Event::decode(case).is_err(), "accepted {case:?}");
        }
        // Pseudo-random bytes behind every type id.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for len in 0..512usize {
            let mut buf = Vec::with_capacity(len);
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                buf.push(x as u8);
            }
            if len >= 2 {
                buf[0] = 0;
                buf[1] = (len % 8) as u8;
            }
            let _ = Event::decode(&buf);
        }
    }
}
