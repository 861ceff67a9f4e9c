//! A sent message's properties read once: checked (every item one `name \x01 value`), turned
//! into the stored string (RocketMQ 4.9 drops `WAIT`, 9 bytes a message; `CLUSTER` added when
//! absent; producer order kept; empty items dropped) and the few values the send path decides
//! by (`WAIT`, `TRAN_MSG`, the tags' hash) taken on the way. One pass instead of one scan per
//! question: in a batch of small messages the scans were a large part of a message's cost.

use rocketpy_protocol::message::java_hash;
use rocketpy_protocol::message::properties::{keys, NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR};

use crate::transaction::half;

/// What the send path needs of one message's properties.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scanned {
    /// The properties to store.
    pub stored: String,
    /// Whether the producer waits for the store (`WAIT` absent or not `false`).
    pub wait: bool,
    /// `TRAN_MSG` marks a transaction's prepared message ([`half::tran_msg_prepared`]).
    pub prepared: bool,
    /// The consume-queue tags code: the Java hash of `TAGS`, 0 without tags.
    pub tags_code: i64,
}

/// Reads `props` as sent, for a broker of cluster `cluster`; an error naming the item that is
/// not one name and one value (a name or value carried a separator).
pub fn scan(props: &str, cluster: &str) -> Result<Scanned, String> {
    const SEP: u8 = PROPERTY_SEPARATOR as u8;
    const NV: u8 = NAME_VALUE_SEPARATOR as u8;
    let bytes = props.as_bytes();
    let mut stored = String::with_capacity(props.len() + keys::CLUSTER.len() + cluster.len() + 2);
    let (mut wait, mut prepared, mut has_cluster, mut tags_code) = (true, false, false, 0);
    // Items are copied in runs: `run` is where the current run of kept items starts.
    let mut run = 0usize;
    let mut pos = 0usize;
    while pos < bytes.len() {
        let end = memchr::memchr(SEP, &bytes[pos..]).map_or(bytes.len(), |i| pos + i);
        let item = &props[pos..end];
        if item.is_empty() {
            stored.push_str(&props[run..pos]);
            run = end + 1;
            pos = end + 1;
            continue;
        }
        let split = memchr::memchr(NV, item.as_bytes());
        let (name, value) = match split {
            Some(i) if i > 0 && memchr::memchr(NV, &item.as_bytes()[i + 1..]).is_none() => {
                (&item[..i], &item[i + 1..])
            }
            _ => {
                return Err(format!(
                    "the property {item:?} is not one name and value: a name or value contains a separator (\\x01 or \\x02)"
                ))
            }
        };
        match name {
            keys::WAIT_STORE_MSG_OK => {
                wait = value != "false";
                stored.push_str(&props[run..pos]);
                run = end + 1;
            }
            keys::CLUSTER => has_cluster = true,
            keys::TAGS => tags_code = java_hash::tags_code(Some(value)),
            keys::TRANSACTION_PREPARED => prepared = half::tran_msg_prepared(value),
            _ => {}
        }
        pos = end + 1;
    }
    if run < bytes.len() {
        stored.push_str(&props[run..]);
        if bytes.last() != Some(&SEP) {
            stored.push(PROPERTY_SEPARATOR);
        }
    }
    if !has_cluster {
        stored.push_str(keys::CLUSTER);
        stored.push(NAME_VALUE_SEPARATOR);
        stored.push_str(cluster);
        stored.push(PROPERTY_SEPARATOR);
    }
    Ok(Scanned {
        stored,
        wait,
        prepared,
        tags_code,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocketpy_protocol::message::properties::{self, encode};

    #[test]
    fn wait_is_dropped_cluster_added_order_kept() {
        let p = encode([("TAGS", "A"), ("WAIT", "true"), ("KEYS", "k")]);
        let s = scan(&p, "C").unwrap();
        assert_eq!(
            s.stored,
            encode([("TAGS", "A"), ("KEYS", "k"), ("CLUSTER", "C")])
        );
        assert!(s.wait && !s.prepared);
        assert_eq!(s.tags_code, java_hash::tags_code(Some("A")));
        let with = encode([("CLUSTER", "X")]);
        assert_eq!(scan(&with, "C").unwrap().stored, with);
    }

    #[test]
    fn the_answers_the_send_path_needs() {
        let s = scan(&encode([("WAIT", "false"), ("TRAN_MSG", "TRUE")]), "C").unwrap();
        assert!(!s.wait && s.prepared && s.tags_code == 0);
        assert_eq!(s.stored, encode([("TRAN_MSG", "TRUE"), ("CLUSTER", "C")]));
        assert!(
            scan("", "C").unwrap().wait,
            "no WAIT: wait, as Java's default"
        );
    }

    #[test]
    fn loose_input_is_stored_in_the_canonical_form() {
        // No trailing separator, empty items, WAIT last: what the split-and-join gave.
        let loose = "A\u{1}1\u{2}\u{2}B\u{1}2\u{2}WAIT\u{1}true";
        assert_eq!(
            scan(loose, "C").unwrap().stored,
            encode([("A", "1"), ("B", "2"), ("CLUSTER", "C")])
        );
        assert_eq!(
            scan("A\u{1}1", "C").unwrap().stored,
            encode([("A", "1"), ("CLUSTER", "C")])
        );
    }

    #[test]
    fn items_that_are_not_one_name_and_value_are_refused() {
        for bad in ["A\u{1}1\u{1}2\u{2}", "novalue\u{2}", "\u{1}v\u{2}"] {
            assert!(scan(bad, "C").is_err(), "{bad:?}");
            assert!(
                properties::check_wire(bad).is_err(),
                "the same rule: {bad:?}"
            );
        }
    }
}
