//! PULL_MESSAGE with long polling.
//!
//! A pull that finds nothing new (PULL_NOT_FOUND) and carries the SUSPEND flag is held until a
//! message arrives on its queue or its suspend timeout passes, then answered by running the
//! pull again without suspension, as RocketMQ's `PullRequestHoldService` does.

use std::sync::Arc;
use std::time::Duration;

use rocketpy_protocol::code::response;
use rocketpy_protocol::flag::{perm, pull as pull_flag};
use rocketpy_protocol::header::{PullMessageRequestHeader, PullMessageResponseHeader};
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult, Reply};
use rocketpy_store::GetMessageStatus;

use crate::state::BrokerInner;

/// The master's `brokerId`.
const MASTER_ID: i64 = 0;

use super::ok;
use rocketpy_protocol::subscription::is_tag_type;

use crate::filter::{not_supported, ExpressionFilter};

enum Outcome {
    Respond(RemotingCommand),
    Suspend(Duration),
}

fn pull_once(
    broker: &Arc<BrokerInner>,
    conn: &Arc<Connection>,
    req: &RemotingCommand,
    h: &PullMessageRequestHeader,
    allow_suspend: bool,
) -> Result<Outcome, ProcessError> {
    let cfg = broker.config();
    if !perm::is_readable(broker.permission()) {
        return Err(ProcessError::new(
            response::NO_PERMISSION,
            format!(
                "the broker[{}] pulling message is forbidden",
                cfg.broker_name
            ),
        ));
    }
    match broker.groups.find_or_create(&h.consumer_group) {
        None => {
            return Err(ProcessError::new(
                response::SUBSCRIPTION_GROUP_NOT_EXIST,
                format!("subscription group [{}] does not exist", h.consumer_group),
            ))
        }
        Some(g) if !g.consume_enable => {
            return Err(ProcessError::new(
                response::NO_PERMISSION,
                format!("subscription group no permission, {}", h.consumer_group),
            ))
        }
        Some(_) => {}
    }
    let topic_cfg = match broker.topics.get(&h.topic) {
        Some(cfg) => cfg,
        // A slave can hold a topic's messages before its metadata sync brings the topic
        // (created on the master less than a sync period ago): the queues it has are readable.
        None if !broker.store.role().is_master()
            && broker
                .store
                .find_consume_queue(&h.topic, h.queue_id)
                .is_some() =>
        {
            rocketpy_protocol::body::TopicConfig::new(&h.topic, h.queue_id + 1)
        }
        None => {
            return Err(ProcessError::new(
                response::TOPIC_NOT_EXIST,
                format!("topic[{}] not exist, apply first please!", h.topic),
            ))
        }
    };
    if !perm::is_readable(topic_cfg.perm) {
        return Err(ProcessError::new(
            response::NO_PERMISSION,
            format!("the topic[{}] pulling message is forbidden", h.topic),
        ));
    }
    if h.queue_id < 0 || h.queue_id >= topic_cfg.read_queue_nums {
        return Err(ProcessError::new(
            response::SYSTEM_ERROR,
            format!(
                "queueId[{}] is illegal, topic:[{}] topicConfig.readQueueNums:[{}] consumer:[{}]",
                h.queue_id,
                h.topic,
                topic_cfg.read_queue_nums,
                conn.peer()
            ),
        ));
    }
    let filter = pull_filter(broker, h)?;
    let result = broker.store.get_message(
        &h.topic,
        h.queue_id,
        h.queue_offset,
        h.max_msg_nums,
        filter.for_read(),
    );
    let code = match result.status {
        GetMessageStatus::Found => response::SUCCESS,
        GetMessageStatus::MessageWasRemoving | GetMessageStatus::NoMatchedMessage => {
            response::PULL_RETRY_IMMEDIATELY
        }
        GetMessageStatus::NoMatchedLogicQueue | GetMessageStatus::NoMessageInQueue => {
            if h.queue_offset != 0 {
                response::PULL_OFFSET_MOVED
            } else {
                response::PULL_NOT_FOUND
            }
        }
        GetMessageStatus::OffsetFoundNull | GetMessageStatus::OffsetOverflowOne => {
            response::PULL_NOT_FOUND
        }
        GetMessageStatus::OffsetOverflowBadly | GetMessageStatus::OffsetTooSmall => {
            response::PULL_OFFSET_MOVED
        }
    };
    if allow_suspend && h.sys_flag & pull_flag::COMMIT_OFFSET != 0 {
        broker
            .offsets
            .commit(&h.consumer_group, &h.topic, h.queue_id, h.commit_offset);
    }
    let (suggest, code) = suggest_node(broker, &h.consumer_group, &result, code);
    if code == response::PULL_NOT_FOUND && allow_suspend && h.sys_flag & pull_flag::SUSPEND != 0 {
        let wait = if cfg.long_polling_enable {
            h.suspend_timeout_millis.max(0) as u64
        } else {
            cfg.short_polling_time_mills
        };
        return Ok(Outcome::Suspend(Duration::from_millis(wait)));
    }
    let mut resp = ok(req).with_header(&PullMessageResponseHeader {
        suggest_which_broker_id: suggest,
        next_begin_offset: result.next_begin_offset,
        min_offset: result.min_offset,
        max_offset: result.max_offset,
    });
    resp.code = code;
    if code == response::SUCCESS {
        resp.body = result.concat();
    }
    if let (Some(metrics), response::SUCCESS) = (&broker.metrics, code) {
        metrics.on_get(
            (&h.topic, &h.consumer_group, h.queue_id),
            result.messages.len() as u64,
            result.total_bytes as u64,
            result.next_begin_offset,
        );
    }
    broker.stats.on_get(
        &cfg.broker_cluster_name,
        &h.topic,
        &h.consumer_group,
        if code == response::SUCCESS {
            result.messages.len() as i64
        } else {
            0
        },
        if code == response::SUCCESS {
            result.total_bytes as i64
        } else {
            0
        },
    );
    Ok(Outcome::Respond(resp))
}

/// The filter of a pull, decided as RocketMQ's PullMessageProcessor does: the request's own
/// subscription (with the SUBSCRIPTION flag; an expression that does not compile is
/// SUBSCRIPTION_PARSE_FAILED), else the group's from its heartbeats (SQL92: its compiled
/// filter, FILTER_DATA_NOT_EXIST / FILTER_DATA_NOT_LATEST); a non-tag expression on a broker
/// with `enablePropertyFilter=false` is SYSTEM_ERROR, never served unfiltered.
fn pull_filter(
    broker: &BrokerInner,
    h: &PullMessageRequestHeader,
) -> Result<ExpressionFilter, ProcessError> {
    let (filter, expression_type) = if h.sys_flag & pull_flag::SUBSCRIPTION != 0 {
        let expression = h.subscription.as_deref().unwrap_or("*");
        let ty = h.expression_type.as_deref();
        let filter = ExpressionFilter::compile(
            &broker.filters,
            (&h.topic, &h.consumer_group),
            expression,
            ty,
        )
        .map_err(|remark| ProcessError::new(response::SUBSCRIPTION_PARSE_FAILED, remark))?;
        (filter, ty.unwrap_or_default().to_owned())
    } else {
        let subscription = match broker
            .consumers
            .find_subscription(&h.consumer_group, &h.topic)
        {
            Err(()) => {
                return Err(ProcessError::new(
                    response::SUBSCRIPTION_NOT_EXIST,
                    format!("the consumer's group info not exist: {}", h.consumer_group),
                ))
            }
            Ok(None) => {
                return Err(ProcessError::new(
                    response::SUBSCRIPTION_NOT_EXIST,
                    format!(
                        "the consumer's subscription not exist: {}@{}",
                        h.topic, h.consumer_group
                    ),
                ))
            }
            Ok(Some(s)) => s,
        };
        if is_tag_type(Some(&subscription.expression_type)) {
            (
                ExpressionFilter::tags(&subscription.sub_string),
                subscription.expression_type,
            )
        } else {
            let Some(data) = broker.filters.get(&h.topic, &h.consumer_group) else {
                return Err(ProcessError::new(
                    response::FILTER_DATA_NOT_EXIST,
                    "The broker's consumer filter data is not exist!Your expression may be wrong!",
                ));
            };
            if data.client_version < h.sub_version.unwrap_or(0) {
                return Err(ProcessError::new(
                    response::FILTER_DATA_NOT_LATEST,
                    "the consumer's consumer filter data not latest",
                ));
            }
            (
                ExpressionFilter::registered(&broker.filters, data),
                subscription.expression_type,
            )
        }
    };
    if !is_tag_type(Some(&expression_type)) && !broker.config().enable_property_filter {
        return Err(ProcessError::new(
            response::SYSTEM_ERROR,
            not_supported(&expression_type),
        ));
    }
    Ok(filter)
}

/// Which broker of the group the consumer should pull from next (`suggestWhichBrokerId`), as
/// RocketMQ's PullMessageProcessor decides: with `slaveReadEnable`, a consumer reading far
/// behind (beyond the page cache's share of memory) is sent to the group's
/// `whichBrokerWhenConsumeSlowly`, else to its `brokerId`; without, always to the master. A
/// slave whose master is connected sends readers that are not behind back to the master (and,
/// having nothing for them, answers PULL_RETRY_IMMEDIATELY so they go at once); a slave
/// without its master serves everyone — consumers ride through the master's absence.
fn suggest_node(
    broker: &BrokerInner,
    group: &str,
    result: &rocketpy_store::GetMessageResult,
    code: i32,
) -> (i64, i32) {
    let cfg = broker.config();
    let slow = result.suggest_pulling_from_slave;
    let mut suggest = MASTER_ID;
    if cfg.slave_read_enable {
        if let Some(g) = broker.groups.find_or_create(group) {
            suggest = if slow {
                g.which_broker_when_consume_slowly
            } else {
                g.broker_id
            };
        }
    }
    let mut code = code;
    if !broker.store.role().is_master() && !slow && broker.ha.master_connected() {
        suggest = MASTER_ID;
        if code != response::SUCCESS {
            code = response::PULL_RETRY_IMMEDIATELY;
        }
    }
    (suggest, code)
}

/// Handles PULL_MESSAGE.
pub fn process(
    broker: &Arc<BrokerInner>,
    conn: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: PullMessageRequestHeader = req.decode_header()?;
    match pull_once(broker, conn, req, &h, true)? {
        Outcome::Respond(resp) => Ok(Reply::Now(Some(resp))),
        Outcome::Suspend(timeout) => {
            let broker = broker.clone();
            let conn = conn.clone();
            let req = req.clone();
            Ok(Reply::Later(Box::pin(async move {
                hold(&broker, &h, timeout).await;
                // Read only when the connection has room for the answer (its peer reads them).
                let answer_bytes = broker
                    .settings
                    .store
                    .max_transfer_bytes_on_message_in_memory;
                let _room = conn.reserve(answer_bytes).await;
                Some(match pull_once(&broker, &conn, &req, &h, false) {
                    Ok(Outcome::Respond(resp)) => resp,
                    Ok(Outcome::Suspend(_)) => unreachable_suspend(&req),
                    Err(e) => e.into_response(&req),
                })
            })))
        }
    }
}

fn unreachable_suspend(req: &RemotingCommand) -> RemotingCommand {
    // pull_once never suspends when not allowed to; answer "nothing yet" if it ever did.
    let mut resp = ok(req);
    resp.code = response::PULL_NOT_FOUND;
    resp
}

/// Waits until the queue grows past the requested offset or the timeout passes.
async fn hold(broker: &Arc<BrokerInner>, h: &PullMessageRequestHeader, timeout: Duration) {
    let notify = broker.hold.notifier(&h.topic, h.queue_id);
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if broker.store.max_offset_in_queue(&h.topic, h.queue_id) > h.queue_offset {
            return;
        }
        tokio::select! {
            _ = &mut notified => {}
            _ = tokio::time::sleep_until(deadline) => return,
            _ = broker.hold.released() => return,
        }
    }
}
