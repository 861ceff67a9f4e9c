//! The epoch file's text (`epochFileCheckpoint`): parsed or refused in linear time; what
//! parses writes back to text that parses to the same table.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocketpy_store::epoch_cache::EpochCache;

fuzz_target!(|data: &[u8]| {
    if let Ok(cache) = EpochCache::parse(data) {
        let again = EpochCache::parse(cache.encode().as_bytes()).expect("own text parses");
        assert_eq!(again, cache);
        let _ = cache.consistent_point(&again);
    }
});
