//! The process metrics every Prometheus client library exports (`process_cpu_seconds_total`,
//! `process_resident_memory_bytes`, `process_virtual_memory_bytes`, `process_open_fds`,
//! `process_max_fds`, `process_start_time_seconds`, plus `process_threads`), read from
//! `/proc/self` when scraped. On systems without `/proc` the family is simply absent.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;

use crate::collect::{counter_f64, gauge};

/// Collects the process metrics of the calling process.
#[derive(Debug, Default)]
pub struct ProcessCollector;

/// One reading of `/proc/self`.
#[derive(Debug, Default, Clone, PartialEq)]
struct Reading {
    cpu_seconds: f64,
    threads: i64,
    start_time_seconds: f64,
    virtual_bytes: i64,
    resident_bytes: i64,
    open_fds: i64,
    max_fds: i64,
}

fn sysconf(name: libc::c_int) -> i64 {
    // SAFETY: sysconf has no preconditions.
    #[allow(clippy::unnecessary_cast)] // c_long is i32 on some targets
    let v = unsafe { libc::sysconf(name) } as i64;
    v
}

/// Parses `/proc/self/stat` text (fields after the parenthesised command, which may itself
/// hold spaces and parentheses, so it is cut at the last `)`).
fn parse_stat(stat: &str, ticks: f64, page: i64, boot_time: f64) -> Option<Reading> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // proc(5) numbers fields from 1; `rest` starts at field 3 (state).
    let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<i64>().ok());
    Some(Reading {
        cpu_seconds: (field(14)? + field(15)?) as f64 / ticks,
        threads: field(20)?,
        start_time_seconds: boot_time + field(22)? as f64 / ticks,
        virtual_bytes: field(23)?,
        resident_bytes: field(24)? * page,
        ..Reading::default()
    })
}

fn boot_time() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    stat.lines()
        .find_map(|line| line.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

fn read() -> Option<Reading> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let ticks = sysconf(libc::_SC_CLK_TCK).max(1) as f64;
    let page = sysconf(libc::_SC_PAGESIZE).max(1);
    let mut reading = parse_stat(&stat, ticks, page, boot_time()?)?;
    reading.open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count() as i64;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        reading.max_fds = i64::try_from(limit.rlim_cur).unwrap_or(i64::MAX);
    }
    Some(reading)
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(r) = read() else {
            return Ok(());
        };
        let e = &mut encoder;
        counter_f64(
            e,
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds",
            r.cpu_seconds,
        )?;
        gauge(
            e,
            "process_resident_memory_bytes",
            "Resident memory size in bytes",
            r.resident_bytes,
        )?;
        gauge(
            e,
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes",
            r.virtual_bytes,
        )?;
        gauge(
            e,
            "process_start_time_seconds",
            "Start time of the process since the Unix epoch in seconds",
            r.start_time_seconds,
        )?;
        gauge(
            e,
            "process_open_fds",
            "Number of open file descriptors",
            r.open_fds,
        )?;
        gauge(
            e,
            "process_max_fds",
            "Maximum number of open file descriptors",
            r.max_fds,
        )?;
        gauge(
            e,
            "process_threads",
            "Number of OS threads in the process",
            r.threads,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_survive_odd_command_names() {
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
        // utime stime cutime cstime priority nice threads itrealvalue starttime vsize rss ...
        let stat = "42 (a) b) (c) S 1 42 42 0 -1 4194560 10 0 0 0 250 50 0 0 20 0 7 0 1000 123456 30 18446744073709551615";
        let r = parse_stat(stat, 100.0, 4096, 1_700_000_000.0).unwrap();
        assert_eq!(r.cpu_seconds, 3.0);
        assert_eq!(r.threads, 7);
        assert_eq!(r.start_time_seconds, 1_700_000_010.0);
        assert_eq!(r.virtual_bytes, 123_456);
        assert_eq!(r.resident_bytes, 30 * 4096);
        assert!(parse_stat("garbage", 100.0, 4096, 0.0).is_none());
    }

    #[test]
    fn reads_this_process() {
        let r = read().expect("/proc is mounted on the test machine");
        assert!(r.resident_bytes > 0 && r.threads >= 1 && r.open_fds >= 3);
    }
}
