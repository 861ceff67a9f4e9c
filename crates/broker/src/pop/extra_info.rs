//! The texts that identify a popped message (RocketMQ 5.x's `ExtraInfoUtil` formats), kept
//! exactly: proxies and clients parse them.
//!
//! - `extraInfo` / POP_CK: `startOffset popTime invisibleTime reviveQid retryFlag brokerName
//!   queueId queueOffset`, separated by single spaces. `startOffset` is the first offset of
//!   the pop's checkpoint (the message's own offset after an invisible-time change).
//! - `startOffsetInfo`: `retryFlag queueId startOffset` per queue read, joined by `;`.
//! - `msgOffsetInfo`: `retryFlag queueId offset,offset,...` per queue read, joined by `;`.
//! - `orderCountInfo` (FIFO pops): `retryFlag qo<queueId>%<offset> count` per message
//!   delivered before, then `retryFlag queueId minCount` per queue.

use rocketpy_protocol::topic::RETRY_GROUP_TOPIC_PREFIX;

/// The revive queue id of FIFO pops: their messages are never revived, only read again.
pub const ORDER_REVIVE_QID: i32 = 999;

/// A topic's retry flag: "2" for a `%RETRY%group+topic` (v2) name, "1" for another
/// `%RETRY%` name, "0" for a normal topic.
pub fn retry_flag(topic: &str) -> &'static str {
    match topic.strip_prefix(RETRY_GROUP_TOPIC_PREFIX) {
        Some(rest) if rest.contains('+') => "2",
        Some(_) => "1",
        None => "0",
    }
}

/// A popped message's checkpoint text (POP_CK).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraInfo {
    /// First offset of the checkpoint the message belongs to.
    pub start_offset: i64,
    /// When it was popped (ms).
    pub pop_time: i64,
    /// Invisible time of that pop (ms).
    pub invisible_time: i64,
    /// Revive queue of its checkpoint (999 for FIFO).
    pub revive_qid: i32,
    /// "0" normal topic, "1"/"2" a pop retry topic.
    pub retry_flag: String,
    /// The broker that popped it.
    pub broker_name: String,
    /// Its queue.
    pub queue_id: i32,
    /// Its queue offset (absent in the 7-field form of old brokers).
    pub queue_offset: Option<i64>,
}

impl ExtraInfo {
    /// Parses the 7- or 8-field form; more fields (a proxy's receipt handle appends the
    /// CommitLog offset) are ignored.
    pub fn parse(text: &str) -> Option<ExtraInfo> {
        let f: Vec<&str> = text.split(' ').collect();
        if f.len() < 7 {
            return None;
        }
        Some(ExtraInfo {
            start_offset: f[0].parse().ok()?,
            pop_time: f[1].parse().ok()?,
            invisible_time: f[2].parse().ok()?,
            revive_qid: f[3].parse().ok()?,
            retry_flag: f[4].to_owned(),
            broker_name: f[5].to_owned(),
            queue_id: f[6].parse().ok()?,
            queue_offset: match f.get(7) {
                Some(o) => Some(o.parse().ok()?),
                None => None,
            },
        })
    }

    /// Whether it came from a FIFO pop.
    pub fn is_order(&self) -> bool {
        self.revive_qid == ORDER_REVIVE_QID
    }

    /// When the message becomes visible again (ms).
    pub fn revive_time(&self) -> i64 {
        self.pop_time.saturating_add(self.invisible_time)
    }
}

impl std::fmt::Display for ExtraInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} {} {} {} {} {}",
            self.start_offset,
            self.pop_time,
            self.invisible_time,
            self.revive_qid,
            self.retry_flag,
            self.broker_name,
            self.queue_id
        )?;
        if let Some(o) = self.queue_offset {
            write!(f, " {o}")?;
        }
        Ok(())
    }
}

/// Appends one `;`-joined entry to an info text.
pub fn push_entry(info: &mut String, entry: &str) {
    if !info.is_empty() {
        info.push(';');
    }
    info.push_str(entry);
}

/// A `startOffsetInfo` entry.
pub fn start_offset_entry(topic: &str, queue_id: i32, start: i64) -> String {
    format!("{} {queue_id} {start}", retry_flag(topic))
}

/// A `msgOffsetInfo` entry.
pub fn msg_offset_entry(topic: &str, queue_id: i32, offsets: &[i64]) -> String {
    // Every pop writes one, with an offset per message: one string, integers by itoa (no
    // `fmt` machinery per offset).
    let mut out = String::with_capacity(16 + offsets.len() * 8);
    out.push_str(retry_flag(topic));
    out.push(' ');
    out.push_str(itoa::Buffer::new().format(queue_id));
    out.push(' ');
    push_offsets(&mut out, offsets, ",");
    out
}

/// Appends `offsets` separated by `separator`, each written by itoa.
pub(crate) fn push_offsets(out: &mut String, offsets: &[i64], separator: &str) {
    let mut digits = itoa::Buffer::new();
    for (i, o) in offsets.iter().enumerate() {
        if i > 0 {
            out.push_str(separator);
        }
        out.push_str(digits.format(*o));
    }
}

/// Parses `startOffsetInfo` or `msgOffsetInfo` into `(retryFlag, queueId, value)`.
pub fn parse_entries(info: &str) -> Vec<(String, i32, String)> {
    info.split(';')
        .filter_map(|e| {
            let p: Vec<&str> = e.split(' ').collect();
            (p.len() == 3).then(|| Some((p[0].to_owned(), p[1].parse().ok()?, p[2].to_owned())))?
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_info_round_trips_in_both_forms() {
        let text = "10 1700000000000 60000 3 0 broker-a 2 12";
        let e = ExtraInfo::parse(text).unwrap();
        assert_eq!(
            (e.start_offset, e.queue_offset, e.revive_qid, e.queue_id),
            (10, Some(12), 3, 2)
        );
        assert_eq!(e.to_string(), text);
        assert_eq!(e.revive_time(), 1_700_000_060_000);
        let old = ExtraInfo::parse("10 1 2 999 1 b 0").unwrap();
        assert!(old.is_order() && old.queue_offset.is_none());
        let proxy = ExtraInfo::parse(&format!("{text} 4096")).unwrap();
        assert_eq!(proxy, e, "a proxy handle's commit log offset is ignored");
        assert!(ExtraInfo::parse("1 2 3").is_none());
        assert!(ExtraInfo::parse("x 1 2 3 0 b 0").is_none());
    }

    #[test]
    fn retry_flags_and_offset_infos() {
        assert_eq!(retry_flag("T"), "0");
        assert_eq!(retry_flag("%RETRY%g_T"), "1");
        assert_eq!(retry_flag("%RETRY%g+T"), "2");
        let mut info = String::new();
        push_entry(&mut info, &start_offset_entry("T", 1, 5));
        push_entry(&mut info, &start_offset_entry("%RETRY%g_T", 0, 7));
        assert_eq!(info, "0 1 5;1 0 7");
        assert_eq!(msg_offset_entry("T", 3, &[5, 6, 9]), "0 3 5,6,9");
        assert_eq!(
            parse_entries("0 1 5;1 0 7;bad"),
            vec![("0".into(), 1, "5".into()), ("1".into(), 0, "7".into())]
        );
    }
}
