//! Whole expressions against messages, as RocketMQ evaluates them.

use proptest::prelude::*;

use crate::{EncodedProperties, Filter};

fn encoded(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}\u{1}{v}\u{2}"))
        .collect()
}

/// Whether `sql` matches a message with `pairs`.
fn matches(sql: &str, pairs: &[(&str, &str)]) -> bool {
    let filter = Filter::compile(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let props = encoded(pairs);
    filter.matches(&EncodedProperties(&props))
}

/// The values of `a` among 0..10 that `sql` selects.
fn selected(sql: &str) -> Vec<i32> {
    (0..10)
        .filter(|i| matches(sql, &[("a", &i.to_string())]))
        .collect()
}

#[test]
fn numeric_comparisons_read_properties_as_numbers() {
    assert_eq!(selected("a > 5"), [6, 7, 8, 9]);
    assert_eq!(selected("a >= 5"), [5, 6, 7, 8, 9]);
    assert_eq!(selected("a < 2"), [0, 1]);
    assert_eq!(selected("a <= 1"), [0, 1]);
    assert_eq!(selected("a = 3"), [3]);
    assert_eq!(selected("a <> 3").len(), 9);
    assert_eq!(selected("a BETWEEN 3 AND 5"), [3, 4, 5]);
    assert_eq!(selected("a NOT BETWEEN 1 AND 8"), [0, 9]);
    assert_eq!(selected("a > 2.5 and a < 4.5"), [3, 4]);
    assert_eq!(selected("a > -1 AND a < 1L"), [0]);
    assert_eq!(
        selected("5 < a"),
        [6, 7, 8, 9],
        "the constant on the left converts too"
    );
}

#[test]
fn strings_sets_and_text_operators() {
    let m = |sql: &str, v: &str| matches(sql, &[("region", v), ("TAGS", "TagA")]);
    assert!(m("region = 'eu'", "eu"));
    assert!(!m("region = 'eu'", "us"));
    assert!(m("region <> 'eu'", "us"));
    assert!(m("region IN ('eu', 'us')", "us"));
    assert!(!m("region IN ('eu', 'us')", "ap"));
    assert!(m("region NOT IN ('eu', 'us')", "ap"));
    assert!(m("region CONTAINS 'u-w'", "eu-west"));
    assert!(m("region NOT CONTAINS 'x'", "eu-west"));
    assert!(m("region STARTSWITH 'eu'", "eu-west"));
    assert!(m("region NOT STARTSWITH 'us'", "eu-west"));
    assert!(m("region ENDSWITH 'west'", "eu-west"));
    assert!(m("region NOT ENDSWITH 'east'", "eu-west"));
    assert!(m("TAGS = 'TagA' and region = 'it''s'", "it's"));
    assert!(!m("region CONTAINS ''", "eu"), "an empty search is FALSE");
}

#[test]
fn missing_properties_make_comparisons_unknown() {
    // Unknown is not a match, and NOT unknown is unknown.
    for sql in [
        "b > 1",
        "b = 'x'",
        "NOT (b = 'x')",
        "b <> 'x'",
        "b IN ('x')",
        "b NOT IN ('x')",
        "b BETWEEN 1 AND 2",
    ] {
        assert!(!matches(sql, &[("a", "1")]), "{sql}");
    }
    assert!(matches("b IS NULL", &[("a", "1")]));
    assert!(!matches("b IS NOT NULL", &[("a", "1")]));
    assert!(matches("a IS NOT NULL", &[("a", "1")]));
    // Three-valued AND / OR, as SQL.
    assert!(matches("b > 1 OR a = 1", &[("a", "1")]));
    assert!(!matches("b > 1 AND a = 1", &[("a", "1")]));
    assert!(!matches("NOT (b > 1 AND a = 1)", &[("a", "1")]), "unknown");
    assert!(
        matches("NOT (b > 1 AND a = 2)", &[("a", "1")]),
        "FALSE either way"
    );
    // The text operators are FALSE, not unknown, for a missing property.
    assert!(matches("b NOT CONTAINS 'x' OR TRUE", &[]));
    assert!(!matches("b NOT CONTAINS 'x'", &[]));
    assert!(matches("NOT (b CONTAINS 'x')", &[]));
}

#[test]
fn constants_precedence_and_case() {
    assert!(matches("TRUE", &[]));
    assert!(!matches("FALSE", &[]));
    assert!(!matches("NULL", &[]));
    assert!(
        matches("a = 1 or a = 2 and a = 3", &[("a", "1")]),
        "AND binds tighter"
    );
    assert!(!matches("(a = 1 or a = 2) and a = 3", &[("a", "1")]));
    // NOT binds tighter than = (RocketMQ's grammar): (NOT a) = 2, never TRUE.
    assert!(!matches("not a = 2", &[("a", "1")]));
    assert!(matches("not (a = 2)", &[("a", "1")]));
    assert!(
        matches("A = 1", &[("A", "1")]),
        "property names keep their case"
    );
    assert!(!matches("a = 1", &[("A", "1")]));
    assert!(matches("a = TRUE", &[("a", "true")]));
    assert!(
        !matches("a", &[("a", "true")]),
        "a property alone is never TRUE"
    );
    assert!(matches("-- comment\n a /* here */ = 1", &[("a", "1")]));
}

#[test]
fn values_that_do_not_convert_never_match() {
    // RocketMQ's evaluation fails for the message as a whole, even inside an OR.
    assert!(!matches("a > 5", &[("a", "abc")]));
    assert!(!matches("a > 5 OR TRUE", &[("a", "abc")]));
    assert!(
        !matches("a = 5", &[("a", "5.0")]),
        "an int literal reads the property as an int"
    );
    assert!(matches("a = 5.0", &[("a", "5")]));
    assert!(
        matches("a > b", &[("a", "10"), ("b", "9.5")]),
        "two strings: as doubles"
    );
    assert!(!matches("a > b", &[("a", "x"), ("b", "1")]));
}

#[test]
fn refusals_name_their_position() {
    for (sql, at) in [
        ("", 0),
        ("a >", 3),
        ("a = = 1", 4),
        ("a > 'x'", 2),
        ("a = NULL", 2),
        ("a BETWEEN 5 AND 1", 2),
        ("a BETWEEN NULL AND 1", 2),
        ("'x' IN ('x')", 4),
        ("a IN (1)", 6),
        ("1", 1),
        ("a > 1 AND 2", 6),
        ("TRUE = 1", 5),
        ("(a > 1) > 2", 8),
        ("a CONTAINS b", 11),
        ("a = 1)", 5),
        ("TagA && TagB", 5),
        ("a = 99999999999999999999", 4),
    ] {
        match Filter::compile(sql) {
            Err(e) => assert_eq!(e.at, at, "{sql}: {e}"),
            Ok(f) => panic!("{sql} compiled: {f:?}"),
        }
    }
    let deep = format!("{}a = 1{}", "(".repeat(65), ")".repeat(65));
    assert!(Filter::compile(&deep).is_err(), "nesting is bounded");
    let nots = format!("{}a = 1", "NOT ".repeat(65));
    assert!(Filter::compile(&nots).is_err());
    assert!(Filter::compile(&"a".repeat(crate::MAX_EXPRESSION_LEN + 1)).is_err());
    let many = vec!["a = 1"; 1001].join(" OR ");
    assert!(Filter::compile(&many).is_err(), "operators are bounded");
    let chain = format!("a{}", " IS NULL".repeat(65));
    assert!(
        Filter::compile(&chain).is_err(),
        "nested comparisons count as depth"
    );
}

#[test]
fn the_longest_accepted_chains_evaluate_and_drop_on_a_small_stack() {
    /// `sql` compiled, evaluated with `a` = `value` and dropped on a 256 KiB stack.
    fn on_small_stack(sql: String, value: &'static str) -> Option<bool> {
        let worker = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                let f = Filter::compile(&sql).expect("compiles");
                let props = encoded(&[("a", value)]);
                let found = f.evaluate(&EncodedProperties(&props)).expect("evaluates");
                drop(f);
                found
            });
        worker.expect("spawn").join().expect("no overflow")
    }
    // 500 alternatives (1000 operators: = and OR), the bound: a chain is one node, not a
    // tree as deep as it is long.
    let sql = (0..500)
        .map(|i| format!("a = {i}"))
        .collect::<Vec<_>>()
        .join(" OR ");
    assert_eq!(on_small_stack(sql, "499"), Some(true));
    // A deep tree accepted: each IS NULL nests the one before, inside 20 parentheses.
    let sql = format!(
        "{}a{}{}",
        "(".repeat(20),
        " IS NULL".repeat(40),
        ")".repeat(20)
    );
    // (a IS NULL) is FALSE, FALSE IS NULL is FALSE, ...
    assert_eq!(on_small_stack(sql, "1"), Some(false));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any text compiles or is refused, and a compiled one evaluates, without panicking.
    #[test]
    fn any_text_is_compiled_or_refused(text in "[ a-c0-9'()=<>.,+*/-]{0,40}|(a|NOT|AND|OR|IN|BETWEEN|IS|NULL|1|'x'|\\(|\\)|=|>| ){0,20}") {
        if let Ok(f) = Filter::compile(&text) {
            let props = encoded(&[("a", "1"), ("b", "x")]);
            let _ = f.evaluate(&EncodedProperties(&props));
        }
    }
}
