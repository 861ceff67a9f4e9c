//! Java's `String.hashCode()`, which RocketMQ uses for tags codes and index keys.

/// `s.hashCode()` as Java computes it: over UTF-16 code units, wrapping 32-bit arithmetic.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, unit| h.wrapping_mul(31).wrapping_add(unit as i32))
}

/// Java's hash of the concatenation of `parts`, without building it (index keys are
/// `topic#key`, hashed on every indexed message).
pub fn java_string_hash_concat(parts: &[&str]) -> i32 {
    let mut h = 0i32;
    for part in parts {
        if part.is_ascii() {
            h = ascii_hash_from(h, part.as_bytes());
        } else {
            for unit in part.encode_utf16() {
                h = h.wrapping_mul(31).wrapping_add(unit as i32);
            }
        }
    }
    h
}

/// Continues Java's hash `h` over ASCII bytes, four at a time: `h*31^4 + b0*31^3 + b1*31^2 +
/// b2*31 + b3` is the same sum as four steps (wrapping arithmetic is a ring), without each
/// byte waiting for the previous multiply (index keys are hashed on the index thread for
/// every stored message).
fn ascii_hash_from(mut h: i32, bytes: &[u8]) -> i32 {
    const P2: i32 = 31 * 31;
    const P3: i32 = 31 * 31 * 31;
    const P4: i32 = 31 * 31 * 31 * 31;
    let mut quads = bytes.chunks_exact(4);
    for q in quads.by_ref() {
        let tail = (q[0] as i32)
            .wrapping_mul(P3)
            .wrapping_add((q[1] as i32).wrapping_mul(P2))
            .wrapping_add((q[2] as i32).wrapping_mul(31))
            .wrapping_add(q[3] as i32);
        h = h.wrapping_mul(P4).wrapping_add(tail);
    }
    for &b in quads.remainder() {
        h = h.wrapping_mul(31).wrapping_add(b as i32);
    }
    h
}

/// The tags code stored in a consume-queue unit for a message with these tags.
pub fn tags_code(tags: Option<&str>) -> i64 {
    match tags {
        Some(t) if !t.is_empty() => java_string_hash(t) as i64,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_java() {
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("TagA"), 2598919);
        assert_eq!(java_string_hash("hello"), 99162322);
        // Overflow: a well-known string whose Java hash is Integer.MIN_VALUE.
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        // Non-BMP input: a surrogate pair counts as two units.
        assert_eq!(java_string_hash("\u{1F600}"), 0xD83D * 31 + 0xDE00);
        for (a, b) in [("Topic", "key-1"), ("T", "é\u{1F600}"), ("", "")] {
            assert_eq!(
                java_string_hash_concat(&[a, "#", b]),
                java_string_hash(&format!("{a}#{b}"))
            );
        }
        // The four-at-a-time ASCII path against the one-unit-at-a-time fold, every remainder.
        let long = "BenchTopic#0123456789ABCDEF0123456789ABCDEF~";
        for end in 0..=long.len() {
            let (a, b) = long.split_at(end / 2);
            let b = &b[..end - end / 2];
            assert_eq!(
                java_string_hash_concat(&[a, b]),
                java_string_hash(&long[..end])
            );
        }
    }
}
