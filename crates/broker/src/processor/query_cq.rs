//! QUERY_CONSUME_QUEUE (mqadmin's queryCq): the raw units of one consume queue — where each
//! message is in the CommitLog, its size and tag hash — without reading the messages.
//! Readers that plan by bytes (the Spark source's `maxBytesPerTrigger`) sample sizes here.

use std::sync::Arc;

use rocketpy_protocol::body::admin::{ConsumeQueueData, QueryConsumeQueueResponseBody};
use rocketpy_protocol::code::response;
use rocketpy_protocol::header::QueryConsumeQueueRequestHeader;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult};

use super::{json_reply, ok, reply};
use crate::state::BrokerInner;

/// Most units one answer holds. RocketMQ sets no limit but stops at the end of the file
/// holding `index` (300,000 units); the cap keeps a careless count from building a
/// 30 MB JSON answer on an I/O thread.
pub const MAX_UNITS: usize = 10_000;

/// The units of `topic`/`queueId` from `index` on (at most `count`, and never past the end
/// of the file holding `index`), with the queue's bounds and, when `consumerGroup` names an
/// online group, its subscription. As RocketMQ answers:
/// - an unknown queue: SYSTEM_ERROR "`<queueId>@<topic>` is not exist!";
/// - an index outside the stored units: SUCCESS with no body and a remark saying so.
pub fn query_consume_queue(
    broker: &Arc<BrokerInner>,
    _: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: QueryConsumeQueueRequestHeader = req.decode_header()?;
    let Some(cq) = broker.store.find_consume_queue(&h.topic, h.queue_id) else {
        return Err(ProcessError::new(
            response::SYSTEM_ERROR,
            format!("{}@{} is not exist!", h.queue_id, h.topic),
        ));
    };
    let mut body = QueryConsumeQueueResponseBody {
        max_queue_index: cq.max_offset(),
        min_queue_index: cq.min_offset(),
        ..Default::default()
    };
    if let Some(group) = h.consumer_group.as_deref().filter(|g| !g.is_empty()) {
        match broker.consumers.find_subscription(group, &h.topic) {
            Ok(Some(sub)) => {
                body.subscription_data = Some(sub);
                // RocketMQ writes the group's SQL92 filter data here; tag subscriptions have
                // none, which fastjson writes as the text "null".
                body.filter_data = Some("null".to_owned());
            }
            _ => body.filter_data = Some(format!("{group}@{} is not online!", h.topic)),
        }
    }
    let Some(units) = cq.units_from(h.index) else {
        let mut resp = ok(req);
        resp.remark = Some(format!(
            "Index {} of {}@{} is not exist!",
            h.index, h.queue_id, h.topic
        ));
        return reply(resp);
    };
    let n = units.len().min(h.count.max(0) as usize).min(MAX_UNITS);
    body.queue_data = Some(
        (0..n)
            .map(|i| {
                let u = units.get(i);
                ConsumeQueueData {
                    physic_offset: u.commit_log_offset,
                    physic_size: u.size,
                    tags_code: u.tags_code,
                    ..Default::default()
                }
            })
            .collect(),
    );
    json_reply(req, &body)
}
