//! Writing metrics computed at scrape time from a [`Collector`]: gauges and counters whose
//! values already live in the server's state (queue offsets, connection tables, `/proc`), so
//! nothing is counted twice on a hot path.

use prometheus_client::encoding::{
    DescriptorEncoder, EncodeGaugeValue, EncodeLabelSet, EncodeMetric,
};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

/// Labels as owned pairs, for rows whose label names vary.
pub type Labels = Vec<(&'static str, String)>;

/// Writes one gauge family: a sample per row. Families with no rows are still described, so
/// a scraper sees the metric exists.
pub fn gauge_family<L: EncodeLabelSet>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: impl IntoIterator<Item = (L, i64)>,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, value) in rows {
        ConstGauge::new(value).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

/// Writes one unlabelled gauge (integer or floating point).
pub fn gauge<N: EncodeGaugeValue>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: N,
) -> Result<(), std::fmt::Error> {
    let family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    ConstGauge::new(value).encode(family)
}

/// Writes one unlabelled counter (`name` without `_total`, which the encoder adds).
pub fn counter_f64(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: f64,
) -> Result<(), std::fmt::Error> {
    let family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    ConstCounter::new(value).encode(family)
}
