//! Drives a broker's POP_MESSAGE and BATCH_ACK_MESSAGE from Rust over the 4.x remoting
//! protocol: the broker work of a 5.x receive + ack (the pop's checkpoint, the batch ack's
//! revive record) without gRPC and without converting messages. `benches.grpc` measures the
//! broker's CPU per message while this runs, between the 4.x pull (`pull_drive`) and the 5.x
//! receive + ack (`grpc_drive`), so the table shows what the pop protocol itself costs and what
//! the gRPC layer adds. Each of `--inflight` loops pops up to 32 messages from any queue,
//! decodes them (as a client would) and acks them all in one BATCH_ACK_MESSAGE, as the proxy
//! does for an AckMessage. It stops when `--messages` are read or `--seconds` pass.
//!
//! Prints one JSON line: `{"count": messages, "seconds": ..., "cpu_seconds": this process's
//! CPU}`.
//!
//! ```text
//! pop_drive 127.0.0.1:10911 --topic T --group G --broker-name broker-a --inflight 16
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rocketpy_benches::driver::{self, Common};
use rocketpy_protocol::body::batch_ack::{AckBits, BatchAck, BatchAckMessageRequestBody};
use rocketpy_protocol::code::{request, response};
use rocketpy_protocol::header::{PopMessageRequestHeader, PopMessageResponseHeader};
use rocketpy_protocol::message::record::decode_all;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::RemotingClient;

/// Messages per pop: what a broker returns at most (and a 5.x push consumer asks for).
const BATCH: i32 = 32;
/// Invisible time of the popped messages (they are acked long before it ends).
const INVISIBLE_MS: i64 = 60_000;
/// The `retry` flag of a message popped from the topic itself.
const NORMAL_TOPIC: &str = "0";

struct Args {
    c: Common,
    broker_name: String,
}

fn parse_args() -> Result<Args, String> {
    let mut broker_name = String::new();
    let c = driver::parse_common(
        "usage: pop_drive BROKER_HOST:PORT --topic T --group G --broker-name B [--option value]...",
        |flag, value| {
            if flag != "--broker-name" {
                return Ok(false);
            }
            broker_name = value.to_owned();
            Ok(true)
        },
    )?;
    if broker_name.is_empty() {
        return Err("--broker-name is needed (the acks name the broker)".into());
    }
    Ok(Args { c, broker_name })
}

/// The first offset of each queue a pop read: `startOffsetInfo`'s `<flag> <queue> <offset>`
/// entries for the topic itself.
fn start_offsets(info: &str) -> Vec<(i32, i64)> {
    info.split(';')
        .filter_map(|entry| {
            let mut parts = entry.split(' ');
            let flag = parts.next()?;
            let queue = parts.next()?.parse().ok()?;
            let start = parts.next()?.parse().ok()?;
            (flag == NORMAL_TOPIC).then_some((queue, start))
        })
        .collect()
}

/// One loop: pops and acks until the topic has no more, the time is up or enough was read.
async fn pop_loop(
    client: RemotingClient,
    a: Arc<Args>,
    until: Instant,
    read: Arc<AtomicU64>,
) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| e.to_string();
    while Instant::now() < until && read.load(Ordering::Relaxed) < a.c.messages {
        let req =
            RemotingCommand::request(request::POP_MESSAGE).with_header(&PopMessageRequestHeader {
                consumer_group: a.c.group.clone(),
                topic: a.c.topic.clone(),
                queue_id: -1,
                max_msg_nums: BATCH,
                invisible_time: INVISIBLE_MS,
                poll_time: 0,
                born_time: None,
                init_mode: 0,
                exp_type: Some("TAG".into()),
                exp: Some("*".into()),
                order: Some(false),
                attempt_id: None,
            });
        let resp = client
            .invoke(&a.c.addr, req, Duration::from_secs(5))
            .await
            .map_err(|e| fail(&e))?;
        match resp.code {
            response::SUCCESS => {}
            // Nothing left to pop: this loop is done.
            response::PULL_NOT_FOUND | response::POLLING_TIMEOUT => return Ok(()),
            code => {
                return Err(format!(
                    "pop answered {code}: {}",
                    resp.remark.unwrap_or_default()
                ))
            }
        }
        let h: PopMessageResponseHeader = resp.decode_header().map_err(|e| fail(&e))?;
        let records = decode_all(&resp.body).map_err(|e| fail(&e))?;
        // One BatchAck per queue read, its bits the offsets past the queue's first.
        let mut acks: Vec<(BatchAck, Vec<usize>)> = Vec::new();
        for (queue_id, start) in start_offsets(h.start_offset_info.as_deref().unwrap_or("")) {
            let bits: Vec<usize> = records
                .iter()
                .filter(|r| r.queue_id == queue_id)
                .map(|r| (r.queue_offset - start) as usize)
                .collect();
            let ack = BatchAck {
                consumer_group: a.c.group.clone(),
                topic: a.c.topic.clone(),
                retry: NORMAL_TOPIC.into(),
                start_offset: start,
                queue_id,
                revive_queue_id: h.revive_qid,
                pop_time: h.pop_time,
                invisible_time: h.invisible_time,
                bit_set: AckBits::default(),
            };
            acks.push((ack, bits));
        }
        let body = BatchAckMessageRequestBody {
            broker_name: a.broker_name.clone(),
            acks: acks
                .into_iter()
                .map(|(mut ack, bits)| {
                    ack.bit_set = AckBits::from_indexes(bits);
                    ack
                })
                .collect(),
        };
        let json = serde_json::to_vec(&body).map_err(|e| fail(&e))?;
        let req = RemotingCommand::request(request::BATCH_ACK_MESSAGE).with_body(json);
        let resp = client
            .invoke(&a.c.addr, req, Duration::from_secs(5))
            .await
            .map_err(|e| fail(&e))?;
        if resp.code != response::SUCCESS {
            return Err(format!(
                "batch ack answered {}: {}",
                resp.code,
                resp.remark.unwrap_or_default()
            ));
        }
        read.fetch_add(records.len() as u64, Ordering::Relaxed);
    }
    Ok(())
}

async fn run(a: Args) -> Result<(u64, f64), String> {
    let client = driver::remoting_client();
    let a = Arc::new(a);
    driver::run_loops(&a.c, |_, until, read| {
        pop_loop(client.clone(), a.clone(), until, read)
    })
    .await
}

fn main() {
    rocketpy_benches::driver::main("pop_drive", parse_args, run);
}

#[cfg(test)]
mod tests {
    use super::start_offsets;

    #[test]
    fn start_offsets_are_the_topics_own_queues() {
        // The pop retry topic's entries (flag 1) and malformed ones are not the topic's.
        let info = "0 3 64;1 0 7;0 1 0;0 x 5;0 2";
        assert_eq!(start_offsets(info), vec![(3, 64), (1, 0)]);
        assert!(start_offsets("").is_empty());
    }
}
