//! POP_MESSAGE (RocketMQ 5.x): the broker picks the messages. Each queue read gets a
//! checkpoint in the revive log (see `crate::pop`), or, for a FIFO pop, holds the queue (see
//! `crate::pop::order`). One pop in five reads the group's pop retry topic first, the others
//! read it only when the normal queues leave room (RocketMQ's `popFromRetryProbability`), so
//! retried messages are neither starved nor favoured. A pop that finds nothing waits up to its
//! poll time for messages.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use rocketpy_protocol::code::response;
use rocketpy_protocol::flag::perm;
use rocketpy_protocol::header::{PopMessageRequestHeader, PopMessageResponseHeader};
use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::message::record::{self, Decoded, MessageToStore, Placement};
use rocketpy_protocol::subscription::is_tag_type;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult, Reply};
use rocketpy_store::{Appended, GetMessageStatus};

use super::{ok, system_error};
use crate::filter::{not_supported, ExpressionFilter};
use crate::pop::extra_info::{self, ExtraInfo, ORDER_REVIVE_QID};
use crate::pop::{pop_retry_topic, CkKey, MAX_POP_NUMS};
use crate::state::BrokerInner;

/// Percent of pops that read the pop retry topic first (`popFromRetryProbability`).
const RETRY_FIRST_PERCENT: u32 = 20;
/// A pop that arrives this long after its poll time ended is refused (`isTimeoutTooMuch`).
const TOO_LATE_MS: i64 = 500;
/// The request's `initMode` for "start at the first offset".
const INIT_MODE_MIN: i32 = 0;

/// What one pass over the queues found.
#[derive(Default)]
struct Popped {
    records: Vec<Bytes>,
    start_offset_info: String,
    msg_offset_info: String,
    order_count_info: String,
    rest_num: i64,
    appended: Vec<Appended>,
}

struct PopRequest {
    h: PopMessageRequestHeader,
    order: bool,
    filter: ExpressionFilter,
    pop_time: i64,
    revive_qid: i32,
}

/// The filter of a pop's expression: SUBSCRIPTION_PARSE_FAILED when it does not compile (as
/// RocketMQ's PopMessageProcessor), SYSTEM_ERROR for a non-tag expression on a broker with
/// `enablePropertyFilter=false` (RocketMQ's pop would serve it; refused here as in PULL, so
/// the key means one thing).
fn pop_filter(
    broker: &BrokerInner,
    topic_group: (&str, &str),
    exp: &str,
    exp_type: Option<&str>,
) -> Result<ExpressionFilter, ProcessError> {
    let filter = ExpressionFilter::compile(&broker.filters, topic_group, exp, exp_type)
        .map_err(|remark| ProcessError::new(response::SUBSCRIPTION_PARSE_FAILED, remark))?;
    match exp_type {
        Some(ty) if !is_tag_type(Some(ty)) && !broker.config().enable_property_filter => {
            Err(ProcessError::new(response::SYSTEM_ERROR, not_supported(ty)))
        }
        _ => Ok(filter),
    }
}

/// Handles POP_MESSAGE.
pub fn pop_message(
    broker: &Arc<BrokerInner>,
    conn: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: PopMessageRequestHeader = req.decode_header()?;
    let now = broker.now_millis();
    let born = h.born_time.filter(|b| *b > 0).unwrap_or(now);
    if now - born - h.poll_time > TOO_LATE_MS {
        return Err(ProcessError::new(
            response::POLLING_TIMEOUT,
            "POLLING_TIMEOUT",
        ));
    }
    check(broker, &h)?;
    let order = h.order == Some(true);
    let exp = h
        .exp
        .clone()
        .filter(|e| !e.is_empty())
        .unwrap_or_else(|| "*".into());
    let filter = pop_filter(
        broker,
        (&h.topic, &h.consumer_group),
        &exp,
        h.exp_type.as_deref(),
    )?;
    let mut pop = PopRequest {
        order,
        filter,
        pop_time: now,
        revive_qid: if order {
            ORDER_REVIVE_QID
        } else {
            broker.pop.next_revive_qid()
        },
        h,
    };
    let popped = pop_once(broker, &pop).map_err(system_error)?;
    if !popped.records.is_empty() || pop.h.poll_time <= 0 {
        return Ok(answer(broker, req, &pop, popped));
    }
    // Nothing yet: wait for an arrival on the topic or its retry topic (registered before
    // the second look, so an arrival in between is not missed), then look once more.
    let broker = broker.clone();
    let conn = conn.clone();
    let req = req.clone();
    // The wait is measured on tokio's monotonic clock: `born + pollTime` read on the broker's
    // clock once, never longer than pollTime (a client clock ahead must not hold a pop).
    let wait = (born + pop.h.poll_time - now).clamp(0, pop.h.poll_time);
    let deadline = tokio::time::Instant::now() + Duration::from_millis(wait as u64);
    let answer_bytes = broker
        .settings
        .store
        .max_transfer_bytes_on_message_in_memory;
    Ok(Reply::Later(Box::pin(async move {
        let retry = pop_retry_topic(&pop.h.topic, &pop.h.consumer_group);
        loop {
            let (a, b) = (
                broker.pop.notifier(&pop.h.topic),
                broker.pop.notifier(&retry),
            );
            let (wa, wb) = (a.notified(), b.notified());
            tokio::pin!(wa, wb);
            wa.as_mut().enable();
            wb.as_mut().enable();
            // Read only when the connection has room for the answer (its peer reads them).
            let _room = conn.reserve(answer_bytes).await;
            pop.pop_time = broker.now_millis();
            let popped = match pop_once(&broker, &pop) {
                Ok(p) => p,
                Err(e) => return Some(system_error(e).into_response(&req)),
            };
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if !popped.records.is_empty() || left.is_zero() {
                return Some(match answer(&broker, &req, &pop, popped) {
                    Reply::Now(resp) => resp?,
                    Reply::Later(fut) => fut.await?,
                });
            }
            tokio::select! {
                _ = &mut wa => {}
                _ = &mut wb => {}
                _ = tokio::time::sleep(left) => {}
                _ = broker.hold.released() => {}
            }
        }
    })))
}

/// RocketMQ's checks, in its order and with its codes.
fn check(broker: &BrokerInner, h: &PopMessageRequestHeader) -> Result<(), ProcessError> {
    if !perm::is_readable(broker.permission()) {
        return Err(ProcessError::new(
            response::NO_PERMISSION,
            format!(
                "the broker[{}] popping message is forbidden",
                broker.config().broker_name
            ),
        ));
    }
    if h.max_msg_nums > MAX_POP_NUMS {
        return Err(ProcessError::new(
            response::INVALID_PARAMETER,
            format!(
                "the broker's pop message's num is greater than {MAX_POP_NUMS}: {}",
                h.max_msg_nums
            ),
        ));
    }
    if !broker.store.role().is_master() {
        return Err(ProcessError::new(
            response::SERVICE_NOT_AVAILABLE,
            "service not available now: pops are served by the master",
        ));
    }
    let Some(cfg) = broker.topics.read_view(&h.topic) else {
        return Err(ProcessError::new(
            response::TOPIC_NOT_EXIST,
            format!("topic[{}] not exist, apply first please!", h.topic),
        ));
    };
    if !perm::is_readable(cfg.perm) {
        return Err(ProcessError::new(
            response::NO_PERMISSION,
            format!("the topic[{}] peeking message is forbidden", h.topic),
        ));
    }
    if h.queue_id >= cfg.read_queue_nums {
        return Err(ProcessError::new(
            response::INVALID_PARAMETER,
            format!(
                "queueId[{}] is illegal, topic:[{}] topicConfig.readQueueNums:[{}]",
                h.queue_id, h.topic, cfg.read_queue_nums
            ),
        ));
    }
    match broker.groups.find_or_create(&h.consumer_group) {
        None => Err(ProcessError::new(
            response::SUBSCRIPTION_GROUP_NOT_EXIST,
            format!("subscription group [{}] does not exist", h.consumer_group),
        )),
        Some(g) if !g.consume_enable => Err(ProcessError::new(
            response::NO_PERMISSION,
            format!("subscription group no permission, {}", h.consumer_group),
        )),
        Some(_) => Ok(()),
    }
}

fn answer(broker: &BrokerInner, req: &RemotingCommand, pop: &PopRequest, p: Popped) -> Reply {
    let found = !p.records.is_empty();
    let header = PopMessageResponseHeader {
        pop_time: pop.pop_time,
        invisible_time: pop.h.invisible_time,
        revive_qid: pop.revive_qid,
        rest_num: p.rest_num,
        start_offset_info: Some(p.start_offset_info).filter(|s| !s.is_empty()),
        msg_offset_info: Some(p.msg_offset_info).filter(|s| !s.is_empty()),
        order_count_info: Some(p.order_count_info).filter(|s| !s.is_empty()),
    };
    if !found {
        let mut resp =
            RemotingCommand::response_to(req, response::POLLING_TIMEOUT).with_header(&header);
        resp.remark = Some("NO_MESSAGE_IN_QUEUE".into());
        return Reply::Now(Some(resp));
    }
    let mut body = BytesMut::with_capacity(p.records.iter().map(Bytes::len).sum());
    for r in &p.records {
        body.extend_from_slice(r);
    }
    let mut resp = ok(req).with_header(&header).with_body(body.freeze());
    resp.remark = Some("FOUND".into());
    // The answer waits, under SYNC_FLUSH, for the checkpoints: a client never holds a
    // message whose checkpoint the broker could still lose.
    let mut appended = p.appended.into_iter();
    match appended.next() {
        Some(first) => {
            let last = appended.last().unwrap_or(first);
            super::with_store_wait(broker, resp, last, true)
        }
        None => Reply::Now(Some(resp)),
    }
}

/// One pass: the retry topic and the normal queues in RocketMQ's order.
fn pop_once(broker: &BrokerInner, pop: &PopRequest) -> Result<Popped, rocketpy_store::StoreError> {
    let mut out = Popped::default();
    let h = &pop.h;
    let retry = pop_retry_topic(&h.topic, &h.consumer_group);
    let has_retry = !pop.order && broker.topics.exists(&retry);
    let coin = rand_percent();
    if has_retry && coin < RETRY_FIRST_PERCENT {
        pop_topic(broker, pop, &retry, coin, &mut out)?;
    }
    pop_topic(broker, pop, &h.topic, coin, &mut out)?;
    if has_retry && coin >= RETRY_FIRST_PERCENT && (out.records.len() as i32) < h.max_msg_nums {
        pop_topic(broker, pop, &retry, coin, &mut out)?;
    }
    Ok(out)
}

/// A number in 0..100 (no RNG dependency: the clock's nanoseconds are random enough to
/// spread choices).
fn rand_percent() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() / 7 % 100)
}

/// Pops from the queues of `topic` (the normal topic or its pop retry topic) into `out`.
fn pop_topic(
    broker: &BrokerInner,
    pop: &PopRequest,
    topic: &str,
    coin: u32,
    out: &mut Popped,
) -> Result<(), rocketpy_store::StoreError> {
    let h = &pop.h;
    let is_retry = topic != h.topic;
    let Some(cfg) = broker.topics.read_view(topic) else {
        return Ok(());
    };
    // The queue asked for, or every queue from a random one on (no list: pops are frequent).
    let asked = h.queue_id >= 0 && !is_retry;
    let n = if asked { 1 } else { cfg.read_queue_nums.max(0) };
    for i in 0..n {
        let q = if asked {
            h.queue_id
        } else {
            (coin as i32 + i) % n
        };
        let want = h.max_msg_nums - out.records.len() as i32;
        if want <= 0 {
            break;
        }
        pop_queue(broker, pop, topic, q, want, out)?;
    }
    Ok(())
}

/// Where a group with no offset starts in a queue: a pop retry topic at its first message;
/// otherwise `initMode` 0 the first offset, 1 (RocketMQ's proxy) the last message — or the
/// first when the queue still holds all it ever got in memory, so a new group on a young
/// topic sees its first messages.
fn init_offset(broker: &BrokerInner, topic: &str, q: i32, init_mode: i32, is_retry: bool) -> i64 {
    let min = broker.store.min_offset_in_queue(topic, q);
    if is_retry || init_mode == INIT_MODE_MIN {
        return min;
    }
    if min <= 0 && !broker.store.check_in_disk_by_consume_offset(topic, q, 0) {
        return 0;
    }
    (broker.store.max_offset_in_queue(topic, q) - 1).max(0)
}

fn pop_queue(
    broker: &BrokerInner,
    pop: &PopRequest,
    topic: &str,
    q: i32,
    want: i32,
    out: &mut Popped,
) -> Result<(), rocketpy_store::StoreError> {
    let h = &pop.h;
    let group = h.consumer_group.as_str();
    let is_retry = topic != h.topic;
    let lock = broker.pop.queue_lock(topic, group, q);
    let Some(_held) = lock.try_lock() else {
        return Ok(()); // another pop of this group is reading the queue
    };
    if pop.order
        && broker
            .pop
            .order
            .blocks(topic, group, q, h.attempt_id.as_deref(), pop.pop_time)
    {
        return Ok(());
    }
    let mut offset = match broker.offsets.query(group, topic, q) {
        Some(o) if o >= 0 => o,
        _ => {
            let o = init_offset(broker, topic, q, h.init_mode, is_retry);
            broker.offsets.commit(group, topic, q, o);
            o
        }
    };
    let filter = if is_retry {
        None
    } else {
        pop.filter.for_read()
    };
    let mut got = broker.store.get_message(topic, q, offset, want, filter);
    if matches!(
        got.status,
        GetMessageStatus::OffsetTooSmall
            | GetMessageStatus::OffsetOverflowBadly
            | GetMessageStatus::OffsetFoundNull
    ) {
        // Retention removed the group's next messages (or its offset is past the end): go on
        // from where the queue is.
        offset = got.next_begin_offset;
        broker.offsets.commit(group, topic, q, offset);
        got = broker.store.get_message(topic, q, offset, want, filter);
    }
    out.rest_num += (got.max_offset - got.next_begin_offset).max(0);
    if got.messages.is_empty() {
        if got.next_begin_offset > offset && !pop.order {
            // Only filtered-out messages: the group is past them.
            broker
                .offsets
                .commit(group, topic, q, got.next_begin_offset);
        }
        return Ok(());
    }
    let offsets = got.queue_offsets.clone();
    let start = offsets[0];
    let flag = extra_info::retry_flag(topic);
    extra_info::push_entry(
        &mut out.start_offset_info,
        &extra_info::start_offset_entry(topic, q, start),
    );
    extra_info::push_entry(
        &mut out.msg_offset_info,
        &extra_info::msg_offset_entry(topic, q, &offsets),
    );
    if pop.order {
        let counts = broker.pop.order.popped(
            (topic, group, q),
            &offsets,
            (pop.pop_time, h.invisible_time),
            h.attempt_id.as_deref(),
        );
        // The group's offset stays at the first popped message until it is acked.
        broker.offsets.commit(group, topic, q, start);
        let mut min_count = i32::MAX;
        for (o, c) in offsets.iter().zip(&counts) {
            if *c > 0 {
                extra_info::push_entry(&mut out.order_count_info, &format!("{flag} qo{q}%{o} {c}"));
            }
            min_count = min_count.min(*c);
        }
        extra_info::push_entry(
            &mut out.order_count_info,
            &format!("{flag} {q} {}", min_count.max(0)),
        );
    } else {
        let key = CkKey {
            topic: topic.to_owned(),
            group: group.to_owned(),
            queue_id: q,
            start,
            pop_time: pop.pop_time,
        };
        let appended = broker.pop.checkpoint(
            broker,
            key,
            offsets.clone(),
            h.invisible_time,
            pop.revive_qid,
        )?;
        out.appended.push(appended);
        broker
            .offsets
            .commit(group, topic, q, got.next_begin_offset);
    }
    for (raw, o) in got.messages.into_iter().zip(&offsets) {
        out.records.push(if is_retry {
            as_original(broker, pop, &h.topic, topic, raw, start, *o)
        } else {
            raw
        });
    }
    Ok(())
}

/// A retried message as the consumer sees it: under its original topic, with its POP_CK
/// (naming the retry queue it was read from) in its properties, as RocketMQ rewrites it.
fn as_original(
    broker: &BrokerInner,
    pop: &PopRequest,
    normal_topic: &str,
    retry_topic: &str,
    raw: Bytes,
    start: i64,
    offset: i64,
) -> Bytes {
    let Ok(Decoded::Message(v)) = record::decode(&raw, false) else {
        return raw;
    };
    let mut props = v.properties.to_owned();
    if properties::find(&props, keys::POP_CK).is_none() {
        let ck = ExtraInfo {
            start_offset: start,
            pop_time: pop.pop_time,
            invisible_time: pop.h.invisible_time,
            revive_qid: pop.revive_qid,
            retry_flag: extra_info::retry_flag(retry_topic).to_owned(),
            broker_name: broker.config().broker_name.clone(),
            queue_id: v.queue_id,
            queue_offset: Some(offset),
        };
        properties::push(&mut props, keys::POP_CK, &ck.to_string());
    }
    let msg = MessageToStore {
        topic: normal_topic.to_owned(),
        queue_id: v.queue_id,
        flag: v.flag,
        body: Bytes::copy_from_slice(v.body),
        properties: props,
        tags_code: 0,
        sys_flag: v.sys_flag,
        born_timestamp: v.born_timestamp,
        born_host: v.born_host,
        store_host: v.store_host,
        reconsume_times: v.reconsume_times,
        prepared_transaction_offset: v.prepared_transaction_offset,
    };
    let at = Placement {
        queue_offset: v.queue_offset,
        physical_offset: v.physical_offset,
        store_timestamp: v.store_timestamp,
    };
    record::encode(&msg, at).map(Bytes::from).unwrap_or(raw)
}
