//! `rocketmq_rpc_latency_milliseconds`: a histogram of request handling time in milliseconds, labelled as
//! RocketMQ 5.x's remoting layer labels it (`protocol_type`, `request_code`, `response_code`,
//! `is_long_polling`, `result`) with its buckets (1, 3, 5, 7, 10, 100 ms, 1, 2, 3 s).
//!
//! The codes are labelled by RocketMQ's names (`request_code="send_message_v2"`,
//! `response_code="success"`), the number only for a code RocketMQ has no name for, so
//! queries written against a 5.x cluster select the same series here.

use std::borrow::Cow;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use rocketpy_protocol::code_names::{request_code_desc, response_code_desc};
use rocketpy_remoting::{RequestObserver, RequestOutcome, RequestRecord};

/// RocketMQ 5.x's `rpcCostTimeBuckets`, in milliseconds.
const BUCKETS_MS: [f64; 9] = [1.0, 3.0, 5.0, 7.0, 10.0, 100.0, 1000.0, 2000.0, 3000.0];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RpcLabels {
    protocol_type: &'static str,
    /// Borrowed for named codes: the per-request label lookup allocates nothing for them.
    request_code: Cow<'static, str>,
    response_code: Cow<'static, str>,
    is_long_polling: bool,
    result: &'static str,
}

fn histogram() -> Histogram {
    Histogram::new(BUCKETS_MS)
}

/// The request-latency histogram; registered once, then fed by the remoting layer.
#[derive(Debug, Clone)]
pub struct RpcMetrics {
    latency: Family<RpcLabels, Histogram, fn() -> Histogram>,
}

impl RpcMetrics {
    /// A histogram registered as `rocketmq_rpc_latency_milliseconds` in `registry`.
    pub fn register(registry: &mut Registry) -> RpcMetrics {
        let latency = Family::new_with_constructor(histogram as fn() -> Histogram);
        registry.register(
            "rocketmq_rpc_latency_milliseconds",
            "Request handling time in milliseconds, by request and response code",
            latency.clone(),
        );
        RpcMetrics { latency }
    }
}

impl RequestObserver for RpcMetrics {
    fn observe(&self, record: RequestRecord) {
        let labels = RpcLabels {
            protocol_type: "remoting",
            request_code: request_code_desc(record.request_code),
            response_code: response_code_desc(record.response_code),
            is_long_polling: record.held,
            result: match record.outcome {
                RequestOutcome::Success => "success",
                RequestOutcome::Oneway => "oneway",
                RequestOutcome::Failed => "process_request_failed",
            },
        };
        self.latency
            .get_or_create(&labels)
            .observe(record.elapsed.as_secs_f64() * 1000.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn records_by_code_with_rocketmq_buckets() {
        let mut registry = Registry::default();
        let rpc = RpcMetrics::register(&mut registry);
        for ms in [0, 2, 50] {
            rpc.observe(RequestRecord {
                request_code: 310,
                response_code: 0,
                held: false,
                outcome: RequestOutcome::Success,
                elapsed: Duration::from_millis(ms),
            });
        }
        // A code RocketMQ has no name for is labelled by its number.
        rpc.observe(RequestRecord {
            request_code: 123_456,
            response_code: 4321,
            held: false,
            outcome: RequestOutcome::Failed,
            elapsed: Duration::from_millis(1),
        });
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains("# TYPE rocketmq_rpc_latency_milliseconds histogram"),
            "{text}"
        );
        let labels = r#"protocol_type="remoting",request_code="send_message_v2",response_code="success",is_long_polling="false",result="success""#;
        assert!(
            text.contains(&format!(
                "rocketmq_rpc_latency_milliseconds_count{{{labels}}} 3"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "rocketmq_rpc_latency_milliseconds_bucket{{le=\"3.0\",{labels}}} 2"
            )),
            "{text}"
        );
        let unnamed = r#"request_code="123456",response_code="4321",is_long_polling="false",result="process_request_failed""#;
        assert!(
            text.contains(&format!(
                "rocketmq_rpc_latency_milliseconds_count{{protocol_type=\"remoting\",{unnamed}}} 1"
            )),
            "{text}"
        );
    }
}
