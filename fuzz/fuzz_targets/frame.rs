//! The frame codec as the broker's connections run it: bytes from a socket, decoded frame by
//! frame (both header serialisations), then the typed headers and JSON bodies of the requests
//! a broker or name server reads. Errors are fine; a panic is a bug.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use rocketpy_protocol::body::{fastjson, HeartbeatData, LockBatchRequestBody, RegisterBrokerBody};
use rocketpy_protocol::frame;
use rocketpy_protocol::header::{
    PullMessageRequestHeader, RegisterBrokerRequestHeader, SendMessageRequestHeader,
};

fuzz_target!(|data: &[u8]| {
    let mut buf = BytesMut::from(data);
    while let Ok(Some(cmd)) = frame::decode(&mut buf) {
        let _ = cmd.decode_header::<SendMessageRequestHeader>();
        let _ = cmd.decode_header::<PullMessageRequestHeader>();
        let _ = cmd.decode_header::<RegisterBrokerRequestHeader>();
        let body = &cmd.body;
        let _ = fastjson::from_slice::<HeartbeatData>(body);
        let _ = fastjson::from_slice::<LockBatchRequestBody>(body);
        let _ = fastjson::from_slice::<RegisterBrokerBody>(body);
        let _ = frame::encode_to_bytes(&cmd);
    }
});
