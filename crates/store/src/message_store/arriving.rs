//! Telling the arriving listener (long-polling pulls, pops) about appended messages.

use rocketpy_protocol::message::record::MessageToStore;

use super::MessageArrivingListener;
use crate::commit_log::AppendResult;

/// Calls `listener` once per run of messages to the same queue with the same tags code (a
/// batch is one run), with the run's last offset: a pull waiting for any message of the run
/// waits for the last one too. Per message, a batch of thousands woke the waiters of one queue
/// thousands of times.
pub(super) fn notify(
    listener: &dyn MessageArrivingListener,
    msgs: &[MessageToStore],
    results: &[AppendResult],
) {
    let mut pending: Option<(&MessageToStore, i64)> = None;
    for (msg, r) in msgs.iter().zip(results) {
        if let Some((prev, next)) = pending {
            let same = prev.queue_id == msg.queue_id
                && prev.tags_code == msg.tags_code
                && prev.topic == msg.topic;
            if !same {
                listener.arriving(&prev.topic, prev.queue_id, next, prev.tags_code);
            }
        }
        pending = Some((msg, r.logics_offset + 1));
    }
    if let Some((last, next)) = pending {
        listener.arriving(&last.topic, last.queue_id, next, last.tags_code);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use parking_lot::Mutex;

    #[derive(Default)]
    struct Calls(Mutex<Vec<(String, i32, i64, i64)>>);

    impl MessageArrivingListener for Calls {
        fn arriving(&self, topic: &str, queue_id: i32, next_offset: i64, tags_code: i64) {
            self.0
                .lock()
                .push((topic.to_owned(), queue_id, next_offset, tags_code));
        }
    }

    fn put(
        topic: &str,
        queue_id: i32,
        tags_code: i64,
        offset: i64,
    ) -> (MessageToStore, AppendResult) {
        let host = "127.0.0.1:10911".parse().unwrap();
        let msg = MessageToStore {
            topic: topic.into(),
            queue_id,
            flag: 0,
            body: Bytes::from_static(b"x"),
            properties: String::new(),
            tags_code,
            sys_flag: 0,
            born_timestamp: 0,
            born_host: host,
            store_host: host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
        };
        let r = AppendResult {
            wrote_offset: 0,
            wrote_bytes: 0,
            store_host: host,
            store_timestamp: 0,
            logics_offset: offset,
        };
        (msg, r)
    }

    #[test]
    fn one_call_per_run_with_its_last_offset() {
        let (msgs, results): (Vec<_>, Vec<_>) = [
            put("A", 0, 1, 10),
            put("A", 0, 1, 11),
            put("A", 0, 1, 12),
            put("A", 1, 1, 5),
            put("A", 1, 2, 6),
            put("B", 1, 2, 0),
        ]
        .into_iter()
        .unzip();
        let calls = Calls::default();
        notify(&calls, &msgs, &results);
        let want = [
            ("A", 0, 13, 1),
            ("A", 1, 6, 1),
            ("A", 1, 7, 2),
            ("B", 1, 1, 2),
        ];
        let got = calls.0.lock().clone();
        assert_eq!(
            got,
            want.map(|(t, q, n, c)| (t.to_owned(), q, n, c)).to_vec()
        );
        let none = Calls::default();
        notify(&none, &[], &[]);
        assert!(none.0.lock().is_empty());
    }
}
