//! The ROCKETMQ (binary) header serialisation, fed the header bytes directly.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocketpy_protocol::header::PullMessageRequestHeader;

fuzz_target!(|data: &[u8]| {
    if let Ok(cmd) = rocketpy_protocol::header_binary::decode(data) {
        let _ = cmd.decode_header::<PullMessageRequestHeader>();
    }
});
