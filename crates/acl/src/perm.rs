//! Rights (RocketMQ's `Permission`): bits an account holds on a topic or group, and the
//! one a request needs.

/// Nothing: refused even when another right would do.
pub const DENY: u8 = 1;
/// Any right: a request needing ANY passes with PUB or SUB (RocketMQ's ANY).
pub const ANY: u8 = 2;
/// Publish: send to a topic.
pub const PUB: u8 = 4;
/// Subscribe: read a topic, consume as a group.
pub const SUB: u8 = 8;

/// A right as written in `plain_acl.yml`: `PUB`, `SUB`, `PUB|SUB` (or `SUB|PUB`), `DENY`;
/// `None` for anything else (which RocketMQ reads as DENY).
pub fn parse(text: &str) -> Option<u8> {
    match text.trim() {
        "PUB" => Some(PUB),
        "SUB" => Some(SUB),
        "PUB|SUB" | "SUB|PUB" => Some(PUB | SUB),
        "DENY" => Some(DENY),
        _ => None,
    }
}

/// The name of a needed right, for refusals.
pub fn name(perm: u8) -> &'static str {
    match perm {
        PUB => "PUB",
        SUB => "SUB",
        ANY => "PUB or SUB",
        _ => "PUB|SUB",
    }
}

/// Whether `owned` grants `needed` (a DENY bit refuses everything).
pub fn grants(owned: u8, needed: u8) -> bool {
    let needed = if needed == ANY { PUB | SUB } else { needed };
    owned & DENY == 0 && owned & needed != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rights_parse_and_grant_as_rocketmq_reads_them() {
        assert_eq!(parse(" PUB|SUB "), Some(PUB | SUB));
        assert_eq!(parse("SUB|PUB"), Some(PUB | SUB));
        assert_eq!(parse("pub"), None, "case matters");
        assert!(grants(PUB | SUB, SUB) && grants(PUB, PUB) && !grants(PUB, SUB));
        assert!(!grants(DENY, PUB) && !grants(DENY | PUB, PUB));
        assert!(grants(PUB, ANY) && grants(SUB, ANY) && !grants(DENY, ANY) && !grants(ANY, PUB));
    }
}
