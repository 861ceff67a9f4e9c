//! The tag filter: consume-queue units match a subscription by tags hash code (the client
//! checks the tags themselves, as hash codes collide).

use std::collections::HashSet;

use rocketpy_protocol::message::java_hash::java_string_hash;
use rocketpy_protocol::subscription::tags_of;

/// Matches consume-queue tags codes against a tag expression.
#[derive(Debug, Clone)]
pub struct TagFilter {
    all: bool,
    codes: HashSet<i32>,
}

impl TagFilter {
    /// The filter of a tag expression (`*`, blank, or `A || B`).
    ///
    /// The codes are computed here from the expression, not taken from the client's
    /// `codeSet` as the Java broker does: rocketmq-client-rust 1.0 hashes the untrimmed tags
    /// of `"A || B"` ("A " and " B"), so a broker trusting its codes delivers nothing.
    pub fn new(expression: &str) -> Self {
        let tags = tags_of(expression);
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
    use super::*;

    #[test]
    fn filters_by_tags_code() {
        assert!(TagFilter::new("*").matches(12345));
        assert!(TagFilter::new(" ").is_all());
        let f = TagFilter::new("TagA || TagB");
        assert!(f.matches(java_string_hash("TagA") as i64));
        assert!(!f.matches(java_string_hash("TagC") as i64));
        assert!(
            f.matches(java_string_hash("TagB") as i64),
            "trimmed tags count"
        );
    }
}
