//! The batch body of SEND_BATCH_MESSAGE, as a producer sends it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocketpy_protocol::message::batch::decode_batch;

fuzz_target!(|data: &[u8]| {
    let _ = decode_batch(&bytes::Bytes::copy_from_slice(data));
});
