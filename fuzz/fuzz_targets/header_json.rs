//! The JSON header serialisation (RocketMQ's default), fed the header bytes directly.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocketpy_protocol::header::SendMessageRequestHeader;

fuzz_target!(|data: &[u8]| {
    if let Ok(cmd) = rocketpy_protocol::header_json::decode(data) {
        let _ = cmd.decode_header::<SendMessageRequestHeader>();
    }
});
