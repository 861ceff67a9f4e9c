//! Subscription expressions (`*`, `TagA || TagB`) and the broker's tag filter.

use std::collections::HashSet;

use rocketpy_protocol::body::SubscriptionData;
use rocketpy_protocol::message::java_hash::java_string_hash;

/// The expression that matches everything.
pub const SUB_ALL: &str = "*";

/// Parses an expression into RocketMQ's `SubscriptionData` (tags and their hash codes).
pub fn build_subscription(topic: &str, expression: &str, sub_version: i64) -> SubscriptionData {
    let expr = expression.trim();
    let mut data = SubscriptionData {
        topic: topic.to_owned(),
        sub_string: if expr.is_empty() {
            SUB_ALL.to_owned()
        } else {
            expr.to_owned()
        },
        sub_version,
        expression_type: "TAG".to_owned(),
        ..Default::default()
    };
    if data.sub_string != SUB_ALL {
        for tag in data
            .sub_string
            .split("||")
            .map(str::trim)
            .filter(|t| !t.is_empty())
        {
            if !data.tags_set.iter().any(|t| t == tag) {
                data.tags_set.push(tag.to_owned());
                data.code_set.push(java_string_hash(tag));
            }
        }
    }
    data
}

/// Matches consume-queue tags codes against a subscription.
#[derive(Debug, Clone)]
pub struct TagFilter {
    all: bool,
    codes: HashSet<i32>,
}

impl TagFilter {
    /// The filter of `data`. Non-TAG expressions (SQL92) are not evaluated by rocketpy and
    /// match everything; the client filters exactly.
    pub fn new(data: &SubscriptionData) -> Self {
        let all = data.sub_string == SUB_ALL || data.expression_type != "TAG";
        TagFilter {
            all,
            codes: data.code_set.iter().copied().collect(),
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
    use super::*;

    #[test]
    fn expressions() {
        let all = build_subscription("T", "*", 1);
        assert!(all.tags_set.is_empty());
        assert!(TagFilter::new(&all).matches(12345));
        let some = build_subscription("T", " TagA || TagB ||TagA", 1);
        assert_eq!(some.tags_set, vec!["TagA", "TagB"]);
        let f = TagFilter::new(&some);
        assert!(f.matches(java_string_hash("TagA") as i64));
        assert!(!f.matches(java_string_hash("TagC") as i64));
        assert_eq!(build_subscription("T", "", 1).sub_string, "*");
    }
}
