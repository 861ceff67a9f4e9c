//! What the broker's Prometheus counting adds to a batch send, measured in-process where the
//! machine's noise is smallest: `counted` appends a batch of 100 messages of 100 B and then
//! does everything a send request does for metrics (the request timing, the message type,
//! `rocketmq_messages_in`, `rocketmq_throughput_in`, `rocketmq_message_size` and the
//! `rocketmq_rpc_latency_milliseconds` histogram); `plain` only appends. Printed: the medians of 9 paired
//! rounds and counted/plain (target >= 0.97), and the counting's own cost per request.

use std::time::{Duration, Instant};

use prometheus_client::registry::Registry;
use rocketpy_benches::measure::{paired, rate};
use rocketpy_benches::{message, open_store};
use rocketpy_broker::metrics::{labels, BrokerMetrics};
use rocketpy_metrics::rpc::RpcMetrics;
use rocketpy_remoting::{RequestObserver, RequestOutcome, RequestRecord};

const BATCH: usize = 100;
const BATCHES: usize = 3_000;

fn count(metrics: &BrokerMetrics, rpc: &RpcMetrics, props: &str, started: Instant) {
    let kind = labels::message_type(props, false);
    metrics.on_put("BenchTopic", kind, BATCH as u64, (BATCH * 200) as u64);
    rpc.observe(RequestRecord {
        request_code: 320,
        response_code: 0,
        held: false,
        outcome: RequestOutcome::Success,
        elapsed: started.elapsed(),
    });
}

fn main() {
    let mut registry = Registry::default();
    let metrics = BrokerMetrics::register(&mut registry);
    let rpc = RpcMetrics::register(&mut registry);
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_store(dir.path(), 1 << 30);
    let batch: Vec<_> = (0..BATCH)
        .map(|i| message("BenchTopic", (i % 8) as i32, 100))
        .collect();
    let props = batch[0].properties.clone();

    let mut counted = || {
        rate(BATCH * BATCHES, || {
            for _ in 0..BATCHES {
                let started = Instant::now();
                store.put_messages(&batch).expect("put");
                count(&metrics, &rpc, &props, started);
            }
        })
    };
    let mut plain = || {
        rate(BATCH * BATCHES, || {
            for _ in 0..BATCHES {
                store.put_messages(&batch).expect("put");
            }
        })
    };
    let r = paired(9, &mut counted, &mut plain);

    let n = 200_000;
    let started = Instant::now();
    for _ in 0..n {
        count(&metrics, &rpc, &props, started);
    }
    let per_request = started.elapsed().as_nanos() as f64 / n as f64;
    println!(
        "batch send of {BATCH} x 100 B: counted {:.0} msg/s | plain {:.0} msg/s | counted/plain = {:.3}; counting alone: {per_request:.0} ns per request ({:.2} ns per message)",
        r.a,
        r.b,
        r.ratio,
        per_request / BATCH as f64,
    );
    store.shutdown().expect("shutdown");
    std::thread::sleep(Duration::from_millis(10));
}
