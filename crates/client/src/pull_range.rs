//! Reading a range of queue offsets through PULL_MESSAGE without a consumer: many pulls in
//! flight at once (a broker returns at most 32 messages per pull), answers kept in offset
//! order. Used by the Spark reader, which knows the exact range it wants.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use rocketpy_protocol::code::{request, response};
use rocketpy_protocol::flag::pull as pull_flag;
use rocketpy_protocol::header::{PullMessageRequestHeader, PullMessageResponseHeader};
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::RemotingClient;

/// Fixed parts of the pulls of one queue range.
#[derive(Debug, Clone)]
pub struct PullSpec {
    pub addr: String,
    pub group: String,
    pub topic: String,
    pub queue_id: i32,
    pub subscription: String,
    /// `TAG` or `SQL92` (the broker evaluates SQL92 with `enablePropertyFilter=true`).
    pub expression_type: String,
    pub timeout: Duration,
}

/// What the pulls of one window (at most [`PULL_BATCH`] offsets) returned.
#[derive(Debug)]
pub enum Window {
    /// PULL_MESSAGE bodies (concatenated records), in order; they may hold records at or past
    /// the window's end when the broker filtered by tag.
    Bodies(Vec<Bytes>),
    /// The broker answered PULL_OFFSET_MOVED: offsets from `at` are gone; `next` is its hint.
    Moved { at: i64, next: i64 },
}

/// Offsets per window: what one pull returns at most.
pub const PULL_BATCH: i64 = 32;

async fn pull_window(
    client: RemotingClient,
    spec: Arc<PullSpec>,
    mut at: i64,
    end: i64,
) -> Result<Window, String> {
    let mut bodies = Vec::new();
    while at < end {
        let req = RemotingCommand::request(request::PULL_MESSAGE).with_header(
            &PullMessageRequestHeader {
                consumer_group: spec.group.clone(),
                topic: spec.topic.clone(),
                queue_id: spec.queue_id,
                queue_offset: at,
                max_msg_nums: (end - at).min(PULL_BATCH) as i32,
                // The request carries its subscription: no registered consumer needed.
                sys_flag: pull_flag::SUBSCRIPTION,
                commit_offset: 0,
                suspend_timeout_millis: 0,
                subscription: Some(spec.subscription.clone()),
                sub_version: Some(0),
                expression_type: Some(spec.expression_type.clone()),
                max_msg_bytes: None,
            },
        );
        let resp = client
            .invoke(&spec.addr, req, spec.timeout)
            .await
            .map_err(|e| e.to_string())?;
        let next = resp
            .decode_header::<PullMessageResponseHeader>()
            .map_or(at, |h| h.next_begin_offset);
        match resp.code {
            response::SUCCESS => {
                bodies.push(resp.body);
                if next <= at {
                    break;
                }
                at = next;
            }
            // Everything scanned was filtered out: go on from where the broker stopped.
            response::PULL_RETRY_IMMEDIATELY if next > at => at = next,
            response::PULL_NOT_FOUND | response::PULL_RETRY_IMMEDIATELY => break,
            response::PULL_OFFSET_MOVED => return Ok(Window::Moved { at, next }),
            code => {
                return Err(format!(
                    "pull of {}:{} at {at} from {} answered {code}: {}",
                    spec.topic,
                    spec.queue_id,
                    spec.addr,
                    resp.remark.unwrap_or_default()
                ))
            }
        }
    }
    Ok(Window::Bodies(bodies))
}

/// Pulls offsets `[start, end)` with up to `concurrency` pulls in flight; returns each
/// window as `(from, end, outcome)`, in offset order.
pub async fn pull_range(
    client: &RemotingClient,
    spec: Arc<PullSpec>,
    start: i64,
    end: i64,
    concurrency: usize,
) -> Result<Vec<(i64, i64, Window)>, String> {
    let mut results = BTreeMap::new();
    let mut tasks = tokio::task::JoinSet::new();
    let mut next_window = start;
    loop {
        while tasks.len() < concurrency.max(1) && next_window < end {
            let w_end = (next_window + PULL_BATCH).min(end);
            let (c, s, from) = (client.clone(), spec.clone(), next_window);
            tasks.spawn(async move { (from, w_end, pull_window(c, s, from, w_end).await) });
            next_window = w_end;
        }
        let Some(joined) = tasks.join_next().await else {
            break;
        };
        let (from, w_end, outcome) = joined.map_err(|e| e.to_string())?;
        results.insert(from, (w_end, outcome?));
    }
    Ok(results
        .into_iter()
        .map(|(from, (w_end, w))| (from, w_end, w))
        .collect())
}
