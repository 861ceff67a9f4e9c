//! Bounds on what a reader builds from bytes it was sent or read from a file, checked before
//! it builds anything: every JSON header and body passes [`check_json`] (one linear pass, no
//! allocation) before it is parsed, so a parse costs at most a bounded multiple of its input
//! in time and memory, whoever sent it and whether or not the sender is later refused.
//!
//! Why these numbers: RocketMQ's own bodies nest at most ~6 deep (a `ConsumerRunningInfo`);
//! a heartbeat of a client with 10,000 subscriptions has ~100,000 elements; a broker's whole
//! topic table at 100,000 topics has ~1.2 million. A parsed JSON element costs up to ~100
//! bytes, so [`JsonLimits::BODY`] bounds one parse near 26 MB and [`JsonLimits::TABLE`] (only
//! for tables a broker or a name server sends about itself) near 200 MB, whatever the frame
//! holds (a 16 MiB frame of `0,` would otherwise be 8 million elements).

/// Largest accepted value of a frame's length prefix (RocketMQ's 16 MiB).
pub const MAX_FRAME_LEN: usize = 16 * 1024 * 1024;

/// Nesting and size bounds of one JSON document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonLimits {
    /// Deepest nesting of objects and arrays.
    pub max_depth: usize,
    /// Most elements (values, keys counted with their values), counted as separators and
    /// openings: an upper bound of what a parser allocates.
    pub max_elements: usize,
}

impl JsonLimits {
    /// Bodies a client or a peer sends with a request (heartbeats, lock and ack bodies, data
    /// versions, admin bodies).
    pub const BODY: JsonLimits = JsonLimits {
        max_depth: 32,
        max_elements: 1 << 18,
    };
    /// Whole tables a server sends about itself: REGISTER_BROKER's topic table, a slave's
    /// copy of its master's topics, groups and offsets, a client's admin answers.
    pub const TABLE: JsonLimits = JsonLimits {
        max_depth: 32,
        max_elements: 1 << 21,
    };
    /// The JSON header of a frame: a few dozen string fields.
    pub const HEADER: JsonLimits = JsonLimits {
        max_depth: 8,
        max_elements: MAX_EXT_FIELDS * 4,
    };
}

/// Most extFields a header may carry (RocketMQ's largest headers have ~30).
pub const MAX_EXT_FIELDS: usize = 1024;

/// Checks `input` against `limits` in one pass without allocating; the error says which bound
/// was passed. Input that is not JSON is left for the parser to refuse: only nesting and size
/// are decided here (strings are skipped with their escapes, so brackets inside them do not
/// count).
pub fn check_json(input: &[u8], limits: JsonLimits) -> Result<(), String> {
    let mut depth = 0usize;
    let mut elements = 1usize;
    let mut i = 0;
    while i < input.len() {
        match input[i] {
            b'"' => {
                i += 1;
                while i < input.len() {
                    match input[i] {
                        b'\\' => i += 2,
                        b'"' => break,
                        _ => i += 1,
                    }
                }
            }
            b'{' | b'[' => {
                depth += 1;
                elements += 1;
                if depth > limits.max_depth {
                    return Err(format!(
                        "JSON nested deeper than {} levels",
                        limits.max_depth
                    ));
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' => elements += 1,
            _ => {}
        }
        if elements > limits.max_elements {
            return Err(format!(
                "JSON with more than {} elements",
                limits.max_elements
            ));
        }
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: JsonLimits = JsonLimits {
        max_depth: 3,
        max_elements: 10,
    };

    #[test]
    fn depth_and_elements_are_bounded() {
        assert_eq!(check_json(br#"{"a":[1,{"b":2}]}"#, SMALL), Ok(()));
        assert!(check_json(br#"{"a":[[{"b":2}]]}"#, SMALL)
            .unwrap_err()
            .contains("deeper than 3"));
        assert!(check_json(b"[1,2,3,4,5,6,7,8,9,10]", SMALL)
            .unwrap_err()
            .contains("more than 10 elements"));
        // fastjson's object keys nest like any object.
        assert!(check_json(b"{{{{}:1}:1}:1}", SMALL).is_err());
    }

    #[test]
    fn strings_do_not_count() {
        assert_eq!(
            check_json(br#"{"a":"[[[[,,,,,,,,,,,,\"[[[["}"#, SMALL),
            Ok(())
        );
        // An unterminated string or a trailing backslash ends the scan without a panic.
        assert_eq!(check_json(br#"{"a":"\"#, SMALL), Ok(()));
        assert_eq!(check_json(br#"["#, SMALL), Ok(()));
    }

    #[test]
    fn large_inputs_meet_the_bound_that_fits() {
        let deep = vec![b'['; 8 << 20];
        assert!(check_json(&deep, JsonLimits::TABLE).is_err());
        let flat = [b"[".as_slice(), &b"0,".repeat(1 << 20), b"0]"].concat();
        assert!(check_json(&flat, JsonLimits::BODY).is_err());
        assert_eq!(check_json(&flat, JsonLimits::TABLE), Ok(()));
    }
}
