//! AckMessage: the entries of one request are acked per broker — one BATCH_ACK_MESSAGE for
//! all of a broker's entries (RocketMQ's `BatchAckMessageRequestBody`, an entry per pop with
//! the acked offsets as bits), or an ACK_MESSAGE for a lone entry, whose answer says more
//! about a failure. A broker without BATCH_ACK_MESSAGE (REQUEST_CODE_NOT_SUPPORTED) gets one
//! ACK_MESSAGE per entry. One record in the broker's revive log per pop instead of one per
//! message is what makes acking a received batch cheap.

use rocketpy_protocol::body::batch_ack::{AckBits, BatchAck, BatchAckMessageRequestBody};
use rocketpy_protocol::code::{request, response};
use rocketpy_protocol::header::AckMessageRequestHeader;

use crate::ack_wire::{AckMessageRequest, AckMessageResponse, AckMessageResultEntry, EntryStatus};
use crate::context::Context;
use crate::handle::ReceiptHandle;
use crate::pb::{self, Code};
use crate::state::ProxyInner;
use crate::status::{ok, status, ProxyError};

/// Furthest a message may be from its pop's first offset to be acked in a batch: pops take
/// at most 32 messages, so a larger distance is a handle no broker made (acked alone).
const MAX_BIT: i64 = 4096;

/// A parsed, still valid receipt handle.
pub(crate) fn valid_handle(text: &str, now: i64) -> Result<ReceiptHandle<'_>, ProxyError> {
    let handle = ReceiptHandle::parse(text)
        .ok_or_else(|| ProxyError::new(Code::InvalidReceiptHandle, "receipt handle is invalid"))?;
    if handle.expired(now) {
        return Err(ProxyError::new(
            Code::InvalidReceiptHandle,
            "receipt handle is expired",
        ));
    }
    Ok(handle)
}

/// Acks one message at its broker.
pub(crate) async fn ack_one(
    proxy: &ProxyInner,
    group: &str,
    topic: &str,
    handle: &ReceiptHandle<'_>,
) -> Result<(), ProxyError> {
    let addr = proxy.routes.master(handle.broker_name(), topic).await?;
    let header = AckMessageRequestHeader {
        consumer_group: group.to_owned(),
        topic: handle.real_topic(topic, group),
        queue_id: handle.queue_id,
        extra_info: handle.extra_info().to_owned(),
        offset: handle.queue_offset,
    };
    let req = crate::request::remoting_request(request::ACK_MESSAGE).with_header(&header);
    let resp = proxy
        .remoting
        .invoke(&addr, req, proxy.config.remoting_timeout)
        .await?;
    if resp.code != response::SUCCESS {
        return Err(failed(resp.remark.as_deref()));
    }
    Ok(())
}

fn failed(remark: Option<&str>) -> ProxyError {
    ProxyError::new(
        Code::InternalServerError,
        format!("ack failed: {}", remark.unwrap_or("status is abnormal")),
    )
}

/// What became of a broker's batch.
enum Batch {
    Done(Result<(), ProxyError>),
    /// The broker does not serve BATCH_ACK_MESSAGE.
    Unsupported,
}

/// Acks `handles` (all of one broker, each batchable) in one BATCH_ACK_MESSAGE.
async fn ack_batch(
    proxy: &ProxyInner,
    group: &str,
    topic: &str,
    broker_name: &str,
    handles: &[&ReceiptHandle<'_>],
) -> Batch {
    // One entry per pop, as RocketMQ's client merges them: retry flag, queue, first offset,
    // pop time.
    // A batch holds a few pops (usually one): a scan finds a handle's, no hashing.
    let mut pops: Vec<(BatchAck, Vec<usize>)> = Vec::new();
    for h in handles {
        let same = |a: &BatchAck| {
            a.retry == h.topic_type()
                && a.queue_id == h.queue_id
                && a.start_offset == h.start_offset
                && a.pop_time == h.pop_time
        };
        let at = match pops.iter().position(|(a, _)| same(a)) {
            Some(at) => at,
            None => {
                pops.push((
                    BatchAck {
                        consumer_group: group.to_owned(),
                        topic: topic.to_owned(),
                        retry: h.topic_type().to_owned(),
                        start_offset: h.start_offset,
                        queue_id: h.queue_id,
                        revive_queue_id: h.revive_qid,
                        pop_time: h.pop_time,
                        invisible_time: h.invisible_time,
                        bit_set: AckBits::default(),
                    },
                    Vec::new(),
                ));
                pops.len() - 1
            }
        };
        pops[at].1.push((h.queue_offset - h.start_offset) as usize);
    }
    let body = BatchAckMessageRequestBody {
        broker_name: broker_name.to_owned(),
        acks: pops
            .into_iter()
            .map(|(mut a, bits)| {
                a.bit_set = AckBits::from_indexes(bits);
                a
            })
            .collect(),
    };
    let json = match serde_json::to_vec(&body) {
        Ok(json) => json,
        Err(e) => {
            return Batch::Done(Err(ProxyError::new(
                Code::InternalServerError,
                e.to_string(),
            )))
        }
    };
    let addr = match proxy.routes.master(broker_name, topic).await {
        Ok(addr) => addr,
        Err(e) => return Batch::Done(Err(e)),
    };
    let req = crate::request::remoting_request(request::BATCH_ACK_MESSAGE).with_body(json);
    match proxy
        .remoting
        .invoke(&addr, req, proxy.config.remoting_timeout)
        .await
    {
        Ok(resp) if resp.code == response::SUCCESS => Batch::Done(Ok(())),
        Ok(resp) if resp.code == response::REQUEST_CODE_NOT_SUPPORTED => Batch::Unsupported,
        Ok(resp) => Batch::Done(Err(failed(resp.remark.as_deref()))),
        Err(e) => Batch::Done(Err(e.into())),
    }
}

/// Whether a handle can go into a batch (its offset's bit is a sane distance from its pop's
/// first offset).
fn batchable(h: &ReceiptHandle<'_>) -> bool {
    (0..MAX_BIT).contains(&(h.queue_offset - h.start_offset))
}

/// Handles AckMessage; the response's status is the entries' when they agree,
/// MULTIPLE_RESULTS when not.
pub async fn ack(proxy: &ProxyInner, ctx: &Context, req: AckMessageRequest) -> AckMessageResponse {
    let (topic, group) =
        match crate::validate::topic_and_group(req.topic.as_ref(), req.group.as_ref()) {
            Ok(names) => names,
            Err(e) => {
                return AckMessageResponse {
                    status: Some(e.status()),
                    entries: Vec::new(),
                }
            }
        };
    let mut results: Vec<Option<Result<(), ProxyError>>> = vec![None; req.entries.len()];
    // Each entry's latest handle text (the renewed one, or the client's), which the parsed
    // handles borrow.
    let latest: Vec<_> = req
        .entries
        .iter()
        .map(|e| {
            proxy
                .renewals
                .take(&ctx.client_id, &group, &e.message_id, &e.receipt_handle)
        })
        .collect();
    let mut handles: Vec<(usize, ReceiptHandle<'_>)> = Vec::with_capacity(latest.len());
    let now = proxy.now_millis();
    for (i, text) in latest.iter().enumerate() {
        match valid_handle(text, now) {
            Ok(h) => handles.push((i, h)),
            Err(err) => results[i] = Some(Err(err)),
        }
    }
    // Entries by broker, in the order brokers first appear (a few brokers at most).
    let mut per_broker: Vec<(&str, Vec<(usize, &ReceiptHandle<'_>)>)> = Vec::new();
    for (i, h) in &handles {
        if batchable(h) {
            match per_broker.iter_mut().find(|(b, _)| *b == h.broker_name()) {
                Some((_, entries)) => entries.push((*i, h)),
                None => per_broker.push((h.broker_name(), vec![(*i, h)])),
            }
        } else {
            results[*i] = Some(ack_one(proxy, &group, &topic, h).await);
        }
    }
    for (broker, entries) in per_broker {
        if entries.len() > 1 {
            let hs: Vec<&ReceiptHandle<'_>> = entries.iter().map(|(_, h)| *h).collect();
            if let Batch::Done(result) = ack_batch(proxy, &group, &topic, broker, &hs).await {
                for (i, _) in &entries {
                    results[*i] = Some(result.clone());
                }
                continue;
            }
        }
        // A lone entry, or a broker without BATCH_ACK_MESSAGE.
        for (i, h) in &entries {
            results[*i] = Some(ack_one(proxy, &group, &topic, h).await);
        }
    }
    // The texts borrow the request's entries, which the answer takes.
    drop(latest);
    let entries: Vec<AckMessageResultEntry> = req
        .entries
        .into_iter()
        .zip(results)
        .map(|(e, result)| AckMessageResultEntry {
            message_id: e.message_id,
            receipt_handle: e.receipt_handle,
            status: Some(
                result
                    .unwrap_or(Ok(()))
                    .map_or_else(|err| err.status().into(), |()| EntryStatus::ok()),
            ),
        })
        .collect();
    let codes: Vec<i32> = entries
        .iter()
        .map(|e| e.status.as_ref().map_or(0, |s| s.code))
        .collect();
    let overall = match codes.first() {
        None => ok(),
        Some(c) if codes.iter().all(|x| x == c) => {
            entries[0].status.clone().map_or_else(ok, pb::Status::from)
        }
        Some(_) => status(Code::MultipleResults, "the entries have different results"),
    };
    AckMessageResponse {
        status: Some(overall),
        entries,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_handles_near_their_pop_are_batched() {
        let batchable_at = |start: i64, offset: i64| {
            let text = format!("{start} 1000 60000 2 0 broker-a 0 {offset} 4096");
            batchable(&ReceiptHandle::parse(&text).unwrap())
        };
        assert!(batchable_at(5, 5) && batchable_at(5, 36));
        assert!(!batchable_at(5, 4) && !batchable_at(0, MAX_BIT));
    }
}
