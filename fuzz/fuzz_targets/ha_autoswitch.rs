//! Controller mode's HA frames: any bytes decode to a frame within its bounds, "need more", or
//! an error, in linear time; a decoded frame encodes back to the bytes it came from.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocketpy_protocol::ha_autoswitch::*;

fuzz_target!(|data: &[u8]| {
    for state in [STATE_HANDSHAKE, STATE_TRANSFER] {
        if let Ok(Some((frame, used))) = decode_master(data, state) {
            assert!(used <= data.len());
            let again = match &frame {
                MasterFrame::Handshake(h) => encode_master_handshake(h).expect("bounded"),
                MasterFrame::Transfer(h, body) => {
                    let mut v = encode_transfer_header(h, body.len()).expect("bounded").to_vec();
                    v.extend_from_slice(body);
                    v
                }
            };
            assert_eq!(&again[..], &data[..used]);
        }
        if let Ok(Some((frame, used))) = decode_slave(data, state) {
            assert!(used <= data.len());
            let _ = encode_slave(&frame);
        }
    }
});
