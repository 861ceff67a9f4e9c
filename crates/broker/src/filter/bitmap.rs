//! The bloom-filter bit map of the seed (RocketMQ's `CommitLogDispatcherCalcBitMap` and the
//! SQL92 half of `ExpressionMessageFilter`): at dispatch, every registered SQL92 filter of
//! the message's topic (dead ones too: their groups may come back) is evaluated on its
//! properties, and the bits of those it matches are set in the bit map stored in its
//! consume-queue ext unit; a read for one filter then skips, without reading the CommitLog,
//! every message whose bit map lacks one of the filter's bits.
//!
//! What must stay true: a bit map only ever rules messages out for a filter that was
//! registered when the message was dispatched ([`FilterData::knew`]) with the bloom filter's
//! current shape; in every other case the message's properties decide.

use std::sync::Arc;

use rocketpy_filter::bloom::BloomFilter;
use rocketpy_filter::{EncodedProperties, Filter};
use rocketpy_store::consume_queue_ext::CqExtUnit;
use rocketpy_store::dispatch::BitMapCalculator;

use super::manager::{ConsumerFilterManager, FilterData};

impl BitMapCalculator for ConsumerFilterManager {
    fn bit_map(&self, topic: &str, properties: &str) -> Option<Vec<u8>> {
        if !self.calc_bit_map {
            return None;
        }
        let bloom = *self.bloom();
        self.with_topic(topic, |groups| {
            let mut map = vec![0u8; bloom.bytes()];
            let props = EncodedProperties(properties);
            for data in groups.values() {
                let Some(bits) = &data.bloom else { continue };
                if data.filter.matches(&props) {
                    bloom.set(bits, &mut map);
                }
            }
            map
        })
    }
}

/// An SQL92 filter of a read, with the registered filter whose bits it may test.
#[derive(Debug, Clone)]
pub struct SqlFilter {
    pub filter: Arc<Filter>,
    /// The group's registered filter of the same expression, and the bloom filter's shape.
    bits: Option<(Arc<FilterData>, BloomFilter)>,
}

impl SqlFilter {
    /// A filter evaluated on properties only.
    pub fn new(filter: Arc<Filter>) -> Self {
        SqlFilter { filter, bits: None }
    }

    /// The registered filter `data`, whose bits in messages' bit maps may rule them out.
    pub fn registered(data: Arc<FilterData>, bloom: BloomFilter) -> Self {
        SqlFilter {
            filter: data.filter.clone(),
            bits: Some((data, bloom)),
        }
    }

    /// Whether the ext unit's bit map leaves the message possibly matching (true whenever
    /// the bit map cannot tell).
    pub fn may_match(&self, ext: Option<&CqExtUnit>) -> bool {
        let (Some(ext), Some((data, bloom))) = (ext, &self.bits) else {
            return true;
        };
        let Some(bits) = &data.bloom else {
            return true;
        };
        if ext.bit_map.is_empty() || !data.knew(ext.store_time) || !bloom.is_valid(bits) {
            return true;
        }
        bloom.is_hit(bits, &ext.bit_map)
    }
}
