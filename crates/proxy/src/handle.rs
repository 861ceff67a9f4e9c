//! Receipt handles (RocketMQ proxy's `ReceiptHandle`): what a 5.x client gets with each
//! received message and gives back to ack it. It is the broker's POP_CK text with the
//! message's CommitLog offset appended, nine fields separated by spaces:
//! `startOffset popTime invisibleTime reviveQid topicType brokerName queueId queueOffset
//! commitLogOffset`. Clients treat it as opaque; the proxy needs no state to use it.

use rocketpy_protocol::topic::pop_real_topic;

/// A parsed receipt handle, borrowing the text it was parsed from (an acked message costs
/// no allocation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptHandle<'a> {
    /// The POP_CK text (the first eight fields).
    extra: &'a str,
    /// "0" the topic itself, "1"/"2" its pop retry topic.
    topic_type: &'a str,
    /// The broker holding the message.
    broker_name: &'a str,
    /// First offset of the checkpoint.
    pub start_offset: i64,
    /// When the message was popped (ms).
    pub pop_time: i64,
    /// Invisible time (ms).
    pub invisible_time: i64,
    /// Revive queue (999: FIFO).
    pub revive_qid: i32,
    /// Its queue.
    pub queue_id: i32,
    /// Its queue offset.
    pub queue_offset: i64,
    /// Its CommitLog offset.
    pub commit_log_offset: i64,
}

impl<'a> ReceiptHandle<'a> {
    /// Parses a handle; None when it is not one. (Called for every acked message: one
    /// pass over the bytes finds the nine fields; nothing is copied.)
    pub fn parse(text: &'a str) -> Option<ReceiptHandle<'a>> {
        // Where each field ends; the ninth ends the text.
        let mut ends = [text.len(); 9];
        let mut n = 0;
        for (i, b) in text.bytes().enumerate() {
            if b == b' ' {
                *ends.get_mut(n)? = i;
                n += 1;
            }
        }
        if n != 8 {
            return None;
        }
        let field = |k: usize| {
            let start = if k == 0 { 0 } else { ends[k - 1] + 1 };
            &text[start..ends[k]]
        };
        let int = |k: usize| field(k).parse::<i64>().ok();
        let small = |k: usize| field(k).parse::<i32>().ok();
        Some(ReceiptHandle {
            start_offset: int(0)?,
            pop_time: int(1)?,
            invisible_time: int(2)?,
            revive_qid: small(3)?,
            topic_type: field(4),
            broker_name: field(5),
            queue_id: small(6)?,
            queue_offset: int(7)?,
            commit_log_offset: int(8)?,
            extra: &text[..ends[7]],
        })
    }

    /// The POP_CK text (the first eight fields).
    pub fn extra_info(&self) -> &'a str {
        self.extra
    }

    /// "0" the topic itself, "1"/"2" its pop retry topic.
    pub fn topic_type(&self) -> &'a str {
        self.topic_type
    }

    /// The broker holding the message.
    pub fn broker_name(&self) -> &'a str {
        self.broker_name
    }

    /// The handle of a message with POP_CK `extra_info` at `commit_log_offset`.
    pub fn text(extra_info: &str, commit_log_offset: i64) -> String {
        let mut out = String::with_capacity(extra_info.len() + 21);
        out.push_str(extra_info);
        push_field(&mut out, commit_log_offset);
        out
    }

    /// Whether its invisible time is over (the broker may have delivered it again).
    pub fn expired(&self, now: i64) -> bool {
        self.pop_time + self.invisible_time <= now
    }

    /// The topic the broker knows the message under: `topic` itself, or `group`'s pop retry
    /// topic of it.
    pub fn real_topic(&self, topic: &str, group: &str) -> String {
        pop_real_topic(topic, group, self.topic_type()).unwrap_or_else(|| topic.to_owned())
    }

    /// The handle after an invisible-time change answered with `pop_time` and
    /// `invisible_time`: the message heads a checkpoint of its own.
    pub fn changed(&self, pop_time: i64, invisible_time: i64) -> String {
        let start_offset = if self.revive_qid == 999 {
            self.start_offset
        } else {
            self.queue_offset
        };
        Fields {
            start_offset,
            pop_time,
            invisible_time,
            revive_qid: self.revive_qid,
            topic_type: self.topic_type(),
            broker_name: self.broker_name(),
            queue_id: self.queue_id,
            queue_offset: self.queue_offset,
            commit_log_offset: self.commit_log_offset,
        }
        .text()
    }
}

/// A handle's nine fields, borrowed, to write one: the one place that knows their order.
#[derive(Debug, Clone, Copy)]
pub struct Fields<'a> {
    /// First offset of the checkpoint.
    pub start_offset: i64,
    /// When the message was popped (ms).
    pub pop_time: i64,
    /// Invisible time (ms).
    pub invisible_time: i64,
    /// Revive queue (999: FIFO).
    pub revive_qid: i32,
    /// "0" the topic itself, "1"/"2" its pop retry topic.
    pub topic_type: &'a str,
    /// The broker holding the message.
    pub broker_name: &'a str,
    /// Its queue.
    pub queue_id: i32,
    /// Its queue offset.
    pub queue_offset: i64,
    /// Its CommitLog offset.
    pub commit_log_offset: i64,
}

impl Fields<'_> {
    /// The handle's text, as [`ReceiptHandle::parse`] reads it; the integers are written
    /// without `fmt` (this runs for every received message).
    pub fn text(&self) -> String {
        let mut out = String::with_capacity(96 + self.broker_name.len());
        self.write(&mut out);
        out
    }

    /// Appends [`Fields::text`] to `out` (a receive writes its handles into one buffer).
    pub fn write(&self, out: &mut String) {
        out.push_str(itoa::Buffer::new().format(self.start_offset));
        push_field(out, self.pop_time);
        push_field(out, self.invisible_time);
        push_field(out, self.revive_qid);
        out.push(' ');
        out.push_str(self.topic_type);
        out.push(' ');
        out.push_str(self.broker_name);
        push_field(out, self.queue_id);
        push_field(out, self.queue_offset);
        push_field(out, self.commit_log_offset);
    }
}

/// Appends a space and `n`.
fn push_field(out: &mut String, n: impl itoa::Integer) {
    out.push(' ');
    out.push_str(itoa::Buffer::new().format(n));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_round_trip_and_name_their_topic() {
        let text = ReceiptHandle::text("3 1000 60000 2 1 broker-a 0 5", 4096);
        let h = ReceiptHandle::parse(&text).unwrap();
        assert_eq!(h.extra_info(), "3 1000 60000 2 1 broker-a 0 5");
        assert_eq!((h.topic_type(), h.broker_name()), ("1", "broker-a"));
        assert_eq!((h.queue_offset, h.commit_log_offset), (5, 4096));
        assert_eq!(h.real_topic("T", "g"), "%RETRY%g_T");
        assert!(h.expired(61000) && !h.expired(60999));
        assert_eq!(h.changed(2000, 30000), "5 2000 30000 2 1 broker-a 0 5 4096");
        assert!(ReceiptHandle::parse("1 2 3").is_none());
        assert!(ReceiptHandle::parse("a 1000 60000 2 1 broker-a 0 5 9").is_none());
        assert!(ReceiptHandle::parse("3 1000 60000 2 1 broker-a 0 5 9 9").is_none());
        assert!(ReceiptHandle::parse("3 1000 60000 2 1 broker-a 0 9").is_none());
        assert!(ReceiptHandle::parse("").is_none());
    }

    #[test]
    fn fields_write_the_checkpoint_text_and_offset() {
        let text = Fields {
            start_offset: -3,
            pop_time: 1000,
            invisible_time: 60000,
            revive_qid: 2,
            topic_type: "0",
            broker_name: "broker-a",
            queue_id: 0,
            queue_offset: 5,
            commit_log_offset: 4096,
        }
        .text();
        assert_eq!(
            text,
            ReceiptHandle::text("-3 1000 60000 2 0 broker-a 0 5", 4096)
        );
        let h = ReceiptHandle::parse(&text).unwrap();
        assert_eq!((h.start_offset, h.revive_qid, h.topic_type()), (-3, 2, "0"));
        assert_eq!(
            (h.queue_id, h.queue_offset, h.commit_log_offset),
            (0, 5, 4096)
        );
    }
}
