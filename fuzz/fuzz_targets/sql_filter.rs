//! SQL92 subscription expressions (`rocketpy-filter`): compiled or refused, and a compiled
//! one evaluated on properties made from the same bytes, without panicking or taking more
//! than linear time (the run's time and memory limits catch superlinear inputs).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocketpy_filter::{EncodedProperties, Filter};

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let (expr, props) = s.split_once('\u{0}').unwrap_or((&s, "a\u{1}1\u{2}b\u{1}x\u{2}"));
    if let Ok(filter) = Filter::compile(expr) {
        let _ = filter.evaluate(&EncodedProperties(props));
    }
});
