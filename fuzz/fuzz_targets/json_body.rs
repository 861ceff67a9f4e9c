//! Every JSON body shape the servers and clients read, as fastjson writes it or as a hostile
//! peer might: the first byte picks the shape, the rest is the body. Refusals are fine; a
//! panic is a bug, and so is work or memory out of proportion to the input: the normalized
//! text is never more than twice the input (nested object keys once doubled it per level),
//! and `make fuzz` runs this target with a time and a memory limit so that superlinear inputs
//! count as findings.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocketpy_protocol::body::admin::{parse_mq_table, OffsetWrapper, TopicOffset};
use rocketpy_protocol::body::batch_ack::BatchAckMessageRequestBody;
use rocketpy_protocol::body::fastjson::{from_slice, from_slice_within, normalize};
use rocketpy_protocol::body::topic::register_body_data_version;
use rocketpy_protocol::body::{
    ClusterInfo, ConsumerListBody, DataVersion, HeartbeatData, LockBatchRequestBody,
    RegisterBrokerBody, TopicConfigSerializeWrapper, TopicList, TopicRouteData,
};
use rocketpy_protocol::limits::{check_json, JsonLimits};

fuzz_target!(|data: &[u8]| {
    let Some((&shape, body)) = data.split_first() else {
        return;
    };
    if let Ok(text) = normalize(body) {
        assert!(
            text.len() <= 2 * body.len() + 2,
            "normalize grew {} bytes to {}",
            body.len(),
            text.len()
        );
    }
    let _ = check_json(body, JsonLimits::HEADER);
    match shape % 12 {
        0 => drop(from_slice::<HeartbeatData>(body)),
        1 => drop(from_slice::<LockBatchRequestBody>(body)),
        2 => drop(from_slice::<BatchAckMessageRequestBody>(body)),
        3 => drop(from_slice::<DataVersion>(body)),
        4 => {
            let _ = register_body_data_version(body);
            drop(from_slice_within::<RegisterBrokerBody>(body, JsonLimits::TABLE))
        }
        5 => drop(from_slice_within::<TopicConfigSerializeWrapper>(
            body,
            JsonLimits::TABLE,
        )),
        6 => drop(parse_mq_table::<TopicOffset>(body)),
        7 => drop(parse_mq_table::<OffsetWrapper>(body)),
        8 => drop(from_slice::<TopicRouteData>(body)),
        9 => drop(from_slice::<ClusterInfo>(body)),
        10 => drop(from_slice::<TopicList>(body)),
        _ => drop(from_slice::<ConsumerListBody>(body)),
    }
    let _ = from_slice_within::<serde_json::Value>(body, JsonLimits::TABLE);
});
