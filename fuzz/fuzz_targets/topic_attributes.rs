//! UPDATE_AND_CREATE_TOPIC's `attributes` (`+message.type=FIFO,-key`): applied to current
//! attributes made from the same bytes, or refused, in linear time.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use rocketpy_protocol::topic_attributes::{alter, message_type};

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let (current, changes) = s.split_once('\u{0}').unwrap_or(("", &s));
    let current: BTreeMap<String, String> = current
        .split(',')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    for create in [true, false] {
        if let Ok(attrs) = alter(create, &current, changes) {
            let _ = message_type(&attrs);
        }
    }
});
