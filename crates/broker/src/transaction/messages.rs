//! The records a transaction writes besides the half message: the message made visible on
//! commit, the op record that marks a half message resolved, the check record that counts the
//! broker's checks, and the copy kept when a half message is given up.

use bytes::Bytes;
use rocketpy_protocol::flag::message as sys_flag;
use rocketpy_protocol::message::java_hash;
use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::message::record::{MessageToStore, RecordView};
use rocketpy_protocol::topic::{TRANS_CHECK_MAX_TIME_TOPIC, TRANS_OP_HALF_TOPIC};

/// Tag of an op record that resolves a half message (RocketMQ's `REMOVETAG`).
pub const REMOVE_TAG: &str = "d";
/// Tag of an op record that counts one check of a half message. RocketMQ brokers keep the
/// count by re-appending the half message; that gives the half message a second offset, and a
/// late commit for the first then commits it twice. One offset per transaction keeps the
/// outcome exactly once; a RocketMQ broker reading this store ignores ops of other tags.
pub const CHECK_TAG: &str = "rocketpy-check";

/// An op record for the half message at `half_offset`: tag `tag`, body the offset in decimal
/// (RocketMQ 4.x's layout), and for checks the check count; born at `now` on `host` (the
/// broker's clock and address).
pub fn op(
    now: i64,
    host: std::net::SocketAddr,
    tag: &str,
    half_offset: i64,
    checks: Option<i32>,
) -> MessageToStore {
    let count = checks.map(|c| c.to_string());
    let mut props = vec![(keys::TAGS, tag)];
    if let Some(count) = &count {
        props.push((keys::TRANSACTION_CHECK_TIMES, count.as_str()));
    }
    MessageToStore {
        topic: TRANS_OP_HALF_TOPIC.to_owned(),
        queue_id: 0,
        flag: 0,
        body: Bytes::from(half_offset.to_string()),
        properties: properties::encode(props),
        tags_code: java_hash::tags_code(Some(tag)),
        sys_flag: sys_flag::TRANSACTION_NOT_TYPE,
        born_timestamp: now,
        born_host: host,
        store_host: host,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

/// What an op record says: its tag, the half offset it is about and (checks) the count.
pub fn read_op(view: &RecordView<'_>) -> Option<(String, i64, i32)> {
    let tag = properties::find(view.properties, keys::TAGS)?.to_owned();
    let half_offset = std::str::from_utf8(view.body).ok()?.trim().parse().ok()?;
    let checks = properties::find(view.properties, keys::TRANSACTION_CHECK_TIMES)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Some((tag, half_offset, checks))
}

/// The real topic and queue of a half message.
pub fn real_destination(half: &RecordView<'_>) -> Option<(String, i32)> {
    let topic = properties::find(half.properties, keys::REAL_TOPIC)?;
    let queue = properties::find(half.properties, keys::REAL_QUEUE_ID)?
        .parse()
        .ok()?;
    Some((topic.to_owned(), queue))
}

fn copy_of(half: &RecordView<'_>, topic: String, queue_id: i32, props: String) -> MessageToStore {
    let tags_code = java_hash::tags_code(properties::find(&props, keys::TAGS));
    MessageToStore {
        topic,
        queue_id,
        flag: half.flag,
        body: Bytes::copy_from_slice(half.body),
        properties: props,
        tags_code,
        sys_flag: half.sys_flag,
        born_timestamp: half.born_timestamp,
        born_host: half.born_host,
        store_host: half.store_host,
        reconsume_times: half.reconsume_times,
        prepared_transaction_offset: 0,
    }
}

/// The message a commit makes visible: the half message on its real topic and queue, marked
/// committed, pointing at the half message (`preparedTransactionOffset`). `TRAN_MSG`,
/// `REAL_TOPIC` and `REAL_QID` are dropped (RocketMQ 4.9 clears them from the message but
/// leaves them in the stored string; consumers see no transaction marks here).
pub fn committed(half: &RecordView<'_>) -> Option<MessageToStore> {
    let (topic, queue_id) = real_destination(half)?;
    let props = properties::without(
        half.properties,
        &[
            keys::TRANSACTION_PREPARED,
            keys::REAL_TOPIC,
            keys::REAL_QUEUE_ID,
            keys::TRANSACTION_CHECK_TIMES,
        ],
    );
    let mut msg = copy_of(half, topic, queue_id, props);
    msg.sys_flag =
        (half.sys_flag & !sys_flag::TRANSACTION_ROLLBACK_TYPE) | sys_flag::TRANSACTION_COMMIT_TYPE;
    msg.prepared_transaction_offset = half.physical_offset;
    Some(msg)
}

/// The copy kept of a half message whose producer never answered: readable on
/// TRANS_CHECK_MAX_TIME_TOPIC, with its real destination in its properties.
pub fn given_up(half: &RecordView<'_>, checks: i32) -> MessageToStore {
    let props = with_check_count(half.properties, checks);
    copy_of(half, TRANS_CHECK_MAX_TIME_TOPIC.to_owned(), 0, props)
}

/// `props` with TRANSACTION_CHECK_TIMES set to `checks`.
fn with_check_count(props: &str, checks: i32) -> String {
    let count = checks.to_string();
    let mut out = properties::without(props, &[keys::TRANSACTION_CHECK_TIMES]);
    out.push_str(&properties::encode([(
        keys::TRANSACTION_CHECK_TIMES,
        count.as_str(),
    )]));
    out
}

/// The message a check sends its producer: the half message as its producer sent it (real
/// topic and queue), with the check count.
pub fn for_check(half: &RecordView<'_>, checks: i32) -> Option<MessageToStore> {
    let (topic, queue_id) = real_destination(half)?;
    let props = with_check_count(half.properties, checks);
    Some(copy_of(half, topic, queue_id, props))
}
