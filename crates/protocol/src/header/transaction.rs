//! Transactional messages: END_TRANSACTION (producer to broker) and CHECK_TRANSACTION_STATE
//! (broker to producer).

use super::header;

header! {
    /// `EndTransactionRequestHeader`: the outcome of a local transaction for one half message.
    pub struct EndTransactionRequestHeader {
        /// The producer group (must be the half message's `PGROUP`).
        producer_group: String = "producerGroup",
        /// The half message's offset in the half queue (its send result's queueOffset).
        tran_state_table_offset: i64 = "tranStateTableOffset",
        /// The half message's CommitLog offset (from its offset message id).
        commit_log_offset: i64 = "commitLogOffset",
        /// 8 = commit, 12 = rollback, 0 = unknown (`MessageSysFlag` transaction types).
        commit_or_rollback: i32 = "commitOrRollback",
        /// Whether this answers a CHECK_TRANSACTION_STATE.
        from_transaction_check: Option<bool> = "fromTransactionCheck",
        /// The message id (UNIQ_KEY) of the half message.
        msg_id: Option<String> = "msgId",
        /// The transaction id (the UNIQ_KEY too, for 4.x clients).
        transaction_id: Option<String> = "transactionId",
    }
}

header! {
    /// `CheckTransactionStateRequestHeader`: the broker asks a producer of the half message's
    /// group for its transaction's outcome; the body is the message, encoded as stored.
    pub struct CheckTransactionStateRequestHeader {
        /// The half message's offset in the half queue.
        tran_state_table_offset: i64 = "tranStateTableOffset",
        /// The half message's CommitLog offset.
        commit_log_offset: i64 = "commitLogOffset",
        /// The message id (UNIQ_KEY).
        msg_id: Option<String> = "msgId",
        /// The transaction id.
        transaction_id: Option<String> = "transactionId",
        /// The half message's offset message id.
        offset_msg_id: Option<String> = "offsetMsgId",
    }
}
