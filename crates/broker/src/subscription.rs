//! The broker's tag filter: consume-queue units match a subscription by tags hash code (the
//! client checks the tags themselves, as hash codes collide).

use std::collections::HashSet;

use rocketpy_protocol::body::SubscriptionData;
use rocketpy_protocol::subscription::SUB_ALL;

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
    use rocketpy_protocol::message::java_hash::java_string_hash;
    use rocketpy_protocol::subscription::build_subscription;

    use super::*;

    #[test]
    fn filters_by_tags_code() {
        assert!(TagFilter::new(&build_subscription("T", "*", 1)).matches(12345));
        let f = TagFilter::new(&build_subscription("T", "TagA || TagB", 1));
        assert!(f.matches(java_string_hash("TagA") as i64));
        assert!(!f.matches(java_string_hash("TagC") as i64));
    }
}
