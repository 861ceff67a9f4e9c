//! Subscription expressions of the TAG type: `*` (everything) or `TagA || TagB`, and the
//! `SubscriptionData` a consumer announces for one.

use crate::body::SubscriptionData;
use crate::message::java_hash::java_string_hash;

/// The expression that matches everything.
pub const SUB_ALL: &str = "*";

/// The tags an expression names, in order without repeats; `None` for "everything" (`*` or
/// blank).
pub fn tags_of(expression: &str) -> Option<Vec<&str>> {
    let expr = expression.trim();
    if expr.is_empty() || expr == SUB_ALL {
        return None;
    }
    let mut tags: Vec<&str> = Vec::new();
    for tag in expr.split("||").map(str::trim).filter(|t| !t.is_empty()) {
        if !tags.contains(&tag) {
            tags.push(tag);
        }
    }
    Some(tags)
}

/// RocketMQ's tag expression type (`ExpressionType.TAG`).
pub const TAG: &str = "TAG";

/// Whether `expression_type` names the tag type: absent, empty or `TAG`
/// (RocketMQ's `ExpressionType.isTagType`).
pub fn is_tag_type(expression_type: Option<&str>) -> bool {
    matches!(expression_type, None | Some("" | TAG))
}

/// RocketMQ's `FilterAPI.build`: a tag subscription ([`build_subscription`]) when
/// `expression_type` is the tag type, else the expression as it is, of that type.
pub fn build_typed_subscription(
    topic: &str,
    expression: &str,
    expression_type: Option<&str>,
    sub_version: i64,
) -> SubscriptionData {
    match expression_type {
        Some(ty) if !is_tag_type(Some(ty)) => SubscriptionData {
            topic: topic.to_owned(),
            sub_string: expression.to_owned(),
            sub_version,
            expression_type: ty.to_owned(),
            ..Default::default()
        },
        _ => build_subscription(topic, expression, sub_version),
    }
}

/// RocketMQ's `SubscriptionData` for `expression` on `topic`: the tags and their hash codes.
pub fn build_subscription(topic: &str, expression: &str, sub_version: i64) -> SubscriptionData {
    let tags = tags_of(expression).unwrap_or_default();
    SubscriptionData {
        topic: topic.to_owned(),
        sub_string: match expression.trim() {
            "" => SUB_ALL.to_owned(),
            expr => expr.to_owned(),
        },
        code_set: tags.iter().map(|t| java_string_hash(t)).collect(),
        tags_set: tags.iter().map(|t| (*t).to_owned()).collect(),
        sub_version,
        expression_type: TAG.to_owned(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions() {
        assert_eq!(tags_of(" * "), None);
        assert_eq!(tags_of(""), None);
        assert_eq!(tags_of(" TagA || TagB ||TagA"), Some(vec!["TagA", "TagB"]));
        let some = build_subscription("T", " TagA || TagB ||TagA", 1);
        assert_eq!(some.tags_set, vec!["TagA", "TagB"]);
        assert_eq!(some.code_set[0], java_string_hash("TagA"));
        assert_eq!(build_subscription("T", "", 1).sub_string, "*");
        assert!(build_subscription("T", "*", 1).tags_set.is_empty());
    }
}
