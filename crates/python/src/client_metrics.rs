//! Producers' send metrics and push consumers' listener times, counted natively: a send
//! records with one short lock and a few additions, from whichever thread ends it, without
//! the GIL, and a run of listener calls records in one call (prometheus_client's Python
//! histogram cost a consumer more than its whole offset bookkeeping); `rocketpy.metrics`
//! turns the tables into Prometheus families (`rocketmq_send_cost_time`,
//! `rocketpy_client_messages_sent_total`, `rocketpy_client_send_failures_total`,
//! `rocketmq_process_time`) when scraped. Counting happens only once Python turned it on
//! ([`enable_send_metrics`]).
//!
//! The table is per process: a child after fork() starts from zero (its own counters).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use pyo3::prelude::*;

use crate::process::PerProcess;

/// Upper bounds of the send-cost buckets in milliseconds (RocketMQ 5.x clients'), then +Inf.
pub const BUCKETS_MS: [f64; 7] = [1.0, 5.0, 10.0, 20.0, 50.0, 200.0, 500.0];

/// Attempts of one (client, topic, outcome).
#[derive(Default, Clone)]
struct SendStats {
    /// Attempts per bucket (not cumulative), the last one +Inf.
    buckets: [u64; BUCKETS_MS.len() + 1],
    sum_ms: f64,
    /// Messages the broker stored (successes) or failed attempts (failures).
    messages: u64,
}

/// client id -> topic -> [failure, success].
type Table = HashMap<String, HashMap<String, [SendStats; 2]>>;

static TABLE: PerProcess<Mutex<Table>> = PerProcess::new();
static ENABLED: AtomicBool = AtomicBool::new(false);

/// (client id, consumer group, topic) -> listener calls [failed, succeeded].
type ProcessTable = HashMap<(String, String, String), [SendStats; 2]>;

static PROCESS: PerProcess<Mutex<ProcessTable>> = PerProcess::new();

/// The bucket of `ms` (the last one +Inf).
fn bucket_of(ms: f64) -> usize {
    BUCKETS_MS
        .iter()
        .position(|&b| ms <= b)
        .unwrap_or(BUCKETS_MS.len())
}

/// Records one send attempt of `messages` messages that took `elapsed`.
pub fn record(client_id: &str, topic: &str, elapsed: Duration, ok: bool, messages: u64) {
    if !ENABLED.load(Ordering::Relaxed) {
        return;
    }
    let ms = elapsed.as_secs_f64() * 1000.0;
    let bucket = bucket_of(ms);
    let mut table = TABLE
        .get(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    // Look-ups borrow the names; they are copied once, for a new client or topic.
    if !table.contains_key(client_id) {
        table.insert(client_id.to_owned(), HashMap::new());
    }
    let topics = table.get_mut(client_id).expect("inserted above");
    if !topics.contains_key(topic) {
        topics.insert(topic.to_owned(), Default::default());
    }
    let stats = &mut topics.get_mut(topic).expect("inserted above")[usize::from(ok)];
    stats.buckets[bucket] += 1;
    stats.sum_ms += ms;
    stats.messages += if ok { messages } else { 1 };
}

/// Turns counting on (`rocketpy.metrics` does when `prometheus_client` is there).
#[pyfunction]
pub fn enable_send_metrics() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Records one send attempt made in Python (see [`record`]).
#[pyfunction]
pub fn record_send(client_id: &str, topic: &str, elapsed_s: f64, ok: bool, messages: u64) {
    let elapsed = Duration::try_from_secs_f64(elapsed_s).unwrap_or_default();
    record(client_id, topic, elapsed, ok, messages);
}

/// One row of [`send_metrics`]: client id, topic, success, per-bucket attempts (not
/// cumulative; the last one +Inf), sum of milliseconds, messages stored or failed attempts.
type Row = (String, String, bool, Vec<u64>, f64, u64);

/// A copy of `table`, taken without the GIL (a send ending on an I/O thread may hold it).
fn snapshot<T: Clone + Default + Send + Sync>(
    py: Python<'_>,
    table: &'static PerProcess<Mutex<T>>,
) -> T {
    py.detach(|| {
        table
            .get(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    })
}

/// The outcomes that were counted: (success, per-bucket counts, sum of ms, messages).
fn counted(outcomes: [SendStats; 2]) -> impl Iterator<Item = (bool, Vec<u64>, f64, u64)> {
    outcomes
        .into_iter()
        .enumerate()
        .filter(|(_, s)| s.buckets.iter().any(|&n| n > 0))
        .map(|(i, s)| (i == 1, s.buckets.to_vec(), s.sum_ms, s.messages))
}

/// Everything counted so far, a row per client, topic and outcome with attempts.
#[pyfunction]
pub fn send_metrics(py: Python<'_>) -> Vec<Row> {
    let mut rows = Vec::new();
    for (client_id, topics) in snapshot(py, &TABLE) {
        for (topic, outcomes) in topics {
            for (ok, buckets, sum_ms, messages) in counted(outcomes) {
                rows.push((
                    client_id.clone(),
                    topic.clone(),
                    ok,
                    buckets,
                    sum_ms,
                    messages,
                ));
            }
        }
    }
    rows
}

/// Records listener calls of one push consumer on one topic: `elapsed_s` holds each call's
/// seconds; `messages` the messages they were given in all.
#[pyfunction]
pub fn record_process(
    client_id: &str,
    group: &str,
    topic: &str,
    elapsed_s: Vec<f64>,
    ok: bool,
    messages: u64,
) {
    if !ENABLED.load(Ordering::Relaxed) || elapsed_s.is_empty() {
        return;
    }
    let mut table = PROCESS
        .get(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let key = (client_id.to_owned(), group.to_owned(), topic.to_owned());
    let stats = &mut table.entry(key).or_default()[usize::from(ok)];
    for s in elapsed_s {
        let ms = s.max(0.0) * 1000.0;
        stats.buckets[bucket_of(ms)] += 1;
        stats.sum_ms += ms;
    }
    stats.messages += messages;
}

/// One row of [`process_metrics`]: client id, group, topic, success, per-bucket calls (not
/// cumulative; the last one +Inf), sum of milliseconds, messages.
type ProcessRow = (String, String, String, bool, Vec<u64>, f64, u64);

/// Every listener call counted so far, a row per client, group, topic and outcome.
#[pyfunction]
pub fn process_metrics(py: Python<'_>) -> Vec<ProcessRow> {
    let mut rows = Vec::new();
    for ((client_id, group, topic), outcomes) in snapshot(py, &PROCESS) {
        for (ok, buckets, sum_ms, messages) in counted(outcomes) {
            let (c, g, t) = (client_id.clone(), group.clone(), topic.clone());
            rows.push((c, g, t, ok, buckets, sum_ms, messages));
        }
    }
    rows
}

/// The buckets' upper bounds in milliseconds (without +Inf).
#[pyfunction]
pub fn send_metric_buckets() -> Vec<f64> {
    BUCKETS_MS.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_and_counts() {
        enable_send_metrics();
        record("c", "T", Duration::from_micros(300), true, 10);
        record("c", "T", Duration::from_millis(7), true, 1);
        record("c", "T", Duration::from_secs(2), false, 5);
        let table = TABLE.get(Default::default).lock().unwrap().clone();
        let [failed, ok] = &table["c"]["T"];
        assert_eq!(ok.buckets[0], 1);
        assert_eq!(ok.buckets[2], 1);
        assert_eq!(ok.messages, 11);
        assert_eq!(failed.buckets[BUCKETS_MS.len()], 1);
        assert_eq!(failed.messages, 1);
    }

    #[test]
    fn a_run_of_listener_calls() {
        enable_send_metrics();
        record_process("c", "G", "T", vec![0.0002, 0.003, 9.0], true, 3);
        record_process("c", "G", "T", vec![], false, 0);
        let table = PROCESS.get(Default::default).lock().unwrap().clone();
        let [failed, ok] = &table[&("c".to_owned(), "G".to_owned(), "T".to_owned())];
        assert_eq!(ok.buckets[0], 1);
        assert_eq!(ok.buckets[1], 1);
        assert_eq!(ok.buckets[BUCKETS_MS.len()], 1);
        assert_eq!(ok.messages, 3);
        assert!((ok.sum_ms - 9003.2).abs() < 1e-6);
        assert_eq!(failed.buckets.iter().sum::<u64>(), 0);
    }
}
