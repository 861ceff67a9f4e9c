//! SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE, one pipeline for the three: the
//! back-pressure check, the header, the topic (found or auto-created), the messages (the body,
//! or each message of a batch body), the retry/DLQ redirection of retry-topic sends, one store
//! append, one answer.

use std::sync::Arc;

use rocketpy_protocol::code::{request, response};
use rocketpy_protocol::flag::perm;
use rocketpy_protocol::header::{SendMessageRequestHeader, SendMessageResponseHeader};
use rocketpy_protocol::message::batch::{decode_batch, BatchItem};
use rocketpy_protocol::message::record::MessageToStore;
use rocketpy_protocol::topic::{
    validate_topic, AUTO_CREATE_TOPIC_KEY_TOPIC, RETRY_GROUP_TOPIC_PREFIX, SCHEDULE_TOPIC,
    TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC,
};
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult};

use super::send_props;
use super::{
    check_broker_writeable, dlq_topic, ok, retry_topic, spread_queue, store_error, system_error,
    with_store_wait,
};
use crate::metrics::labels;
use crate::state::BrokerInner;
use crate::transaction::half;

/// Handles SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE. A batch goes to one queue,
/// contiguously; its answer names every message (offset ids joined by commas) and the first
/// queue offset.
pub fn process(
    broker: &Arc<BrokerInner>,
    conn: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    check_busy(broker, req)?;
    let h: SendMessageRequestHeader = req.decode_header()?;
    // As the Java broker: a SEND_MESSAGE(_V2) whose header says `batch` carries a batch body
    // too (the C++ client sends its batches so).
    let batch = req.code == request::SEND_BATCH_MESSAGE || h.batch == Some(true);
    if batch && h.topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) {
        return Err(ProcessError::new(
            response::MESSAGE_ILLEGAL,
            format!("[BATCH] topic {} does not support retry topics", h.topic),
        ));
    }
    let queue_id = check_topic(broker, &h, &conn.peer().to_string())?;
    let items = if batch {
        decode_batch(&req.body).map_err(|e| {
            ProcessError::new(
                response::MESSAGE_ILLEGAL,
                format!("the batch is illegal: {e}"),
            )
        })?
    } else {
        vec![BatchItem {
            flag: h.flag,
            body: req.body.clone(),
            properties: h.properties.as_deref().unwrap_or_default(),
        }]
    };
    // Each message's properties read once: checked, as stored, and what is decided by them.
    let cluster = &broker.config().broker_cluster_name;
    let mut scanned = Vec::with_capacity(items.len());
    for item in &items {
        check_body_size(broker, item.body.len())?;
        // A name or value carrying a separator would split into properties of its own.
        let s = send_props::scan(item.properties, cluster)
            .map_err(|e| ProcessError::new(response::MESSAGE_ILLEGAL, e))?;
        scanned.push(s);
    }
    let prepared = half::is_prepared(scanned.iter().any(|s| s.prepared), h.sys_flag);
    if prepared {
        check_prepared(broker, batch)?;
    }
    let (topic, queue_id) = retry_or_dlq(broker, &h, queue_id)?;
    // Under SYNC_FLUSH the answer waits for the disk unless every message says `WAIT=false`.
    let wait = scanned.iter().any(|s| s.wait);
    let message_type = broker
        .metrics
        .as_ref()
        .and_then(|_| items.first())
        .map(|first| labels::message_type(first.properties, prepared));
    let mut msgs: Vec<MessageToStore> = items
        .into_iter()
        .zip(scanned)
        .map(|(item, s)| message(broker, conn, &h, (&topic, queue_id), item, s))
        .map(|msg| if prepared { half::to_half(msg) } else { msg })
        .collect();
    if !prepared && !batch {
        // A 5.x timer message waits in the timer topic (a half message's timer starts when
        // its transaction commits).
        for msg in &mut msgs {
            crate::timer::deliver::redirect(broker, msg)?;
        }
    }
    if wait {
        crate::controller_mode::acks::check_in_sync_replicas(broker)?;
    }
    let appended = broker
        .store
        .put_messages_nowait(&msgs)
        .map_err(store_error)?;
    let Some(first) = appended.results.first() else {
        return Err(system_error("the store accepted no message"));
    };
    let bytes: i64 = appended
        .results
        .iter()
        .map(|r| i64::from(r.wrote_bytes))
        .sum();
    broker.stats.on_put(
        &broker.config().broker_cluster_name,
        &topic,
        appended.results.len() as i64,
        bytes,
    );
    if let (Some(metrics), Some(message_type)) = (&broker.metrics, message_type) {
        metrics.on_put(
            &topic,
            message_type,
            appended.results.len() as u64,
            bytes.max(0) as u64,
        );
    }
    // Every offset id joined by commas, written into one string (32 or 56 digits each).
    let mut ids = String::with_capacity(appended.results.len() * 57);
    for (i, r) in appended.results.iter().enumerate() {
        if i > 0 {
            ids.push(',');
        }
        r.push_msg_id(&mut ids);
    }
    let resp = ok(req).with_header(&SendMessageResponseHeader {
        msg_id: ids,
        queue_id,
        queue_offset: first.logics_offset,
        transaction_id: None,
        msg_region: Some("DefaultRegion".into()),
        trace_on: Some("true".into()),
    });
    Ok(with_store_wait(broker, resp, appended, wait))
}

/// A transaction's prepared message is accepted unless the broker refuses them
/// (`rejectTransactionMessage`) or it comes in a batch (RocketMQ's producers never batch
/// them: each has its own outcome). The transaction topics exist from the first one on.
fn check_prepared(broker: &Arc<BrokerInner>, batch: bool) -> Result<(), ProcessError> {
    if broker.config().reject_transaction_message {
        return Err(ProcessError::new(
            response::NO_PERMISSION,
            format!(
                "the broker[{}] sending transaction message is forbidden",
                broker.config().broker_name
            ),
        ));
    }
    if batch {
        return Err(ProcessError::new(
            response::MESSAGE_ILLEGAL,
            "[BATCH] transactional (prepared) messages cannot be sent in a batch",
        ));
    }
    for topic in [TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC] {
        let created = broker
            .topics
            .ensure_system_topic(topic, 1, perm::READ_WRITE)
            .map_err(system_error)?;
        if created {
            broker.register_now.notify_one();
        }
    }
    Ok(())
}

/// Checks the topic, auto-creating it when allowed; returns the validated queue id (a negative
/// queue id asks the broker to choose one).
fn check_topic(
    broker: &Arc<BrokerInner>,
    h: &SendMessageRequestHeader,
    peer: &str,
) -> Result<i32, ProcessError> {
    let cfg = broker.config();
    check_broker_writeable(broker)?;
    validate_topic(&h.topic).map_err(system_error)?;
    if [
        AUTO_CREATE_TOPIC_KEY_TOPIC,
        SCHEDULE_TOPIC,
        TRANS_HALF_TOPIC,
        TRANS_OP_HALF_TOPIC,
    ]
    .contains(&h.topic.as_str())
    {
        return Err(ProcessError::new(
            response::NO_PERMISSION,
            format!("Sending message to topic[{}] is forbidden.", h.topic),
        ));
    }
    if let Some(group) = h.topic.strip_prefix(RETRY_GROUP_TOPIC_PREFIX) {
        retry_topic(broker, group)?;
    }
    let created = broker
        .topics
        .create_in_send(
            &h.topic,
            &h.default_topic,
            h.default_topic_queue_nums,
            cfg.auto_create_topic_enable,
        )
        .map_err(system_error)?;
    let Some((topic_cfg, just_created)) = created else {
        return Err(ProcessError::new(
            response::TOPIC_NOT_EXIST,
            format!(
                "topic[{}] not exist, apply first please! (from {peer})",
                h.topic
            ),
        ));
    };
    if just_created {
        super::prepare_queues(broker, &h.topic, topic_cfg.write_queue_nums);
        broker.register_now.notify_one();
    }
    if !perm::is_writeable(topic_cfg.perm) {
        return Err(ProcessError::new(
            response::NO_PERMISSION,
            format!("the topic[{}] sending message is forbidden", h.topic),
        ));
    }
    let valid = topic_cfg.write_queue_nums.max(topic_cfg.read_queue_nums);
    let queue_id = if h.queue_id < 0 {
        spread_queue(topic_cfg.write_queue_nums)
    } else {
        h.queue_id
    };
    if queue_id >= valid {
        return Err(ProcessError::new(
            response::SYSTEM_ERROR,
            format!("request queueId[{queue_id}] is illegal, topic {} has {valid} queues; producer: {peer}", h.topic),
        ));
    }
    Ok(queue_id)
}

/// Back-pressure (RocketMQ's flow control): a send that waited longer than
/// `waitTimeMillsInSendQueue` behind earlier requests, or arriving while a put has been stuck
/// in the store for `osPageCacheBusyTimeOutMills`, is answered SYSTEM_BUSY at once instead of
/// queueing more work; producers retry elsewhere or later.
fn check_busy(broker: &Arc<BrokerInner>, req: &RemotingCommand) -> Result<(), ProcessError> {
    let cfg = broker.config();
    if let Some(at) = req.received_at {
        let waited = at.elapsed().as_millis() as u64;
        if waited > cfg.wait_time_mills_in_send_queue {
            return Err(ProcessError::new(
                response::SYSTEM_BUSY,
                format!("[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: {waited}ms"),
            ));
        }
    }
    if broker
        .store
        .is_os_page_cache_busy(cfg.os_page_cache_busy_time_out_mills as i64)
    {
        return Err(ProcessError::new(
            response::SYSTEM_BUSY,
            "[PC_SYNCHRONIZED]broker busy, start flow control for a while",
        ));
    }
    Ok(())
}

/// Retry-topic sends that have been retried enough go to the group's dead-letter topic
/// (RocketMQ's `handleRetryAndDLQ`); returns the topic and queue to store into.
fn retry_or_dlq(
    broker: &Arc<BrokerInner>,
    h: &SendMessageRequestHeader,
    queue_id: i32,
) -> Result<(String, i32), ProcessError> {
    let Some(group) = h.topic.strip_prefix(RETRY_GROUP_TOPIC_PREFIX) else {
        return Ok((h.topic.clone(), queue_id));
    };
    let Some(cfg) = broker.groups.find_or_create(group) else {
        return Err(ProcessError::new(
            response::SUBSCRIPTION_GROUP_NOT_EXIST,
            format!("subscription group not exist, {group}"),
        ));
    };
    let max = h.max_reconsume_times.unwrap_or(cfg.retry_max_times);
    if h.reconsume_times.unwrap_or(0) < max {
        return Ok((h.topic.clone(), queue_id));
    }
    let dlq = dlq_topic(broker, group)?;
    if let Some(metrics) = &broker.metrics {
        metrics.on_dlq(group, &h.topic);
    }
    Ok((dlq, 0))
}

/// The message to store for `item`, sent with header `h` to `(topic, queue_id)`.
fn message(
    broker: &Arc<BrokerInner>,
    conn: &Arc<Connection>,
    h: &SendMessageRequestHeader,
    (topic, queue_id): (&str, i32),
    item: BatchItem<'_>,
    scanned: send_props::Scanned,
) -> MessageToStore {
    MessageToStore {
        topic: topic.to_owned(),
        queue_id,
        flag: item.flag,
        body: item.body,
        properties: scanned.stored,
        tags_code: scanned.tags_code,
        sys_flag: h.sys_flag,
        born_timestamp: h.born_timestamp,
        born_host: conn.peer(),
        store_host: broker.store_host,
        reconsume_times: h.reconsume_times.unwrap_or(0),
        prepared_transaction_offset: 0,
    }
}

fn check_body_size(broker: &Arc<BrokerInner>, len: usize) -> Result<(), ProcessError> {
    let max = broker.settings.store.max_message_size;
    if len > max {
        return Err(ProcessError::new(
            response::MESSAGE_ILLEGAL,
            format!("the message body size {len} exceeds maxMessageSize {max}"),
        ));
    }
    Ok(())
}
