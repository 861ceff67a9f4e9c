//! Prometheus export for the name server and the broker, under RocketMQ 5.x's metric names,
//! labels and config keys (`metricsExporterType=PROM`, `metricsPromExporterPort`), so the
//! dashboards and alerts written for a 5.x cluster read ours.
//!
//! - [`config`]: the exporter keys and their values.
//! - [`exporter`]: the HTTP endpoint that renders a registry on each scrape.
//! - [`rpc`]: `rocketmq_rpc_latency_milliseconds`, fed by the remoting layer's request observer.
//! - [`process`]: the usual `process_*` metrics, read from `/proc` at scrape time.
//! - [`collect`]: writing gauges computed at scrape time (lag, sizes, connections).
//!
//! Counting on hot paths is plain atomics behind a label lookup per request (never per
//! message); everything that can be computed from state is computed when scraped instead.

pub mod collect;
pub mod config;
pub mod exporter;
pub mod process;
pub mod rpc;

pub use config::{ExporterSettings, MetricsExporterType};
pub use exporter::MetricsServer;
pub use prometheus_client;
