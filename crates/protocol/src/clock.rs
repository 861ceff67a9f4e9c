//! One definition of "now": wall-clock milliseconds since the epoch, as RocketMQ stamps
//! messages, offsets and checkpoints. Every crate reads the time through here.

/// Milliseconds since the Unix epoch (0 if the system clock is before it).
pub fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

#[cfg(test)]
mod tests {
    #[test]
    fn now_is_after_2020() {
        assert!(super::now_millis() > 1_577_836_800_000);
    }
}
