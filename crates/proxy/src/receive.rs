//! The consuming RPCs: QueryAssignment, ReceiveMessage (a POP_MESSAGE, its messages streamed
//! back with receipt handles), AckMessage, ChangeInvisibleDuration and
//! ForwardMessageToDeadLetterQueue, as RocketMQ's proxy does them. Dead-lettering is decided
//! here, not by the broker: a message delivered more often than the group's attempts allow is
//! moved to the group's DLQ instead of being handed out again.

use std::time::Duration;

use rocketpy_protocol::code::{request, response};
use rocketpy_protocol::header::{
    ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader,
    ConsumerSendMsgBackRequestHeader, PopMessageRequestHeader, PopMessageResponseHeader,
};
use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::message::record::{decode_all, RecordView};
use rocketpy_protocol::subscription::tags_of;

use crate::clients::remote::recent_group_settings;
use crate::context::Context;
use crate::convert::{duration_ms, timestamp};
use crate::delivered::{Delivery, HostTexts};
use crate::handle::{Fields, ReceiptHandle};
use crate::pb::{self, Code};
use crate::receive_response::{Content, EncodedMessage, ReceiveMessageResponse};
use crate::state::ProxyInner;
use crate::status::{ok, status, ProxyError};

/// Most messages one receive returns (the broker's pop limit).
const MAX_BATCH: i32 = 32;
/// A receive keeps this much of its deadline for answering after the broker's wait.
const ANSWER_MARGIN: Duration = Duration::from_millis(1500);
/// `initMode` of the proxy's pops: a new group starts at the end (or, on a young queue, at
/// its first message; see the broker's pop).
const INIT_MODE_MAX: i32 = 1;

/// Handles QueryAssignment: a FIFO group is assigned each readable queue (each is held in
/// order by the broker); any other group one entry per broker with queue id -1 (the broker
/// pops from all its queues).
pub async fn query_assignment(
    proxy: &ProxyInner,
    req: pb::QueryAssignmentRequest,
) -> pb::QueryAssignmentResponse {
    let answer = async {
        let (topic, group) =
            crate::validate::topic_and_group(req.topic.as_ref(), req.group.as_ref())?;
        let topic_res = req.topic.clone().unwrap_or_default();
        let route = proxy.routes.route(&topic).await?;
        let endpoints = req.endpoints.clone().unwrap_or_default();
        // The group's order, as RouteActivity reads it from the group's config.
        let fifo = recent_group_settings(proxy, &group, &topic).await?.fifo;
        let queue = |broker: &str, id: i32| pb::MessageQueue {
            topic: Some(topic_res.clone()),
            id,
            permission: pb::Permission::ReadWrite as i32,
            broker: Some(pb::Broker {
                name: broker.to_owned(),
                id: 0,
                endpoints: Some(endpoints.clone()),
            }),
            accept_message_types: Vec::new(),
        };
        let mut assignments = Vec::new();
        if fifo {
            for q in route.read_queues() {
                assignments.push(pb::Assignment {
                    message_queue: Some(queue(&q.broker_name, q.queue_id)),
                });
            }
        } else {
            let mut brokers: Vec<String> = route
                .read_queues()
                .into_iter()
                .map(|q| q.broker_name)
                .collect();
            brokers.dedup();
            for b in brokers {
                assignments.push(pb::Assignment {
                    message_queue: Some(queue(&b, -1)),
                });
            }
        }
        if assignments.is_empty() {
            return Err(ProxyError::new(Code::Forbidden, "no readable queue"));
        }
        Ok(assignments)
    };
    match answer.await {
        Ok(assignments) => pb::QueryAssignmentResponse {
            status: Some(ok()),
            assignments,
        },
        Err(e) => pb::QueryAssignmentResponse {
            status: Some(e.status()),
            assignments: Vec::new(),
        },
    }
}

/// What one receive gives the client: a status, then the messages.
pub struct Received {
    /// OK, MESSAGE_NOT_FOUND, or why nothing could be read.
    pub status: pb::Status,
    /// The messages, encoded.
    pub messages: Vec<EncodedMessage>,
}

/// Handles ReceiveMessage up to the point of streaming: pops, converts, and moves to the
/// DLQ (or acks away) what must not be delivered.
pub async fn receive(
    proxy: &ProxyInner,
    ctx: &Context,
    req: pb::ReceiveMessageRequest,
) -> Received {
    match pop(proxy, ctx, req).await {
        Ok(messages) if messages.is_empty() => Received {
            status: status(Code::MessageNotFound, "no new message"),
            messages,
        },
        Ok(messages) => Received {
            status: ok(),
            messages,
        },
        Err(e) => Received {
            status: e.status(),
            messages: Vec::new(),
        },
    }
}

async fn pop(
    proxy: &ProxyInner,
    ctx: &Context,
    req: pb::ReceiveMessageRequest,
) -> Result<Vec<EncodedMessage>, ProxyError> {
    let cfg = &proxy.config;
    let mq = req
        .message_queue
        .clone()
        .ok_or_else(|| ProxyError::new(Code::BadRequest, "message queue is missing"))?;
    let (topic, group) = crate::validate::topic_and_group(mq.topic.as_ref(), req.group.as_ref())?;
    let topic_res = mq.topic.clone().unwrap_or_default();
    let broker_name = mq
        .broker
        .as_ref()
        .map(|b| b.name.clone())
        .unwrap_or_default();
    let addr = proxy.routes.master(&broker_name, &topic).await?;
    // FIFO and the attempts allowed are the group's, read at every receive (as RocketMQ's
    // proxy merges them into the client's settings each time): not what the client's
    // settings said, which may name no subscription and so no group config at all.
    let gs = recent_group_settings(proxy, &group, &topic).await?;
    let (fifo, max_attempts) = (gs.fifo, gs.retry_max_times + 1);
    // A receive asking for renewal (push consumers) names no invisible time: the proxy's
    // default, extended until the message is acked (see `renew`).
    let renew = req.auto_renew;
    let invisible = match (&req.invisible_duration, req.auto_renew) {
        (Some(d), false) => {
            let ms = duration_ms(d);
            if ms < cfg.min_invisible_time_ms || ms > cfg.max_invisible_time_ms {
                return Err(ProxyError::new(
                    Code::IllegalInvisibleTime,
                    format!(
                        "the invisible time must be in [{}, {}] ms, not {ms}",
                        cfg.min_invisible_time_ms, cfg.max_invisible_time_ms
                    ),
                ));
            }
            ms
        }
        _ => cfg.default_invisible_time_ms,
    };
    let mut poll = req
        .long_polling_timeout
        .as_ref()
        .map_or(cfg.max_long_polling_ms, duration_ms)
        .clamp(0, cfg.max_long_polling_ms);
    if let Some(left) = ctx.timeout {
        poll = poll.min(left.saturating_sub(ANSWER_MARGIN).as_millis() as i64);
    }
    let filter = req.filter_expression.clone().unwrap_or_default();
    let expression = if filter.expression.trim().is_empty() {
        "*".to_owned()
    } else {
        filter.expression.clone()
    };
    let header = PopMessageRequestHeader {
        consumer_group: group.clone(),
        topic: topic.clone(),
        queue_id: -1,
        max_msg_nums: req.batch_size.clamp(1, MAX_BATCH),
        invisible_time: invisible,
        poll_time: poll.max(0),
        born_time: None,
        init_mode: INIT_MODE_MAX,
        exp_type: Some(
            if filter.r#type == pb::FilterType::Sql as i32 {
                "SQL92"
            } else {
                "TAG"
            }
            .to_owned(),
        ),
        exp: Some(expression.clone()),
        order: Some(fifo),
        attempt_id: req.attempt_id.clone(),
    };
    let request = crate::request::remoting_request(request::POP_MESSAGE).with_header(&header);
    let wait = Duration::from_millis(poll.max(0) as u64) + cfg.remoting_timeout;
    let resp = proxy.remoting.invoke(&addr, request, wait).await?;
    match resp.code {
        response::SUCCESS => {}
        response::PULL_NOT_FOUND | response::POLLING_TIMEOUT => return Ok(Vec::new()),
        response::POLLING_FULL => {
            return Err(ProxyError::new(Code::TooManyRequests, "polling full"));
        }
        other => return Err(ProxyError::from_remoting(other, resp.remark.as_deref())),
    }
    let h: PopMessageResponseHeader = resp
        .decode_header()
        .map_err(|e| ProxyError::new(Code::InternalServerError, e.to_string()))?;
    let records = decode_all(&resp.body)
        .map_err(|e| ProxyError::new(Code::InternalServerError, format!("bad pop answer: {e}")))?;
    let starts = offset_infos(h.start_offset_info.as_deref().unwrap_or_default());
    let counts = order_counts(h.order_count_info.as_deref().unwrap_or_default());
    // Tag expressions are checked again here (the broker matched hash codes); an SQL92
    // expression was evaluated by the broker on the properties themselves.
    let wanted = if filter.r#type == pb::FilterType::Sql as i32 {
        None
    } else {
        tags_of(&expression).map(|t| t.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    };
    let mut out = Vec::with_capacity(records.len());
    let mut hosts = HostTexts::default();
    // The batch's messages are encoded one after another into one buffer, sized for all of
    // them up front: each message is split off it, and a buffer that had to grow would be a
    // new allocation (and a new shared owner) per message.
    let room: usize = records
        .iter()
        .map(|v| v.body.len() + v.properties.len() + v.topic.len() + 256 + broker_name.len())
        .sum();
    let (mut scratch, mut encoded) = (Vec::new(), bytes::BytesMut::with_capacity(room));
    // Each message's receipt handle is written here (the encoder copies it out).
    let mut handle_text = String::new();
    for v in &records {
        handle_text.clear();
        match properties::find(v.properties, keys::POP_CK) {
            Some(ck) => handle_text.push_str(&ReceiptHandle::text(ck, v.physical_offset)),
            None => {
                let start = starts
                    .iter()
                    .find(|(flag, q, _)| flag == "0" && *q == v.queue_id)
                    .map_or(v.queue_offset, |(_, _, s)| *s);
                Fields {
                    start_offset: start,
                    pop_time: h.pop_time,
                    invisible_time: h.invisible_time,
                    revive_qid: h.revive_qid,
                    topic_type: "0",
                    broker_name: &broker_name,
                    queue_id: v.queue_id,
                    queue_offset: v.queue_offset,
                    commit_log_offset: v.physical_offset,
                }
                .write(&mut handle_text)
            }
        }
        let attempt = if fifo {
            1 + counts
                .iter()
                .find(|(q, o, _)| *q == v.queue_id && *o == Some(v.queue_offset))
                .or_else(|| {
                    counts
                        .iter()
                        .find(|(q, o, _)| *q == v.queue_id && o.is_none())
                })
                .map_or(0, |(_, _, c)| *c)
        } else {
            v.reconsume_times + 1
        };
        // The handle is parsed only when the proxy itself acts on the message (it is made
        // here, so it parses; a delivered one is parsed again when the client acks it).
        if !tag_matches(v, wanted.as_deref()) {
            // A tag whose hash collided with a wanted one: not this client's.
            if let Some(handle) = ReceiptHandle::parse(&handle_text) {
                let _ = crate::ack::ack_one(proxy, &group, &topic, &handle).await;
            }
            continue;
        }
        if attempt > max_attempts {
            if let Some(handle) = ReceiptHandle::parse(&handle_text) {
                forward_to_dlq(proxy, &group, &topic, &handle, &message_id_of(v)).await?;
            }
            continue;
        }
        if renew {
            let key = (ctx.client_id.clone(), group.clone(), message_id_of(v));
            proxy.renewals.add(key, &topic, &handle_text);
        }
        let delivery = Delivery {
            topic: &topic_res,
            receipt_handle: Some(&handle_text),
            delivery_attempt: Some(attempt),
        };
        out.push(EncodedMessage(crate::delivered::encode(
            v,
            delivery,
            &mut hosts,
            &mut scratch,
            &mut encoded,
        )));
    }
    Ok(out)
}

fn message_id_of(v: &RecordView<'_>) -> String {
    properties::find(v.properties, keys::UNIQ_KEY)
        .map(str::to_owned)
        .unwrap_or_default()
}

fn tag_matches(v: &RecordView<'_>, wanted: Option<&[String]>) -> bool {
    let Some(wanted) = wanted else {
        return true;
    };
    let tag = properties::find(v.properties, keys::TAGS).unwrap_or_default();
    wanted.iter().any(|w| w == tag)
}

/// `startOffsetInfo` entries as (retry flag, queue, start offset).
fn offset_infos(info: &str) -> Vec<(String, i32, i64)> {
    info.split(';')
        .filter_map(|e| {
            let p: Vec<&str> = e.split(' ').collect();
            (p.len() == 3)
                .then(|| Some((p[0].to_owned(), p[1].parse().ok()?, p[2].parse().ok()?)))?
        })
        .collect()
}

/// `orderCountInfo` entries as (queue, offset or None for the queue's minimum, count).
fn order_counts(info: &str) -> Vec<(i32, Option<i64>, i32)> {
    info.split(';')
        .filter_map(|e| {
            let p: Vec<&str> = e.split(' ').collect();
            if p.len() != 3 {
                return None;
            }
            let count = p[2].parse().ok()?;
            match p[1].strip_prefix("qo") {
                Some(rest) => {
                    let (q, o) = rest.split_once('%')?;
                    Some((q.parse().ok()?, Some(o.parse().ok()?), count))
                }
                None => Some((p[1].parse().ok()?, None, count)),
            }
        })
        .collect()
}

/// Handles ChangeInvisibleDuration; the answer carries the message's new handle.
pub async fn change_invisible(
    proxy: &ProxyInner,
    ctx: &Context,
    req: pb::ChangeInvisibleDurationRequest,
) -> pb::ChangeInvisibleDurationResponse {
    let answer = async {
        let (topic, group) =
            crate::validate::topic_and_group(req.topic.as_ref(), req.group.as_ref())?;
        // The client chose the message's visibility: no more renewal.
        let latest =
            proxy
                .renewals
                .take(&ctx.client_id, &group, &req.message_id, &req.receipt_handle);
        let handle = crate::ack::valid_handle(&latest, proxy.now_millis())?;
        let ms = req.invisible_duration.as_ref().map_or(0, duration_ms);
        if ms < 0 || ms > proxy.config.max_invisible_time_ms {
            return Err(ProxyError::new(
                Code::IllegalInvisibleTime,
                format!("the invisible time {ms} ms is out of range"),
            ));
        }
        let addr = proxy.routes.master(handle.broker_name(), &topic).await?;
        let header = ChangeInvisibleTimeRequestHeader {
            consumer_group: group.clone(),
            topic: handle.real_topic(&topic, &group),
            queue_id: handle.queue_id,
            extra_info: handle.extra_info().to_owned(),
            offset: handle.queue_offset,
            invisible_time: ms,
        };
        let req = crate::request::remoting_request(request::CHANGE_MESSAGE_INVISIBLETIME)
            .with_header(&header);
        let resp = proxy
            .remoting
            .invoke(&addr, req, proxy.config.remoting_timeout)
            .await?;
        if resp.code != response::SUCCESS {
            return Err(ProxyError::from_remoting(resp.code, resp.remark.as_deref()));
        }
        let h: ChangeInvisibleTimeResponseHeader = resp
            .decode_header()
            .map_err(|e| ProxyError::new(Code::InternalServerError, e.to_string()))?;
        Ok(handle.changed(h.pop_time, h.invisible_time))
    };
    match answer.await {
        Ok(receipt_handle) => pb::ChangeInvisibleDurationResponse {
            status: Some(ok()),
            receipt_handle,
        },
        Err(e) => pb::ChangeInvisibleDurationResponse {
            status: Some(e.status()),
            receipt_handle: String::new(),
        },
    }
}

/// Moves a received message to the group's dead-letter topic (CONSUMER_SEND_MSG_BACK with
/// delay level -1), then acks it.
async fn forward_to_dlq(
    proxy: &ProxyInner,
    group: &str,
    topic: &str,
    handle: &ReceiptHandle<'_>,
    message_id: &str,
) -> Result<(), ProxyError> {
    let addr = proxy.routes.master(handle.broker_name(), topic).await?;
    let header = ConsumerSendMsgBackRequestHeader {
        offset: handle.commit_log_offset,
        group: group.to_owned(),
        delay_level: -1,
        origin_msg_id: Some(message_id.to_owned()),
        origin_topic: Some(handle.real_topic(topic, group)),
        unit_mode: Some(false),
        max_reconsume_times: Some(0),
    };
    let req =
        crate::request::remoting_request(request::CONSUMER_SEND_MSG_BACK).with_header(&header);
    let resp = proxy
        .remoting
        .invoke(&addr, req, proxy.config.remoting_timeout)
        .await?;
    if resp.code != response::SUCCESS {
        return Err(ProxyError::from_remoting(resp.code, resp.remark.as_deref()));
    }
    crate::ack::ack_one(proxy, group, topic, handle).await
}

/// Handles ForwardMessageToDeadLetterQueue.
pub async fn forward_dlq(
    proxy: &ProxyInner,
    ctx: &Context,
    req: pb::ForwardMessageToDeadLetterQueueRequest,
) -> pb::ForwardMessageToDeadLetterQueueResponse {
    let result = match crate::validate::topic_and_group(req.topic.as_ref(), req.group.as_ref()) {
        Ok((topic, group)) => {
            let latest =
                proxy
                    .renewals
                    .take(&ctx.client_id, &group, &req.message_id, &req.receipt_handle);
            match crate::ack::valid_handle(&latest, proxy.now_millis()) {
                Ok(handle) => forward_to_dlq(proxy, &group, &topic, &handle, &req.message_id).await,
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    };
    pb::ForwardMessageToDeadLetterQueueResponse {
        status: Some(result.map_or_else(|e| e.status(), |()| ok())),
    }
}

/// The stream's last response: the time the answer was made.
pub fn delivery_timestamp(now: i64) -> ReceiveMessageResponse {
    ReceiveMessageResponse {
        content: Some(Content::DeliveryTimestamp(timestamp(now))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_and_order_infos_parse() {
        assert_eq!(
            offset_infos("0 1 5;1 0 7"),
            vec![("0".into(), 1, 5), ("1".into(), 0, 7)]
        );
        assert_eq!(
            order_counts("0 qo0%1 2;0 0 1"),
            vec![(0, Some(1), 2), (0, None, 1)]
        );
    }
}
