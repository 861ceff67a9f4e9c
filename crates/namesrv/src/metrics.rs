//! The name server's metrics: request latency (`rocketmq_rpc_latency_milliseconds`), the route
//! table's size (`rocketmq_topic_number`, `rocketmq_broker_number`) and the process metrics, with
//! the constant labels `node_type="namesrv"` and `metricsLabel`'s pairs.

use std::sync::{Arc, Weak};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::registry::Registry;
use rocketpy_metrics::collect::gauge;
use rocketpy_metrics::process::ProcessCollector;
use rocketpy_metrics::rpc::RpcMetrics;
use rocketpy_metrics::ExporterSettings;
use rocketpy_remoting::ProcessorTable;

use crate::RouteInfoManager;

/// Reads the route table when scraped.
#[derive(Debug)]
struct RoutesCollector {
    routes: Weak<RouteInfoManager>,
}

impl Collector for RoutesCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(routes) = self.routes.upgrade() else {
            return Ok(());
        };
        gauge(
            &mut encoder,
            "rocketmq_topic_number",
            "Topics with a route",
            routes.topic_list().len() as i64,
        )?;
        gauge(
            &mut encoder,
            "rocketmq_broker_number",
            "Live brokers registered",
            routes.live_brokers().len() as i64,
        )
    }
}

/// The registry to serve; request latency is observed through `table`.
pub fn registry(
    exporter: &ExporterSettings,
    routes: &Arc<RouteInfoManager>,
    table: &mut ProcessorTable,
) -> Registry {
    let mut registry = exporter.registry(vec![("node_type", "namesrv".into())]);
    table.observe(Arc::new(RpcMetrics::register(&mut registry)));
    registry.register_collector(Box::new(RoutesCollector {
        routes: Arc::downgrade(routes),
    }));
    registry.register_collector(Box::new(ProcessCollector));
    registry
}
