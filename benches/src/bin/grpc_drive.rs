//! Drives a broker's gRPC endpoint (the RocketMQ 5.x protocol) from Rust, so that the
//! server, not a Python client, sets the pace: `benches.grpc` measures the broker's CPU per
//! message while this runs. Modes:
//!
//! - `receive`: `--inflight` loops, each receiving `--batch` messages from one of the
//!   topic's queues (QueryAssignment's) and acking them with one AckMessage, until
//!   `--seconds` pass or `--messages` are acked (a backlog read to its end);
//!   `--ack no` leaves the messages unacked (they come back after their 30 s invisible
//!   time): the receive's share of the cost;
//! - `empty`: `--inflight` loops of Heartbeat, a call that asks the server for nothing.
//!
//! Prints one JSON line: `{"count": calls or messages, "seconds": ..., "cpu_seconds": this
//! process's CPU}`.
//!
//! ```text
//! grpc_drive receive 127.0.0.1:8081 --topic T --group G --inflight 16 --seconds 8
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rocketpy_proxy::ack_wire::{AckMessageEntry, AckMessageRequest};
use rocketpy_proxy::pb;
use rocketpy_proxy::pb::messaging_service_client::MessagingServiceClient;
use rocketpy_proxy::receive_response::Content;
use tonic::transport::Channel;

struct Args {
    mode: String,
    endpoint: String,
    topic: String,
    group: String,
    inflight: usize,
    seconds: f64,
    batch: i32,
    messages: u64,
    ack: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mode = it
        .next()
        .ok_or("usage: grpc_drive receive|empty HOST:PORT [--option value]...")?;
    let endpoint = it.next().ok_or("the endpoint (HOST:PORT) is missing")?;
    let mut a = Args {
        mode,
        endpoint,
        topic: String::new(),
        group: String::new(),
        inflight: 8,
        seconds: 5.0,
        batch: 32,
        messages: u64::MAX,
        ack: true,
    };
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
        match flag.as_str() {
            "--topic" => a.topic = value,
            "--group" => a.group = value,
            "--inflight" => a.inflight = value.parse().map_err(|e| bad(&e))?,
            "--seconds" => a.seconds = value.parse().map_err(|e| bad(&e))?,
            "--batch" => a.batch = value.parse().map_err(|e| bad(&e))?,
            "--messages" => a.messages = value.parse().map_err(|e| bad(&e))?,
            "--ack" => {
                a.ack = match value.as_str() {
                    "yes" => true,
                    "no" => false,
                    _ => return Err(format!("--ack {value}: yes or no")),
                }
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    if !matches!(a.mode.as_str(), "receive" | "empty") {
        return Err(format!("unknown mode {} (receive or empty)", a.mode));
    }
    if a.mode == "receive" && (a.topic.is_empty() || a.group.is_empty()) {
        return Err("receive needs --topic and --group".into());
    }
    Ok(a)
}

fn request<T>(message: T, client_id: &str) -> tonic::Request<T> {
    let mut r = tonic::Request::new(message);
    let md = r.metadata_mut();
    md.insert("x-mq-client-id", client_id.parse().expect("ascii"));
    md.insert("x-mq-language", "RUST".parse().expect("ascii"));
    r
}

fn resource(name: &str) -> Option<pb::Resource> {
    Some(pb::Resource {
        name: name.to_owned(),
        ..Default::default()
    })
}

/// One receive-and-ack loop until `until` or until all loops together (`acked`) have acked
/// `--messages`; the messages it acked.
async fn receive_loop(
    mut client: MessagingServiceClient<Channel>,
    a: &Args,
    queue: pb::MessageQueue,
    client_id: &str,
    until: Instant,
    acked: &AtomicU64,
) -> Result<u64, tonic::Status> {
    let mut count = 0;
    while Instant::now() < until && acked.load(Ordering::Relaxed) < a.messages {
        let req = pb::ReceiveMessageRequest {
            group: resource(&a.group),
            message_queue: Some(queue.clone()),
            filter_expression: Some(pb::FilterExpression {
                r#type: pb::FilterType::Tag as i32,
                expression: "*".into(),
            }),
            batch_size: a.batch,
            invisible_duration: Some(prost_types::Duration {
                seconds: 30,
                nanos: 0,
            }),
            auto_renew: false,
            long_polling_timeout: Some(prost_types::Duration {
                seconds: 1,
                nanos: 0,
            }),
            ..Default::default()
        };
        let mut stream = client
            .receive_message(request(req, client_id))
            .await?
            .into_inner();
        let mut entries = Vec::new();
        while let Some(r) = stream.message().await? {
            if let Some(Content::Message(m)) = r.content {
                let m = m
                    .decode()
                    .map_err(|e| tonic::Status::internal(e.to_string()))?;
                let sp = m.system_properties.unwrap_or_default();
                entries.push(AckMessageEntry {
                    message_id: sp.message_id.into(),
                    receipt_handle: sp.receipt_handle.unwrap_or_default().into(),
                    ..Default::default()
                });
            }
        }
        if entries.is_empty() {
            continue;
        }
        let n = entries.len() as u64;
        if !a.ack {
            count += n;
            acked.fetch_add(n, Ordering::Relaxed);
            continue;
        }
        let ack = AckMessageRequest {
            group: resource(&a.group),
            topic: resource(&a.topic),
            entries,
        };
        let status = client
            .ack_message(request(ack, client_id))
            .await?
            .into_inner()
            .status
            .unwrap_or_default();
        if status.code != pb::Code::Ok as i32 {
            return Err(tonic::Status::internal(format!("ack failed: {status:?}")));
        }
        count += n;
        acked.fetch_add(n, Ordering::Relaxed);
    }
    Ok(count)
}

async fn empty_loop(
    mut client: MessagingServiceClient<Channel>,
    client_id: &str,
    until: Instant,
) -> Result<u64, tonic::Status> {
    let mut count = 0;
    while Instant::now() < until {
        let beat = pb::HeartbeatRequest {
            client_type: pb::ClientType::Producer as i32,
            ..Default::default()
        };
        client.heartbeat(request(beat, client_id)).await?;
        count += 1;
    }
    Ok(count)
}

async fn run(a: Args) -> Result<(u64, f64), Box<dyn std::error::Error>> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", a.endpoint))?
        .tcp_nodelay(true)
        // grpc-java's flow-control window (the official 5.x clients' transport), 1 MiB per
        // stream and per connection: hyper's 64 KiB default would have the server wait for
        // window updates with a few receives of 32 messages in flight.
        .initial_stream_window_size(1 << 20)
        .initial_connection_window_size(1 << 20)
        .connect()
        .await?;
    let client = MessagingServiceClient::new(channel);
    let client_id = format!("grpc-drive-{}", std::process::id());
    let queues = if a.mode == "receive" {
        let (host, port) = a.endpoint.rsplit_once(':').ok_or("endpoint is HOST:PORT")?;
        let endpoints = pb::Endpoints {
            scheme: pb::AddressScheme::IPv4 as i32,
            addresses: vec![pb::Address {
                host: host.to_owned(),
                port: port.parse()?,
            }],
        };
        let qa = pb::QueryAssignmentRequest {
            topic: resource(&a.topic),
            group: resource(&a.group),
            endpoints: Some(endpoints),
        };
        let got = client
            .clone()
            .query_assignment(request(qa, &client_id))
            .await?
            .into_inner();
        let queues: Vec<_> = got
            .assignments
            .into_iter()
            .filter_map(|x| x.message_queue)
            .collect();
        if queues.is_empty() {
            return Err(format!("no assignment: {:?}", got.status).into());
        }
        queues
    } else {
        Vec::new()
    };
    let started = Instant::now();
    let until = started + Duration::from_secs_f64(a.seconds);
    let a = Arc::new(a);
    let acked = Arc::new(AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..a.inflight {
        let (client, a, id) = (client.clone(), a.clone(), client_id.clone());
        let acked = acked.clone();
        let queue = queues.get(i % queues.len().max(1)).cloned();
        tasks.spawn(async move {
            match queue {
                Some(q) => receive_loop(client, &a, q, &id, until, &acked).await,
                None => empty_loop(client, &id, until).await,
            }
        });
    }
    let mut count = 0;
    while let Some(done) = tasks.join_next().await {
        count += done??;
        if acked.load(Ordering::Relaxed) >= a.messages {
            // The backlog is read: the other loops may be waiting in a long poll of an empty
            // topic, which would count as time (dropping the set cancels them).
            count = acked.load(Ordering::Relaxed);
            break;
        }
    }
    Ok((count, started.elapsed().as_secs_f64()))
}

fn main() {
    rocketpy_benches::driver::main("grpc_drive", parse_args, run);
}
