//! Log output of the native side (servers, transport), to stderr.

use pyo3::prelude::*;

/// Starts logging at `level` (error, warn, info, debug, trace); `RUST_LOG` overrides it.
/// Only the first call has an effect.
#[pyfunction]
#[pyo3(signature = (level="info"))]
pub fn init_logging(level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
