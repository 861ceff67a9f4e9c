//! Prepared sends become half messages: stored on RMQ_SYS_TRANS_HALF_TOPIC queue 0, where no
//! consumer reads, with their real topic and queue in properties until END_TRANSACTION or a
//! check decides their outcome.

use rocketpy_protocol::flag::message as sys_flag;
use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::message::record::MessageToStore;
use rocketpy_protocol::topic::TRANS_HALF_TOPIC;

/// Whether a `TRAN_MSG` value marks a prepared message: `true` in any case (Java's
/// `Boolean.parseBoolean`), which is what RocketMQ's broker looks at.
pub fn tran_msg_prepared(value: &str) -> bool {
    value.eq_ignore_ascii_case("true")
}

/// Whether a send is a transaction's prepared message: its `TRAN_MSG` said so
/// ([`tran_msg_prepared`]), or its `sysFlag` has the prepared transaction type (stored as it
/// is, such a message could never be read).
pub fn is_prepared(tran_msg_prepared: bool, flag: i32) -> bool {
    tran_msg_prepared || sys_flag::transaction_type(flag) == sys_flag::TRANSACTION_PREPARED_TYPE
}

/// `msg` (addressed to its real topic and queue) turned into its half message. A delay
/// level is dropped: RocketMQ's producers clear it on transactional sends, and the delay would
/// otherwise move the half message to the schedule topic.
pub fn to_half(mut msg: MessageToStore) -> MessageToStore {
    let queue = msg.queue_id.to_string();
    let mut props = properties::without(
        &msg.properties,
        &[
            keys::REAL_TOPIC,
            keys::REAL_QUEUE_ID,
            keys::DELAY_TIME_LEVEL,
        ],
    );
    props.push_str(&properties::encode([
        (keys::REAL_TOPIC, msg.topic.as_str()),
        (keys::REAL_QUEUE_ID, queue.as_str()),
    ]));
    msg.properties = props;
    msg.topic = TRANS_HALF_TOPIC.to_owned();
    msg.queue_id = 0;
    msg.sys_flag &= !sys_flag::TRANSACTION_ROLLBACK_TYPE;
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepared_by_property_or_flag() {
        assert!(tran_msg_prepared("TRUE") && tran_msg_prepared("true"));
        assert!(!tran_msg_prepared("false") && !tran_msg_prepared("yes"));
        assert!(is_prepared(true, 0));
        assert!(is_prepared(false, sys_flag::TRANSACTION_PREPARED_TYPE));
        assert!(!is_prepared(false, 0));
        assert!(!is_prepared(false, sys_flag::TRANSACTION_COMMIT_TYPE));
    }
}
