//! The controller's Prometheus metrics (`metricsExporterType=PROM`), under the names and
//! labels RocketMQ 5.x's controller exports (`ControllerMetricsConstant`) where the meaning is
//! the same, plus rocketpy's own figures of each broker group's replicated state.
//!
//! RocketMQ's, as its OpenTelemetry Prometheus exporter writes them (no `rocketmq_` prefix):
//! - `role`: 1 while this controller leads the group, else 0. RocketMQ's differs: it
//!   reports DLedger's member state (0 unknown, 1 candidate, 2 follower, 3 leader).
//! - `active_broker_num{cluster,broker_set}`: brokers alive in this controller's heartbeat
//!   table (groups with none alive are left out, as in RocketMQ).
//! - `request_total{request_type,request_handle_status}`: requests served, by RocketMQ's
//!   `RequestType` name (`CONTROLLER_ELECT_MASTER`, `CONTROLLER_BROKER_HEARTBEAT`, ...; the
//!   peers' Raft traffic is not counted). `success` is an answer, whatever its code (as in
//!   RocketMQ, a refusal such as CONTROLLER_NOT_LEADER is an answer); `failed` is a request
//!   that could not be served (undecodable, refused heartbeat, Raft error, starting or
//!   stopping); `timeout` is a Raft wait that ran out, its outcome unknown.
//! - `request_latency_microseconds{request_type}`: handling time of the successful requests
//!   (RocketMQ's `request_latency`, unit µs, with its buckets from 1 µs to 10 s; the unit is
//!   in the name as the other rocketpy latencies, e.g. `rocketmq_rpc_latency_milliseconds`).
//! - `election_total{cluster,broker_set,election_result}`: elections decided on this
//!   controller (asked by brokers or admins, or triggered by the controller itself), by
//!   outcome: `new_master_elected` (SUCCESS), `keep_current_master` (2011),
//!   `no_master_elected` (2004, 2012). Answers that are no decision (not the leader, a
//!   timeout, the warm-up's refusal) are not elections.
//!
//! rocketpy's own, per broker group of this controller's applied state (possibly behind the
//! leader's on a follower), read when scraped: `rocketmq_controller_master_epoch`,
//! `rocketmq_controller_sync_state_set_epoch` and `rocketmq_controller_sync_state_set_size`,
//! labelled `cluster` and `broker_set`. Then the `process_*` metrics.
//!
//! Constant labels: `node_type="controller"` and `node_id` (this controller's id), as the
//! broker and the name server write theirs; RocketMQ's own `group` (`controllerDLegerGroup`),
//! `peer_id` and `address` (this controller's peer entry); then `metricsLabel`'s pairs. The
//! group is not written as `cluster`, which names the brokers' cluster in the samples above.

use std::sync::{Arc, Weak};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use rocketpy_metrics::collect::{gauge, gauge_family};
use rocketpy_metrics::process::ProcessCollector;
use rocketpy_metrics::ExporterSettings;
use rocketpy_protocol::code::controller::request as code;
use rocketpy_protocol::code::controller::response::{
    CONTROLLER_ELECT_MASTER_FAILED, CONTROLLER_MASTER_NOT_AVAILABLE, CONTROLLER_MASTER_STILL_EXIST,
};
use rocketpy_protocol::code::response::{SUCCESS, SYSTEM_ERROR};

use super::Shared;
use crate::result::ControllerResult;

/// RocketMQ's `ControllerMetricsManager` latency buckets, in microseconds: 1, 3, 5, 10, 30,
/// 50, 100, 300, 500 µs, the same in ms, 1, 3, 5, 10 s.
const LATENCY_BUCKETS_US: [f64; 22] = [
    1.0, 3.0, 5.0, 10.0, 30.0, 50.0, 100.0, 300.0, 500.0, 1e3, 3e3, 5e3, 1e4, 3e4, 5e4, 1e5, 3e5,
    5e5, 1e6, 3e6, 5e6, 1e7,
];

/// RocketMQ's `RequestType`: the name of each code its controller counts.
const REQUEST_TYPES: &[(i32, &str)] = &[
    (code::BROKER_HEARTBEAT, "CONTROLLER_BROKER_HEARTBEAT"),
    (
        code::CONTROLLER_ALTER_SYNC_STATE_SET,
        "CONTROLLER_ALTER_SYNC_STATE_SET",
    ),
    (code::CONTROLLER_ELECT_MASTER, "CONTROLLER_ELECT_MASTER"),
    (
        code::CONTROLLER_REGISTER_BROKER,
        "CONTROLLER_REGISTER_BROKER",
    ),
    (
        code::CONTROLLER_GET_REPLICA_INFO,
        "CONTROLLER_GET_REPLICA_INFO",
    ),
    (
        code::CONTROLLER_GET_METADATA_INFO,
        "CONTROLLER_GET_METADATA_INFO",
    ),
    (
        code::CONTROLLER_GET_SYNC_STATE_DATA,
        "CONTROLLER_GET_SYNC_STATE_DATA",
    ),
    (
        code::GET_BROKER_EPOCH_CACHE,
        "CONTROLLER_GET_BROKER_EPOCH_CACHE",
    ),
    (
        code::NOTIFY_BROKER_ROLE_CHANGED,
        "CONTROLLER_NOTIFY_BROKER_ROLE_CHANGED",
    ),
    (
        code::UPDATE_CONTROLLER_CONFIG,
        "CONTROLLER_UPDATE_CONTROLLER_CONFIG",
    ),
    (
        code::GET_CONTROLLER_CONFIG,
        "CONTROLLER_GET_CONTROLLER_CONFIG",
    ),
    (code::CLEAN_BROKER_DATA, "CONTROLLER_CLEAN_BROKER_DATA"),
    (
        code::CONTROLLER_GET_NEXT_BROKER_ID,
        "CONTROLLER_GET_NEXT_BROKER_ID",
    ),
    (
        code::CONTROLLER_APPLY_BROKER_ID,
        "CONTROLLER_APPLY_BROKER_ID",
    ),
];

/// RocketMQ's `RequestType` name of `code`, if it counts that code.
pub fn request_type(code: i32) -> Option<&'static str> {
    REQUEST_TYPES
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, name)| *name)
}

/// How a request ended (RocketMQ's `RequestHandleStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandleStatus {
    /// Answered, whatever the code.
    Success,
    /// Not served.
    Failed,
    /// A Raft wait ran out; the outcome is unknown.
    Timeout,
}

impl HandleStatus {
    fn label(self) -> &'static str {
        match self {
            HandleStatus::Success => "success",
            HandleStatus::Failed => "failed",
            HandleStatus::Timeout => "timeout",
        }
    }

    /// The status of a replicated request's answer.
    pub fn of(result: &ControllerResult) -> Self {
        if result.timed_out {
            HandleStatus::Timeout
        } else if result.code == SYSTEM_ERROR {
            HandleStatus::Failed
        } else {
            HandleStatus::Success
        }
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    request_type: &'static str,
    request_handle_status: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TypeLabels {
    request_type: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ElectionLabels {
    cluster: String,
    broker_set: String,
    election_result: &'static str,
}

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS_US)
}

/// The counters the request paths update (one label lookup per request).
#[derive(Debug)]
pub struct ControllerMetrics {
    requests: Family<RequestLabels, Counter>,
    latency: Family<TypeLabels, Histogram, fn() -> Histogram>,
    elections: Family<ElectionLabels, Counter>,
}

impl Default for ControllerMetrics {
    fn default() -> Self {
        Self {
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_histogram as fn() -> Histogram),
            elections: Family::default(),
        }
    }
}

impl ControllerMetrics {
    fn register(&self, registry: &mut Registry) {
        // Counter names go in without `_total`: the encoder adds it.
        registry.register("request", "Total request num", self.requests.clone());
        registry.register(
            "request_latency_microseconds",
            "Request latency in microseconds (successful requests)",
            self.latency.clone(),
        );
        registry.register("election", "Total elect num", self.elections.clone());
    }

    /// One request of `code` ended; codes RocketMQ does not count are ignored.
    pub fn request(&self, code: i32, status: HandleStatus, elapsed: Duration) {
        let Some(request_type) = request_type(code) else {
            return;
        };
        self.requests
            .get_or_create(&RequestLabels {
                request_type,
                request_handle_status: status.label(),
            })
            .inc();
        if status == HandleStatus::Success {
            self.latency
                .get_or_create(&TypeLabels { request_type })
                .observe(elapsed.as_micros() as f64);
        }
    }

    /// An election of `broker_set` was decided with `code`; other codes are no decision.
    pub fn election(&self, cluster: &str, broker_set: &str, code: i32) {
        let election_result = match code {
            SUCCESS => "new_master_elected",
            CONTROLLER_MASTER_STILL_EXIST => "keep_current_master",
            CONTROLLER_MASTER_NOT_AVAILABLE | CONTROLLER_ELECT_MASTER_FAILED => "no_master_elected",
            _ => return,
        };
        self.elections
            .get_or_create(&ElectionLabels {
                cluster: cluster.to_owned(),
                broker_set: broker_set.to_owned(),
                election_result,
            })
            .inc();
    }
}

/// Counts an election's outcome, when metrics are on; `cluster` may be empty (the
/// controller's own trigger), then the group's cluster in the applied state is used.
pub(super) fn count_election(shared: &Shared, cluster: &str, broker_set: &str, code: i32) {
    let Some(metrics) = &shared.metrics else {
        return;
    };
    if cluster.is_empty() {
        let cluster = shared
            .controller()
            .and_then(|c| {
                c.local_state()
                    .group(broker_set)
                    .map(|g| g.replica_info.cluster_name.clone())
            })
            .unwrap_or_default();
        metrics.election(&cluster, broker_set, code);
    } else {
        metrics.election(cluster, broker_set, code);
    }
}

/// Reads the heartbeat table and the applied state when scraped.
#[derive(Debug)]
struct StateCollector {
    shared: Weak<Shared>,
}

type GroupLabels = [(&'static str, String); 2];

fn group_labels(cluster: &str, broker_set: &str) -> GroupLabels {
    [
        ("cluster", cluster.to_owned()),
        ("broker_set", broker_set.to_owned()),
    ]
}

impl Collector for StateCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(shared) = self.shared.upgrade() else {
            return Ok(());
        };
        let Some(controller) = shared.controller() else {
            return Ok(());
        };
        gauge(
            &mut encoder,
            "role",
            "Role of this controller: 1 leader, 0 not the leader",
            i64::from(controller.is_leader()),
        )?;
        gauge_family(
            &mut encoder,
            "active_broker_num",
            "Active brokers in this controller's heartbeat table",
            shared
                .heartbeats
                .active_counts()
                .into_iter()
                .map(|((cluster, broker_set), n)| (group_labels(&cluster, &broker_set), n)),
        )?;
        let state = controller.local_state();
        let groups: Vec<_> = state
            .groups
            .iter()
            .map(|(name, g)| {
                let info = &g.sync_state_info;
                let cluster = match info.cluster_name.as_str() {
                    "" => g.replica_info.cluster_name.as_str(),
                    c => c,
                };
                (group_labels(cluster, name), info)
            })
            .collect();
        gauge_family(
            &mut encoder,
            "rocketmq_controller_master_epoch",
            "The broker group's master epoch in this controller's applied state",
            groups
                .iter()
                .map(|(l, info)| (l.clone(), i64::from(info.master_epoch))),
        )?;
        gauge_family(
            &mut encoder,
            "rocketmq_controller_sync_state_set_epoch",
            "The broker group's SyncStateSet epoch in this controller's applied state",
            groups
                .iter()
                .map(|(l, info)| (l.clone(), i64::from(info.sync_state_set_epoch))),
        )?;
        gauge_family(
            &mut encoder,
            "rocketmq_controller_sync_state_set_size",
            "Replicas in the broker group's SyncStateSet in this controller's applied state",
            groups
                .iter()
                .map(|(l, info)| (l.clone(), info.sync_state_set.len() as i64)),
        )
    }
}

/// The registry to serve: `metrics`' families, the scrape-time figures of `shared`, and the
/// process metrics.
pub(super) fn registry(
    exporter: &ExporterSettings,
    shared: &Arc<Shared>,
    metrics: &ControllerMetrics,
) -> Registry {
    let group = shared.settings.read().controller_dleger_group.clone();
    let (id, addr) = (shared.peers.self_name(), shared.peers.self_addr());
    let mut registry = exporter.registry(vec![
        ("node_type", "controller".into()),
        ("node_id", id.to_owned()),
        ("group", group),
        ("peer_id", id.to_owned()),
        ("address", addr.to_owned()),
    ]);
    metrics.register(&mut registry);
    registry.register_collector(Box::new(StateCollector {
        shared: Arc::downgrade(shared),
    }));
    registry.register_collector(Box::new(ProcessCollector));
    registry
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_rocketmq_names() {
        let metrics = ControllerMetrics::default();
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let ms = Duration::from_millis(2);
        metrics.request(code::CONTROLLER_ELECT_MASTER, HandleStatus::Success, ms);
        metrics.request(code::BROKER_HEARTBEAT, HandleStatus::Failed, ms);
        metrics.request(
            rocketpy_protocol::code::controller::RAFT_RPC,
            HandleStatus::Success,
            ms,
        );
        metrics.election("c", "b", SUCCESS);
        metrics.election("c", "b", CONTROLLER_ELECT_MASTER_FAILED);
        metrics.election(
            "c",
            "b",
            rocketpy_protocol::code::controller::response::CONTROLLER_NOT_LEADER,
        );
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for line in [
            r#"request_total{request_type="CONTROLLER_ELECT_MASTER",request_handle_status="success"} 1"#,
            r#"request_total{request_type="CONTROLLER_BROKER_HEARTBEAT",request_handle_status="failed"} 1"#,
            r#"request_latency_microseconds_bucket{le="3000.0",request_type="CONTROLLER_ELECT_MASTER"} 1"#,
            r#"request_latency_microseconds_count{request_type="CONTROLLER_ELECT_MASTER"} 1"#,
            r#"election_total{cluster="c",broker_set="b",election_result="new_master_elected"} 1"#,
            r#"election_total{cluster="c",broker_set="b",election_result="no_master_elected"} 1"#,
        ] {
            assert!(text.contains(line), "{line} not in\n{text}");
        }
        // Only successful requests are timed.
        assert!(
            !text.contains(r#"_count{request_type="CONTROLLER_BROKER_HEARTBEAT"}"#),
            "{text}"
        );
        assert_eq!(text.matches("election_total{").count(), 2, "{text}");
        assert!(!text.contains("61001"), "{text}");
    }

    #[test]
    fn every_served_code_but_raft_has_a_request_type() {
        for c in super::super::served_codes() {
            assert_eq!(
                request_type(c).is_some(),
                c != rocketpy_protocol::code::controller::RAFT_RPC,
                "{c}"
            );
        }
    }
}
