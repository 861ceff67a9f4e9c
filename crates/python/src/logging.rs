//! Log records of the native side (transport, servers, store).
//!
//! By default they go to Python's `logging` (loggers `rocketpy.native.<crate>`), at WARN and
//! above, so a Python application sees them where it sees everything else and no file or
//! stream is written behind its back. The `rocketpy` command switches to stderr
//! ([`init_logging`]), where a server's records are cheaper to write.
//!
//! Records reach Python on the callback thread: a thread that emits one (an I/O thread, a
//! store thread) never takes the GIL. Beyond [`MAX_PENDING`] queued records, new ones are
//! dropped and counted, and the count is logged with the next record that gets through.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

use pyo3::prelude::*;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::{filter_fn, EnvFilter};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::{reload, Registry};

use crate::callbacks;

/// Records queued for Python at most.
const MAX_PENDING: usize = 10_000;

static TO_STDERR: AtomicBool = AtomicBool::new(false);
static PENDING: AtomicUsize = AtomicUsize::new(0);
static DROPPED: AtomicUsize = AtomicUsize::new(0);
static FILTER: OnceLock<reload::Handle<EnvFilter, Registry>> = OnceLock::new();

fn filter(level: &str) -> EnvFilter {
    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level))
}

/// Installs the process's log subscriber (module import): records to Python `logging` at
/// WARN and above, or what `RUST_LOG` says.
pub fn install() {
    let (level, handle) = reload::Layer::new(filter("warn"));
    // Colours only on a terminal: a log redirected to a file stays plain text.
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .with_filter(filter_fn(|_| TO_STDERR.load(Ordering::Relaxed)));
    let python = ToPython.with_filter(filter_fn(|_| !TO_STDERR.load(Ordering::Relaxed)));
    let subscriber = Registry::default().with(level).with(stderr).with(python);
    if tracing::subscriber::set_global_default(subscriber).is_ok() {
        let _ = FILTER.set(handle);
    }
}

/// Sets the native log level (error, warn, info, debug, trace; `RUST_LOG` overrides it) and
/// where records go: stderr (`stderr=True`, what the `rocketpy` command uses) or Python's
/// `logging` (loggers named `rocketpy.native.*`).
#[pyfunction]
#[pyo3(signature = (level="info", stderr=true))]
pub fn init_logging(level: &str, stderr: bool) -> PyResult<()> {
    let new = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(level))
        .map_err(|e| crate::errors::ConfigError::new_err(format!("log level {level:?}: {e}")))?;
    TO_STDERR.store(stderr, Ordering::Relaxed);
    if let Some(handle) = FILTER.get() {
        handle
            .reload(new)
            .map_err(|e| crate::errors::ConfigError::new_err(e.to_string()))?;
    }
    Ok(())
}

/// Forwards records to Python `logging` through the callback thread.
struct ToPython;

impl<S: Subscriber> Layer<S> for ToPython {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if PENDING.fetch_add(1, Ordering::Relaxed) >= MAX_PENDING {
            PENDING.fetch_sub(1, Ordering::Relaxed);
            DROPPED.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let meta = event.metadata();
        let mut text = Text::default();
        event.record(&mut text);
        let level = python_level(*meta.level());
        // "rocketpy_remoting::connection" -> "rocketpy.native.remoting"
        let krate = meta.target().split("::").next().unwrap_or("");
        let name = format!(
            "rocketpy.native.{}",
            krate.strip_prefix("rocketpy_").unwrap_or(krate)
        );
        callbacks::submit(move |py| {
            PENDING.fetch_sub(1, Ordering::Relaxed);
            let dropped = DROPPED.swap(0, Ordering::Relaxed);
            let mut message = text.finish();
            if dropped > 0 {
                let _ = write!(
                    message,
                    " ({dropped} earlier log records dropped: too many)"
                );
            }
            if let Err(e) = emit(py, &name, level, &message) {
                e.write_unraisable(py, None);
            }
        });
    }
}

fn emit(py: Python<'_>, name: &str, level: u8, message: &str) -> PyResult<()> {
    let logger = py.import("logging")?.call_method1("getLogger", (name,))?;
    logger.call_method1("log", (level, "%s", message))?;
    Ok(())
}

fn python_level(level: Level) -> u8 {
    match level {
        Level::ERROR => 40,
        Level::WARN => 30,
        Level::INFO => 20,
        Level::DEBUG => 10,
        Level::TRACE => 5,
    }
}

/// A record's message followed by its other fields as `name=value`.
#[derive(Default)]
struct Text {
    message: String,
    fields: String,
}

impl Text {
    fn finish(mut self) -> String {
        if !self.fields.is_empty() {
            if !self.message.is_empty() {
                self.message.push(' ');
            }
            self.message.push_str(&self.fields);
        }
        self.message
    }
}

impl Visit for Text {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            self.record_debug(field, &format_args!("{value}"));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            if !self.fields.is_empty() {
                self.fields.push(' ');
            }
            let _ = write!(self.fields, "{}={value:?}", field.name());
        }
    }
}
