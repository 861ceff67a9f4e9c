//! The message properties string (`name\u{1}value\u{2}...`): full decoding, pair iteration and
//! the put path's lookup, which must agree.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocketpy_protocol::message::properties;

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let all = properties::decode(&s);
    for (name, _) in properties::pairs(&s) {
        let _ = properties::find(&s, name);
    }
    for key in ["TAGS", "KEYS", "UNIQ_KEY", "DELAY", "WAIT"] {
        let _ = (properties::find(&s, key), all.get(key));
    }
});
