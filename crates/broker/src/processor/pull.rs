//! PULL_MESSAGE with long polling.
//!
//! A pull that finds nothing new (PULL_NOT_FOUND) and carries the SUSPEND flag is held until a
//! message arrives on its queue or its suspend timeout passes, then answered by running the
//! pull again without suspension, as RocketMQ's `PullRequestHoldService` does.

use std::sync::Arc;
use std::time::Duration;

use rocketpy_protocol::body::perm;
use rocketpy_protocol::code::response;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult, Reply};
use rocketpy_store::GetMessageStatus;

use super::ok;
use crate::subscription::{build_subscription, TagFilter};
use crate::BrokerInner;

/// `PullSysFlag` bits.
pub mod sys_flag {
    pub const COMMIT_OFFSET: i32 = 0x1;
    pub const SUSPEND: i32 = 0x2;
    pub const SUBSCRIPTION: i32 = 0x4;
    pub const CLASS_FILTER: i32 = 0x8;
    pub const LITE_PULL: i32 = 0x10;
}

/// `PullMessageRequestHeader`.
#[derive(Debug, Clone)]
struct PullHeader {
    consumer_group: String,
    topic: String,
    queue_id: i32,
    queue_offset: i64,
    max_msg_nums: i32,
    sys_flag: i32,
    commit_offset: i64,
    suspend_timeout_millis: u64,
    subscription: Option<String>,
    sub_version: i64,
}

fn parse_header(req: &RemotingCommand) -> Result<PullHeader, ProcessError> {
    Ok(PullHeader {
        consumer_group: req.field("consumerGroup")?.to_owned(),
        topic: req.field("topic")?.to_owned(),
        queue_id: req.parse_field("queueId")?,
        queue_offset: req.parse_field("queueOffset")?,
        max_msg_nums: req.parse_field("maxMsgNums")?,
        sys_flag: req.parse_field("sysFlag")?,
        commit_offset: req.parse_field("commitOffset")?,
        suspend_timeout_millis: req.parse_field("suspendTimeoutMillis")?,
        subscription: req.field_opt("subscription").map(str::to_owned),
        sub_version: req.parse_field_or("subVersion", 0)?,
    })
}

enum Outcome {
    Respond(RemotingCommand),
    Suspend(Duration),
}

fn pull_once(
    broker: &Arc<BrokerInner>,
    conn: &Arc<Connection>,
    req: &RemotingCommand,
    h: &PullHeader,
    allow_suspend: bool,
) -> Result<Outcome, ProcessError> {
    let cfg = broker.config();
    if !perm::is_readable(cfg.broker_permission) {
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
    let Some(topic_cfg) = broker.topics.get(&h.topic) else {
        return Err(ProcessError::new(
            response::TOPIC_NOT_EXIST,
            format!("topic[{}] not exist, apply first please!", h.topic),
        ));
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
    let subscription = if h.sys_flag & sys_flag::SUBSCRIPTION != 0 {
        build_subscription(
            &h.topic,
            h.subscription.as_deref().unwrap_or("*"),
            h.sub_version,
        )
    } else {
        match broker
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
        }
    };
    let filter = TagFilter::new(&subscription);
    let matches = |code: i64| filter.matches(code);
    let result = broker.store.get_message(
        &h.topic,
        h.queue_id,
        h.queue_offset,
        h.max_msg_nums,
        (!filter.is_all()).then_some(&matches as &dyn Fn(i64) -> bool),
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
    if allow_suspend && h.sys_flag & sys_flag::COMMIT_OFFSET != 0 {
        broker
            .offsets
            .commit(&h.consumer_group, &h.topic, h.queue_id, h.commit_offset);
    }
    if code == response::PULL_NOT_FOUND && allow_suspend && h.sys_flag & sys_flag::SUSPEND != 0 {
        let wait = if cfg.long_polling_enable {
            h.suspend_timeout_millis
        } else {
            cfg.short_polling_time_mills
        };
        return Ok(Outcome::Suspend(Duration::from_millis(wait)));
    }
    let mut resp = ok(req)
        .with_field("nextBeginOffset", result.next_begin_offset)
        .with_field("minOffset", result.min_offset)
        .with_field("maxOffset", result.max_offset)
        .with_field("suggestWhichBrokerId", 0);
    resp.code = code;
    if code == response::SUCCESS {
        resp.body = result.concat();
    }
    Ok(Outcome::Respond(resp))
}

/// Handles PULL_MESSAGE.
pub fn process(
    broker: &Arc<BrokerInner>,
    conn: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h = parse_header(req)?;
    match pull_once(broker, conn, req, &h, true)? {
        Outcome::Respond(resp) => Ok(Reply::Now(Some(resp))),
        Outcome::Suspend(timeout) => {
            let broker = broker.clone();
            let conn = conn.clone();
            let req = req.clone();
            Ok(Reply::Later(Box::pin(async move {
                hold(&broker, &h, timeout).await;
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
async fn hold(broker: &Arc<BrokerInner>, h: &PullHeader, timeout: Duration) {
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
