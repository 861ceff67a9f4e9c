//! The broker's tag filter: consume-queue units match a subscription by tags hash code (the
//! client checks the tags themselves, as hash codes collide). Subscriptions of other types
//! (SQL92) are refused, as RocketMQ refuses them with `enablePropertyFilter=false`: the
//! broker does not evaluate them yet, and serving them unfiltered would deliver messages the
//! consumer excluded.

use std::collections::HashSet;

use rocketpy_protocol::body::SubscriptionData;
use rocketpy_protocol::message::java_hash::java_string_hash;
use rocketpy_protocol::subscription::{is_tag_type, tags_of};

/// Matches consume-queue tags codes against a subscription.
#[derive(Debug, Clone)]
pub struct TagFilter {
    all: bool,
    codes: HashSet<i32>,
}

impl TagFilter {
    /// The filter of `data`; Err(RocketMQ's remark, answered with SYSTEM_ERROR) for an
    /// expression type other than TAG.
    ///
    /// The codes are computed here from the expression, not taken from the client's
    /// `codeSet` as the Java broker does: rocketmq-client-rust 1.0 hashes the untrimmed tags
    /// of `"A || B"` ("A " and " B"), so a broker trusting its codes delivers nothing.
    pub fn new(data: &SubscriptionData) -> Result<Self, String> {
        if !is_tag_type(Some(&data.expression_type)) {
            return Err(format!(
                "The broker does not support consumer to filter message by {}",
                data.expression_type
            ));
        }
        let tags = tags_of(&data.sub_string);
        Ok(TagFilter {
            all: tags.is_none(),
            codes: tags
                .unwrap_or_default()
                .into_iter()
                .map(java_string_hash)
                .collect(),
        })
    }

    /// Whether a unit with this tags code is delivered.
    pub fn matches(&self, tags_code: i64) -> bool {
        self.all || self.codes.contains(&(tags_code as i32))
    }

    /// Whether every message matches.
    pub fn is_all(&self) -> bool {
        self.all
    }
}

#[cfg(test)]
mod tests {
    use rocketpy_protocol::subscription::build_subscription;

    use super::*;

    #[test]
    fn filters_by_tags_code() {
        let new = |data| TagFilter::new(&data).expect("a tag filter");
        assert!(new(build_subscription("T", "*", 1)).matches(12345));
        let f = new(build_subscription("T", "TagA || TagB", 1));
        assert!(f.matches(java_string_hash("TagA") as i64));
        assert!(!f.matches(java_string_hash("TagC") as i64));
        // A client's own codes do not count: rocketmq-client-rust 1.0 sends "TagA "'s hash.
        let mut rust = build_subscription("T", "TagA || TagB", 1);
        rust.code_set = vec![java_string_hash("TagA "), java_string_hash(" TagB")];
        assert!(new(rust).matches(java_string_hash("TagB") as i64));
        let mut sql = build_subscription("T", "a > 1", 1);
        sql.expression_type = "SQL92".into();
        assert_eq!(
            TagFilter::new(&sql).err().as_deref(),
            Some("The broker does not support consumer to filter message by SQL92"),
            "refused, never served unfiltered"
        );
    }
}
