//! What a consumer's read keeps: tag expressions by the consume queue's tags codes
//! ([`tags`]), SQL92 expressions on each stored record's properties (the filters of
//! [`manager`]), as RocketMQ's `ExpressionMessageFilter`.

pub mod manager;
pub mod tags;

use std::sync::Arc;

use rocketpy_filter::{EncodedProperties, Filter};
use rocketpy_protocol::message::record::{decode, Decoded};
use rocketpy_protocol::subscription::is_tag_type;
use rocketpy_store::MessageFilter;

pub use manager::{ConsumerFilterManager, FilterData, SQL92};
pub use tags::TagFilter;

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
    Sql(Arc<Filter>),
}

impl ExpressionFilter {
    /// The filter of a tag expression.
    pub fn tags(expression: &str) -> Self {
        ExpressionFilter::Tags(TagFilter::new(expression))
    }

    /// The filter of an expression of any type: Err(remark) when it does not compile.
    pub fn compile(expression: &str, expression_type: Option<&str>) -> Result<Self, String> {
        match expression_type {
            ty if is_tag_type(ty) => Ok(Self::tags(expression)),
            Some(ty) => manager::compile(ty, expression)
                .map(|f| ExpressionFilter::Sql(Arc::new(f)))
                .map_err(|e| parse_failed(&e)),
            None => unreachable!("None is the tag type"),
        }
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
    fn matches_unit(&self, tags_code: i64, _bit_map: Option<&[u8]>) -> bool {
        match self {
            ExpressionFilter::Tags(t) => t.matches(tags_code),
            ExpressionFilter::Sql(_) => true,
        }
    }

    /// SQL92: the expression on the record's properties (TAGS among them), read in place; a
    /// record that cannot be decoded or an evaluation error does not match (RocketMQ logs and
    /// skips it).
    fn matches_record(&self, record: &[u8]) -> bool {
        let ExpressionFilter::Sql(filter) = self else {
            return true;
        };
        match decode(record, false) {
            Ok(Decoded::Message(view)) => {
                match filter.evaluate(&EncodedProperties(view.properties)) {
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
