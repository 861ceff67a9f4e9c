//! What the load drivers (`src/bin/grpc_drive.rs`, `pull_drive.rs`) share: a
//! single-threaded runtime, and one JSON line on stdout that `benches.grpc` reads —
//! `{"count": calls or messages, "seconds": ..., "cpu_seconds": the driver's own CPU}` —
//! or a message on stderr and exit status 2 (bad arguments) or 1 (the run failed).

use std::future::Future;

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
