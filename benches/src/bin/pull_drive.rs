//! Drives a broker's 4.x PULL_MESSAGE from Rust, so that the server, not a Python consumer,
//! sets the pace — the 4.x counterpart of `grpc_drive`'s receive+ack: `benches.grpc`
//! measures the broker's CPU per message while this runs. `--inflight` loops share the
//! topic's `--queues` queues; on a queue read by `k` loops, loop `j` pulls the windows of 32
//! offsets `j, j + k, j + 2k, ...` from offset 0 on (a push consumer's pull service has one
//! pull in flight per queue; more let the broker, not the round trips, set the pace). It
//! stops when `--messages` are read (a backlog read to its end) or `--seconds` pass. The
//! pulls carry their subscription (`*`), so no consumer needs to be registered.
//!
//! Prints one JSON line: `{"count": messages, "seconds": ..., "cpu_seconds": this process's
//! CPU}`.
//!
//! ```text
//! pull_drive 127.0.0.1:10911 --topic T --group G --queues 4 --inflight 16 --messages 300000
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rocketpy_benches::driver::{self, Common};
use rocketpy_protocol::code::{request, response};
use rocketpy_protocol::flag::pull as pull_flag;
use rocketpy_protocol::header::{PullMessageRequestHeader, PullMessageResponseHeader};
use rocketpy_protocol::message::record::decode_all;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::RemotingClient;

/// Offsets per pull: what a broker returns at most.
const WINDOW: i64 = 32;

struct Args {
    c: Common,
    queues: i32,
}

fn parse_args() -> Result<Args, String> {
    let mut queues = 4;
    let c = driver::parse_common(
        "usage: pull_drive BROKER_HOST:PORT --topic T --group G [--option value]...",
        |flag, value| {
            if flag != "--queues" {
                return Ok(false);
            }
            queues = driver::number(flag, value)?;
            Ok(true)
        },
    )?;
    if queues < 1 || c.inflight < queues as usize {
        return Err("--queues must be at least 1 and --inflight at least --queues".into());
    }
    Ok(Args { c, queues })
}

/// One loop: pulls every `stride`-th window of queue `queue_id` from window `first` on,
/// until the queue has no more, the time is up or enough was read.
async fn pull_loop(
    client: RemotingClient,
    a: Arc<Args>,
    (queue_id, first, stride): (i32, i64, i64),
    until: Instant,
    read: Arc<AtomicU64>,
) -> Result<(), String> {
    let mut window = first;
    while Instant::now() < until && read.load(Ordering::Relaxed) < a.c.messages {
        let at = window * WINDOW;
        let req = RemotingCommand::request(request::PULL_MESSAGE).with_header(
            &PullMessageRequestHeader {
                consumer_group: a.c.group.clone(),
                topic: a.c.topic.clone(),
                queue_id,
                queue_offset: at,
                max_msg_nums: WINDOW as i32,
                sys_flag: pull_flag::SUBSCRIPTION,
                commit_offset: 0,
                suspend_timeout_millis: 0,
                subscription: Some("*".into()),
                sub_version: Some(0),
                expression_type: Some("TAG".into()),
                max_msg_bytes: None,
            },
        );
        let resp = client
            .invoke(&a.c.addr, req, Duration::from_secs(5))
            .await
            .map_err(|e| e.to_string())?;
        match resp.code {
            response::SUCCESS => {
                // A consumer decodes what it pulled; so does this.
                let n = decode_all(&resp.body).map_err(|e| e.to_string())?.len();
                read.fetch_add(n as u64, Ordering::Relaxed);
                window += stride;
            }
            // The queue's end (or nothing at this window): this loop is done.
            response::PULL_NOT_FOUND
            | response::PULL_RETRY_IMMEDIATELY
            | response::PULL_OFFSET_MOVED => return Ok(()),
            code => {
                let next = resp
                    .decode_header::<PullMessageResponseHeader>()
                    .map_or(at, |h| h.next_begin_offset);
                return Err(format!(
                    "pull of {}:{queue_id} at {at} answered {code} (next {next}): {}",
                    a.c.topic,
                    resp.remark.unwrap_or_default()
                ));
            }
        }
    }
    Ok(())
}

async fn run(a: Args) -> Result<(u64, f64), String> {
    let client = driver::remoting_client();
    let a = Arc::new(a);
    let (inflight, queues) = (a.c.inflight, a.queues as usize);
    driver::run_loops(&a.c, |i, until, read| {
        // Loop i reads queue i % queues; the queue's k loops take every k-th window.
        let queue = i % queues;
        let k = (inflight - queue).div_ceil(queues) as i64;
        let spread = (queue as i32, (i / queues) as i64, k);
        pull_loop(client.clone(), a.clone(), spread, until, read)
    })
    .await
}

fn main() {
    rocketpy_benches::driver::main("pull_drive", parse_args, run);
}
