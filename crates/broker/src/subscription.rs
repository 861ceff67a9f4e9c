//! The broker's tag filter: consume-queue units match a subscription by tags hash code (the
//! client checks the tags themselves, as hash codes collide).

use std::collections::HashSet;

use rocketpy_protocol::body::SubscriptionData;
use rocketpy_protocol::message::java_hash::java_string_hash;
use rocketpy_protocol::subscription::tags_of;

/// Matches consume-queue tags codes against a subscription.
#[derive(Debug, Clone)]
pub struct TagFilter {
    all: bool,
    codes: HashSet<i32>,
}

impl TagFilter {
    /// The filter of `data`. Non-TAG expressions (SQL92) are not evaluated by rocketpy and
    /// match everything; the client filters exactly.
    ///
    /// The codes are computed here from the expression, not taken from the client's
    /// `codeSet` as the Java broker does: rocketmq-client-rust 1.0 hashes the untrimmed tags
    /// of `"A || B"` ("A " and " B"), so a broker trusting its codes delivers nothing.
    pub fn new(data: &SubscriptionData) -> Self {
        let tags = if data.expression_type == "TAG" {
            tags_of(&data.sub_string)
        } else {
            None
        };
        TagFilter {
            all: tags.is_none(),
            codes: tags
                .unwrap_or_default()
                .into_iter()
                .map(java_string_hash)
                .collect(),
        }
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
        assert!(TagFilter::new(&build_subscription("T", "*", 1)).matches(12345));
        let f = TagFilter::new(&build_subscription("T", "TagA || TagB", 1));
        assert!(f.matches(java_string_hash("TagA") as i64));
        assert!(!f.matches(java_string_hash("TagC") as i64));
        // A client's own codes do not count: rocketmq-client-rust 1.0 sends "TagA "'s hash.
        let mut rust = build_subscription("T", "TagA || TagB", 1);
        rust.code_set = vec![java_string_hash("TagA "), java_string_hash(" TagB")];
        assert!(TagFilter::new(&rust).matches(java_string_hash("TagB") as i64));
        let mut sql = build_subscription("T", "a > 1", 1);
        sql.expression_type = "SQL92".into();
        assert!(TagFilter::new(&sql).is_all());
    }
}
