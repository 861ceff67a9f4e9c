//! Transactional messages on the wire, as a 4.x producer drives them: prepared sends stay
//! invisible, END_TRANSACTION commits once or rolls back, repeated outcomes change nothing,
//! bad outcomes are refused with RocketMQ's remarks, and the broker's check asks a producer
//! of the group, applies its answer, and gives up on groups that never answer.

use std::time::{Duration, Instant};

use crate::wire::{records, Frame, Wire};
use crate::Servers;

const SEND_MESSAGE: i32 = 10;
const SEND_BATCH_MESSAGE: i32 = 320;
const PULL_MESSAGE: i32 = 11;
const HEART_BEAT: i32 = 34;
const END_TRANSACTION: i32 = 37;
const CHECK_TRANSACTION_STATE: i32 = 39;
const SUCCESS: i32 = 0;
const SYSTEM_ERROR: i32 = 1;
const MESSAGE_ILLEGAL: i32 = 13;
const NO_PERMISSION: i32 = 16;
const COMMIT: &str = "8";
const ROLLBACK: &str = "12";
const UNKNOWN: &str = "0";

fn props(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}\u{1}{v}\u{2}"))
        .collect()
}

/// A half message as sent: (queue offset, commit log offset, UNIQ_KEY).
struct Half {
    queue_offset: String,
    commit_log_offset: String,
    uniq: String,
}

fn send(w: &mut Wire, code: i32, topic: &str, group: &str, uniq: &str, body: &[u8]) -> Frame {
    send_with(w, code, topic, group, uniq, body, &[])
}

fn send_with(
    w: &mut Wire,
    code: i32,
    topic: &str,
    group: &str,
    uniq: &str,
    body: &[u8],
    extra: &[(&str, &str)],
) -> Frame {
    let mut pairs = vec![
        ("TRAN_MSG", "true"),
        ("PGROUP", group),
        ("UNIQ_KEY", uniq),
        ("WAIT", "true"),
    ];
    pairs.extend_from_slice(extra);
    let props = props(&pairs);
    w.call(
        code,
        &[
            ("producerGroup", group),
            ("topic", topic),
            ("defaultTopic", "TBW102"),
            ("defaultTopicQueueNums", "4"),
            ("queueId", "1"),
            ("sysFlag", "4"), // TRANSACTION_PREPARED_TYPE, as Java producers set it
            ("bornTimestamp", "1700000000001"),
            ("flag", "0"),
            ("properties", &props),
            ("reconsumeTimes", "0"),
            ("unitMode", "false"),
        ],
        body,
    )
}

fn prepare(w: &mut Wire, topic: &str, group: &str, uniq: &str, body: &[u8]) -> Half {
    let resp = send(w, SEND_MESSAGE, topic, group, uniq, body);
    assert_eq!(resp.code, SUCCESS, "{:?}", resp.remark);
    assert_eq!(
        resp.field("queueId"),
        "1",
        "the real queue, as RocketMQ answers"
    );
    // The offset message id ends with the 8-byte CommitLog offset.
    let id = resp.field("msgId");
    let commit_log_offset = i64::from_str_radix(&id[id.len() - 16..], 16).unwrap();
    Half {
        queue_offset: resp.field("queueOffset").to_owned(),
        commit_log_offset: commit_log_offset.to_string(),
        uniq: uniq.to_owned(),
    }
}

fn end(w: &mut Wire, group: &str, half: &Half, outcome: &str, from_check: bool) -> Frame {
    w.call(
        END_TRANSACTION,
        &[
            ("producerGroup", group),
            ("tranStateTableOffset", &half.queue_offset),
            ("commitLogOffset", &half.commit_log_offset),
            ("commitOrRollback", outcome),
            (
                "fromTransactionCheck",
                if from_check { "true" } else { "false" },
            ),
            ("msgId", &half.uniq),
            ("transactionId", &half.uniq),
        ],
        b"",
    )
}

fn pull(w: &mut Wire, topic: &str, queue: &str) -> Vec<crate::wire::Record> {
    let got = w.call(
        PULL_MESSAGE,
        &[
            ("consumerGroup", "tx-reader"),
            ("topic", topic),
            ("queueId", queue),
            ("queueOffset", "0"),
            ("maxMsgNums", "32"),
            ("sysFlag", "4"),
            ("commitOffset", "0"),
            ("suspendTimeoutMillis", "0"),
            ("subscription", "*"),
            ("subVersion", "0"),
            ("expressionType", "TAG"),
        ],
        b"",
    );
    if got.code == SUCCESS {
        records(&got.body)
    } else {
        Vec::new()
    }
}

#[test]
fn half_messages_stay_invisible_and_are_committed_once() {
    let servers = Servers::start();
    let mut w = Wire::connect(servers.broker_addr());
    let one = prepare(&mut w, "TxTopic", "txg", "UNIQ-1", b"one");
    let two = prepare(&mut w, "TxTopic", "txg", "UNIQ-2", b"two");
    let three = prepare(&mut w, "TxTopic", "txg", "UNIQ-3", b"three");
    assert!(
        pull(&mut w, "TxTopic", "1").is_empty(),
        "halves are invisible"
    );

    assert_eq!(end(&mut w, "txg", &one, COMMIT, false).code, SUCCESS);
    assert_eq!(end(&mut w, "txg", &two, ROLLBACK, false).code, SUCCESS);
    assert_eq!(end(&mut w, "txg", &three, UNKNOWN, false).code, SUCCESS);
    // Repeated and contradicting outcomes after the first change nothing.
    assert_eq!(end(&mut w, "txg", &one, COMMIT, false).code, SUCCESS);
    assert_eq!(end(&mut w, "txg", &one, ROLLBACK, true).code, SUCCESS);
    assert_eq!(end(&mut w, "txg", &two, COMMIT, true).code, SUCCESS);

    let got = pull(&mut w, "TxTopic", "1");
    assert_eq!(got.len(), 1, "one commit, once");
    let msg = &got[0];
    assert_eq!(msg.body, b"one");
    assert_eq!(msg.topic, "TxTopic");
    assert_eq!(msg.sys_flag & 0xC, 8, "TRANSACTION_COMMIT_TYPE");
    assert_eq!(
        msg.prepared_transaction_offset.to_string(),
        one.commit_log_offset
    );
    assert!(
        msg.physical_offset > msg.prepared_transaction_offset,
        "a new record"
    );
    assert!(msg.properties.contains("UNIQ_KEY\u{1}UNIQ-1\u{2}"));
    assert!(msg.properties.contains("PGROUP\u{1}txg\u{2}"));
    for gone in ["TRAN_MSG", "REAL_TOPIC", "REAL_QID"] {
        assert!(
            !msg.properties.contains(gone),
            "{gone} in {:?}",
            msg.properties
        );
    }

    // RocketMQ's refusals, with its remarks.
    let refused = |f: Frame, remark: &str| {
        assert_eq!(f.code, SYSTEM_ERROR);
        let got = f.remark.unwrap_or_default();
        assert!(got.contains(remark), "{got:?} lacks {remark:?}");
    };
    refused(
        end(&mut w, "other", &three, COMMIT, false),
        "The producer group wrong",
    );
    let wrong_offset = Half {
        queue_offset: "99".into(),
        ..three
    };
    refused(
        end(&mut w, "txg", &wrong_offset, COMMIT, false),
        "The transaction state table offset wrong",
    );
    let nowhere = Half {
        commit_log_offset: "987654321".into(),
        ..wrong_offset
    };
    refused(
        end(&mut w, "txg", &nowhere, COMMIT, false),
        "Find prepared transaction message failed",
    );
    refused(end(&mut w, "txg", &one, "5", false), "commitOrRollback 5");
    assert_eq!(pull(&mut w, "TxTopic", "1").len(), 1);

    // Clients may not write the transaction topics, nor batch prepared messages.
    let direct = send(
        &mut w,
        SEND_MESSAGE,
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "txg",
        "U",
        b"x",
    );
    assert_eq!(direct.code, NO_PERMISSION);
    let batch = send(&mut w, SEND_BATCH_MESSAGE, "TxTopic", "txg", "U", b"");
    assert_eq!(batch.code, MESSAGE_ILLEGAL, "{:?}", batch.remark);
}

fn transaction_servers() -> Servers {
    Servers::start_with(|namesrv| {
        vec![
            ("namesrvAddr", namesrv.to_string()),
            ("transactionCheckInterval", "200".into()),
            ("transactionTimeOut", "400".into()),
            ("transactionCheckMax", "2".into()),
        ]
    })
}

/// Joins `group` as a producer (HEART_BEAT with a producer data set) on `w`'s connection.
fn join(w: &mut Wire, group: &str) {
    let body = format!(
        r#"{{"clientID":"127.0.0.1@tx","consumerDataSet":[],"producerDataSet":[{{"groupName":"{group}"}}]}}"#
    );
    assert_eq!(w.call(HEART_BEAT, &[], body.as_bytes()).code, SUCCESS);
}

#[test]
fn the_check_asks_a_producer_and_applies_its_answer() {
    let servers = transaction_servers();
    let mut producer = Wire::connect(servers.broker_addr());
    join(&mut producer, "checked");
    let half = prepare(
        &mut producer,
        "TxChecked",
        "checked",
        "UNIQ-C",
        b"checked body",
    );
    let _ = end(&mut producer, "checked", &half, UNKNOWN, false);
    // Past transactionTimeOut on the broker's clock (the store stamped the half on the
    // system's, which the manual clock trails by the test's run time so far).
    servers.clock.advance(2_000);

    let check = loop {
        let f = producer.read_frame();
        if f.code == CHECK_TRANSACTION_STATE && f.flag & 1 == 0 {
            break f;
        }
    };
    assert_eq!(
        check.field("tranStateTableOffset"),
        half.queue_offset,
        "the first check is of the half message past its timeout, not the immune one"
    );
    assert_eq!(check.field("commitLogOffset"), half.commit_log_offset);
    assert_eq!(check.field("msgId"), "UNIQ-C");
    assert_eq!(check.field("transactionId"), "UNIQ-C");
    let sent = records(&check.body);
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].topic, "TxChecked",
        "the message as its producer sent it"
    );
    assert_eq!(sent[0].body, b"checked body");
    assert!(sent[0]
        .properties
        .contains("TRANSACTION_CHECK_TIMES\u{1}1\u{2}"));

    assert_eq!(
        end(&mut producer, "checked", &half, COMMIT, true).code,
        SUCCESS
    );
    let got = pull(&mut producer, "TxChecked", "1");
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body, b"checked body");
}

#[test]
fn a_broker_that_rejects_transactions_says_so() {
    let servers = Servers::start_with(|namesrv| {
        vec![
            ("namesrvAddr", namesrv.to_string()),
            ("rejectTransactionMessage", "true".into()),
        ]
    });
    let mut w = Wire::connect(servers.broker_addr());
    let refused = send(&mut w, SEND_MESSAGE, "TxRejected", "g", "U", b"x");
    assert_eq!(refused.code, NO_PERMISSION);
    assert!(refused
        .remark
        .unwrap_or_default()
        .contains("sending transaction message is forbidden"));
    assert!(pull(&mut w, "TxRejected", "1").is_empty());
}

#[test]
fn a_half_message_nobody_answers_for_is_given_up() {
    let servers = transaction_servers();
    let mut w = Wire::connect(servers.broker_addr());
    let _half = prepare(&mut w, "TxOrphan", "no-such-producer", "UNIQ-O", b"orphan");
    servers.clock.advance(2_000);
    let deadline = Instant::now() + Duration::from_secs(15);
    let kept = loop {
        let got = pull(&mut w, "TRANS_CHECK_MAX_TIME_TOPIC", "0");
        if !got.is_empty() {
            break got;
        }
        assert!(Instant::now() < deadline, "never given up");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].body, b"orphan");
    assert!(kept[0].properties.contains("REAL_TOPIC\u{1}TxOrphan\u{2}"));
    assert!(kept[0]
        .properties
        .contains("TRANSACTION_CHECK_TIMES\u{1}2\u{2}"));
    assert!(pull(&mut w, "TxOrphan", "1").is_empty(), "never committed");
}
