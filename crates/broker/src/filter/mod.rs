//! What a consumer's read keeps: tag expressions by the consume queue's tags codes
//! ([`tags`]), SQL92 expressions on each stored record's properties (the filters of
//! [`manager`]), as RocketMQ's `ExpressionMessageFilter`.

pub mod bitmap;
pub mod manager;
pub mod persist;
pub mod tags;

use std::sync::Arc;

use rocketpy_filter::EncodedProperties;
use rocketpy_protocol::message::record::{decode, Decoded};
use rocketpy_protocol::subscription::is_tag_type;
use rocketpy_store::consume_queue_ext::CqExtUnit;
use rocketpy_store::MessageFilter;

pub use bitmap::SqlFilter;
pub use manager::{ConsumerFilterManager, FilterData, SQL92};
pub use tags::TagFilter;

/// The consumer groups' SQL92 filters of a broker starting: loaded from
/// `config_dir/consumerFilter.json` as of `now`, bloom filter shaped by the config, computing
/// messages' bit maps at dispatch with `enableCalcFilterBitMap` (the store keeps them only
/// with `enableConsumeQueueExt`: see [`bit_maps_for`]).
pub fn open(
    cfg: &crate::config::BrokerConfig,
    config_dir: &std::path::Path,
    now: i64,
) -> crate::error::Result<Arc<ConsumerFilterManager>> {
    let bloom = rocketpy_filter::bloom::BloomFilter::create(
        cfg.max_error_rate_of_bloom_filter,
        cfg.expect_consumer_num_use_filter,
    )
    .map_err(|e| {
        crate::error::BrokerError::Config(format!(
            "maxErrorRateOfBloomFilter / expectConsumerNumUseFilter: {e}"
        ))
    })?;
    let calc = cfg.enable_calc_filter_bit_map;
    let path = config_dir.join("consumerFilter.json");
    Ok(Arc::new(ConsumerFilterManager::open(
        bloom, calc, path, now,
    )?))
}

/// What the store should compute bit maps with: the filters, when the broker computes them
/// and the store keeps them (without `enableConsumeQueueExt`, the broker says so and filters
/// by properties alone).
pub fn bit_maps_for(
    settings: &crate::config::BrokerSettings,
    filters: &Arc<ConsumerFilterManager>,
) -> Option<Arc<dyn rocketpy_store::dispatch::BitMapCalculator>> {
    let calc = settings.broker.enable_calc_filter_bit_map;
    if calc && !settings.store.enable_consume_queue_ext {
        tracing::warn!("enableCalcFilterBitMap=true needs enableConsumeQueueExt=true to keep the bit maps: SQL92 filters are evaluated on every message");
    }
    (calc && settings.store.enable_consume_queue_ext).then(|| filters.clone() as _)
}

/// RocketMQ's remark for a non-tag subscription on a broker with `enablePropertyFilter=false`
/// (answered with SYSTEM_ERROR).
pub fn not_supported(expression_type: &str) -> String {
    format!("The broker does not support consumer to filter message by {expression_type}")
}

/// RocketMQ's remark for an expression that does not compile (SUBSCRIPTION_PARSE_FAILED),
/// with what is wrong and where.
pub fn parse_failed(why: &str) -> String {
    format!("parse the consumer's subscription failed: {why}")
}

/// A read's filter: by tags, or by an SQL92 expression.
#[derive(Debug, Clone)]
pub enum ExpressionFilter {
    Tags(TagFilter),
    Sql(SqlFilter),
}

impl ExpressionFilter {
    /// The filter of a tag expression.
    pub fn tags(expression: &str) -> Self {
        ExpressionFilter::Tags(TagFilter::new(expression))
    }

    /// The filter of an expression of any type: Err(remark) when it does not compile. An
    /// SQL92 expression that `group` registered for `topic` by heartbeat is that filter, so
    /// messages' bit maps can rule messages out.
    pub fn compile(
        filters: &ConsumerFilterManager,
        (topic, group): (&str, &str),
        expression: &str,
        expression_type: Option<&str>,
    ) -> Result<Self, String> {
        match expression_type.filter(|ty| !is_tag_type(Some(ty))) {
            None => Ok(Self::tags(expression)),
            Some(ty) => {
                if let Some(data) = filters.get(topic, group) {
                    if data.expression == expression && data.expression_type == ty {
                        return Ok(Self::registered(filters, data));
                    }
                }
                manager::compile(ty, expression)
                    .map(|f| ExpressionFilter::Sql(SqlFilter::new(Arc::new(f))))
                    .map_err(|e| parse_failed(&e))
            }
        }
    }

    /// The filter of a group's registered SQL92 subscription.
    pub fn registered(filters: &ConsumerFilterManager, data: Arc<FilterData>) -> Self {
        ExpressionFilter::Sql(SqlFilter::registered(data, *filters.bloom()))
    }

    /// Whether every message passes (a read need not filter at all).
    pub fn is_all(&self) -> bool {
        matches!(self, ExpressionFilter::Tags(t) if t.is_all())
    }

    /// The filter as a read's argument: None when everything passes.
    pub fn for_read(&self) -> Option<&dyn MessageFilter> {
        (!self.is_all()).then_some(self as &dyn MessageFilter)
    }
}

impl MessageFilter for ExpressionFilter {
    fn matches_unit(&self, tags_code: i64, ext: Option<&CqExtUnit>) -> bool {
        match self {
            ExpressionFilter::Tags(t) => t.matches(tags_code),
            ExpressionFilter::Sql(sql) => sql.may_match(ext),
        }
    }

    /// SQL92: the expression on the record's properties (TAGS among them), read in place; a
    /// record that cannot be decoded or an evaluation error does not match (RocketMQ logs and
    /// skips it).
    fn matches_record(&self, record: &[u8]) -> bool {
        let ExpressionFilter::Sql(sql) = self else {
            return true;
        };
        match decode(record, false) {
            Ok(Decoded::Message(view)) => {
                match sql.filter.evaluate(&EncodedProperties(view.properties)) {
                    Ok(value) => value == Some(true),
                    Err(e) => {
                        tracing::debug!(error = ?e, "SQL92 filter could not evaluate a message; not delivered");
                        false
                    }
                }
            }
            _ => false,
        }
    }
}
