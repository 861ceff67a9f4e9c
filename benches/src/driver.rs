//! What the load drivers (`src/bin/grpc_drive.rs`, `pull_drive.rs`, `pop_drive.rs`) share: a
//! single-threaded runtime, and one JSON line on stdout that `benches.grpc` reads —
//! `{"count": calls or messages, "seconds": ..., "cpu_seconds": the driver's own CPU}` —
//! or a message on stderr and exit status 2 (bad arguments) or 1 (the run failed); the
//! remoting drivers also share their options and their loops.

use std::future::Future;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The options of the remoting drivers: `--topic`, `--group`, `--inflight` (loops),
/// `--seconds` and `--messages` (they stop at whichever comes first).
pub struct Common {
    /// The broker's remoting address (the first argument).
    pub addr: String,
    pub topic: String,
    pub group: String,
    pub inflight: usize,
    pub seconds: f64,
    pub messages: u64,
}

/// Reads the address and `--flag value` pairs: the common options into [`Common`], the
/// others through `own(flag, value)`, which answers whether it knew the flag. `usage` is the
/// error when the address is missing; `--topic` and `--group` are required.
pub fn parse_common(
    usage: &str,
    mut own: impl FnMut(&str, &str) -> Result<bool, String>,
) -> Result<Common, String> {
    let mut it = std::env::args().skip(1);
    let mut c = Common {
        addr: it.next().ok_or(usage)?,
        topic: String::new(),
        group: String::new(),
        inflight: 16,
        seconds: 5.0,
        messages: u64::MAX,
    };
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--topic" => c.topic = value,
            "--group" => c.group = value,
            "--inflight" => c.inflight = number(&flag, &value)?,
            "--seconds" => c.seconds = number(&flag, &value)?,
            "--messages" => c.messages = number(&flag, &value)?,
            other if own(other, &value)? => {}
            other => return Err(format!("unknown option {other}")),
        }
    }
    if c.topic.is_empty() || c.group.is_empty() {
        return Err("--topic and --group are needed".into());
    }
    if c.inflight == 0 {
        return Err("--inflight must be at least 1".into());
    }
    Ok(c)
}

/// A remoting client with the defaults, on the current runtime.
pub fn remoting_client() -> rocketpy_remoting::RemotingClient {
    rocketpy_remoting::RemotingClient::new(
        rocketpy_remoting::ClientConfig::default(),
        None,
        tokio::runtime::Handle::current(),
    )
}

/// `value` of `flag` as a number.
pub fn number<T: FromStr>(flag: &str, value: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    value.parse().map_err(|e| format!("{flag} {value}: {e}"))
}

/// Runs `c.inflight` loops made by `make(i, until, read)` — loop `i` of them, the end of the
/// run, the messages all loops read so far — until all are done; the messages read and the
/// seconds it took.
pub async fn run_loops<F>(
    c: &Common,
    mut make: impl FnMut(usize, Instant, Arc<AtomicU64>) -> F,
) -> Result<(u64, f64), String>
where
    F: Future<Output = Result<(), String>> + Send + 'static,
{
    let read = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let until = started + Duration::from_secs_f64(c.seconds);
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..c.inflight {
        tasks.spawn(make(i, until, read.clone()));
    }
    while let Some(done) = tasks.join_next().await {
        done.map_err(|e| e.to_string())??;
    }
    Ok((
        read.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64(),
    ))
}

/// Parses the arguments with `parse`, runs `run` on them (it returns the count and the
/// seconds it took), and prints the outcome; `name` prefixes the errors.
pub fn main<A, E, F>(
    name: &str,
    parse: impl FnOnce() -> Result<A, String>,
    run: impl FnOnce(A) -> F,
) where
    E: std::fmt::Display,
    F: Future<Output = Result<(u64, f64), E>>,
{
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{name}: {e}");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let cpu0 = process_cpu_seconds();
    match rt.block_on(run(args)) {
        Ok((count, seconds)) => println!(
            "{{\"count\": {count}, \"seconds\": {seconds:.3}, \"cpu_seconds\": {:.3}}}",
            process_cpu_seconds() - cpu0
        ),
        Err(e) => {
            eprintln!("{name}: {e}");
            std::process::exit(1);
        }
    }
}

/// This process's CPU time (user + system) in seconds, from `/proc/self/stat`.
fn process_cpu_seconds() -> f64 {
    let text = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = text
        .rsplit_once(')')
        .map_or(vec![], |(_, r)| r.split_whitespace().collect());
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // USER_HZ is 100 on Linux builds for every architecture this project runs on.
    (ticks(11) + ticks(12)) / 100.0
}
