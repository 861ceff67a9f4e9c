//! Transactions: EndTransaction becomes END_TRANSACTION at the broker holding the half
//! message, and a broker's CHECK_TRANSACTION_STATE (sent to the proxy, which heartbeats as a
//! producer of each published topic's group) is relayed to a producer of that topic over its
//! telemetry stream as a RecoverOrphanedTransactionCommand; the producer's answer comes back
//! as an EndTransaction from the server's check.
//!
//! The transaction id a client gets names the broker and the half message's offsets, so the
//! proxy keeps nothing per transaction: `<brokerAddr> <commitLogOffset> <queueOffset>`.

use std::sync::{Arc, Weak};

use rocketpy_protocol::code::request;
use rocketpy_protocol::header::{CheckTransactionStateRequestHeader, EndTransactionRequestHeader};
use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::message::record::{self, Decoded};
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, Reply, RequestHandler};

use crate::convert::wrap;
use crate::delivered::{incoming, Delivery};
use crate::pb::{self, Code};
use crate::state::ProxyInner;
use crate::status::{ok, ProxyError};

/// `commitOrRollback` of END_TRANSACTION (the message's transaction sysflag).
const COMMIT: i32 = 0x8;
const ROLLBACK: i32 = 0xC;

/// What identifies a half message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionId {
    /// The broker that holds it.
    pub broker_addr: String,
    /// Its CommitLog offset.
    pub commit_log_offset: i64,
    /// Its offset in the half topic's queue (`tranStateTableOffset`).
    pub queue_offset: i64,
}

impl std::fmt::Display for TransactionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} {}",
            self.broker_addr, self.commit_log_offset, self.queue_offset
        )
    }
}

impl TransactionId {
    /// Parses the text form.
    pub fn parse(text: &str) -> Option<TransactionId> {
        let mut f = text.split(' ');
        let id = TransactionId {
            broker_addr: f.next()?.to_owned(),
            commit_log_offset: f.next()?.parse().ok()?,
            queue_offset: f.next()?.parse().ok()?,
        };
        (f.next().is_none() && id.broker_addr.contains(':')).then_some(id)
    }
}

/// Handles EndTransaction (one way to the broker, as RocketMQ's proxy sends it).
pub async fn end_transaction(
    proxy: &ProxyInner,
    req: pb::EndTransactionRequest,
) -> pb::EndTransactionResponse {
    let answer = async {
        let id = TransactionId::parse(&req.transaction_id).ok_or_else(|| {
            ProxyError::new(Code::InvalidTransactionId, "transaction id is invalid")
        })?;
        let commit_or_rollback = match pb::TransactionResolution::try_from(req.resolution) {
            Ok(pb::TransactionResolution::Commit) => COMMIT,
            Ok(pb::TransactionResolution::Rollback) => ROLLBACK,
            _ => {
                return Err(ProxyError::new(
                    Code::BadRequest,
                    "a transaction ends in COMMIT or ROLLBACK",
                ))
            }
        };
        let topic = req.topic.as_ref().map(wrap).unwrap_or_default();
        check_half(proxy, &id, &topic).await?;
        let header = EndTransactionRequestHeader {
            producer_group: topic,
            tran_state_table_offset: id.queue_offset,
            commit_log_offset: id.commit_log_offset,
            commit_or_rollback,
            from_transaction_check: Some(
                req.source == pb::TransactionSource::SourceServerCheck as i32,
            ),
            msg_id: Some(req.message_id.clone()),
            transaction_id: Some(req.message_id.clone()),
        };
        let request =
            crate::request::remoting_request(request::END_TRANSACTION).with_header(&header);
        proxy
            .remoting
            .invoke_oneway(&id.broker_addr, request)
            .await?;
        Ok(())
    };
    pb::EndTransactionResponse {
        status: Some(
            answer
                .await
                .map_or_else(|e: ProxyError| e.status(), |()| ok()),
        ),
    }
}

/// The transaction id names a broker: only a master of `topic`'s route is asked (the proxy
/// never connects where a client tells it to). With the ACL on, the half message must be of
/// `topic`, on which the caller's PUB right was checked: the broker checks the proxy's own
/// account, which may end any transaction.
async fn check_half(proxy: &ProxyInner, id: &TransactionId, topic: &str) -> Result<(), ProxyError> {
    let masters = proxy.routes.masters_of(topic).await?;
    if !masters.iter().any(|(_, addr)| *addr == id.broker_addr) {
        return Err(ProxyError::new(
            Code::InvalidTransactionId,
            format!(
                "the transaction id names {}, no master of topic {topic}",
                id.broker_addr
            ),
        ));
    }
    if proxy.config.acl.is_none() {
        return Ok(());
    }
    let view = crate::request::remoting_request(request::VIEW_MESSAGE_BY_ID)
        .with_field("offset", id.commit_log_offset);
    let resp = proxy
        .remoting
        .invoke(&id.broker_addr, view, proxy.config.remoting_timeout)
        .await?;
    let real = match record::decode(&resp.body, false) {
        Ok(Decoded::Message(half)) if resp.code == 0 => {
            properties::find(half.properties, keys::REAL_TOPIC).map(str::to_owned)
        }
        _ => None,
    };
    if real.as_deref() != Some(topic) {
        return Err(ProxyError::new(
            Code::Forbidden,
            format!("the transaction's half message is not of topic {topic}"),
        ));
    }
    Ok(())
}

/// Answers the requests brokers send the proxy: transaction checks go to a producer.
pub struct CheckRelay {
    proxy: Weak<ProxyInner>,
}

impl CheckRelay {
    /// A relay for `proxy`.
    pub fn new(proxy: Weak<ProxyInner>) -> Self {
        CheckRelay { proxy }
    }
}

impl RequestHandler for CheckRelay {
    fn handle(&self, conn: &Arc<Connection>, request: RemotingCommand) -> Reply {
        if request.code != request::CHECK_TRANSACTION_STATE {
            return Reply::Now(Some(
                RemotingCommand::response_to(
                    &request,
                    rocketpy_protocol::code::response::REQUEST_CODE_NOT_SUPPORTED,
                )
                .with_remark(format!("request type {} not supported", request.code)),
            ));
        }
        if let Some(proxy) = self.proxy.upgrade() {
            relay_check(&proxy, &conn.peer().to_string(), &request);
        }
        Reply::Now(None) // a one-way request
    }
}

/// Sends a broker's check of a half message to a producer of its topic.
fn relay_check(proxy: &ProxyInner, broker_addr: &str, request: &RemotingCommand) {
    let Ok(h) = request.decode_header::<CheckTransactionStateRequestHeader>() else {
        return;
    };
    let Ok(Decoded::Message(v)) = record::decode(&request.body, false) else {
        return;
    };
    let topic = properties::find(v.properties, keys::REAL_TOPIC).unwrap_or(v.topic);
    let id = TransactionId {
        broker_addr: broker_addr.to_owned(),
        commit_log_offset: h.commit_log_offset,
        queue_offset: h.tran_state_table_offset,
    };
    let resource = pb::Resource {
        resource_namespace: String::new(),
        name: topic.to_owned(),
    };
    let delivery = Delivery {
        topic: &resource,
        receipt_handle: None,
        delivery_attempt: None,
    };
    let mut message = incoming(&v, delivery, &mut Default::default());
    if let Some(sp) = message.system_properties.as_mut() {
        sp.message_type = pb::MessageType::Transaction as i32;
    }
    let command = pb::TelemetryCommand {
        status: Some(ok()),
        command: Some(
            pb::telemetry_command::Command::RecoverOrphanedTransactionCommand(
                pb::RecoverOrphanedTransactionCommand {
                    message: Some(message),
                    transaction_id: id.to_string(),
                },
            ),
        ),
    };
    for tx in proxy.clients.publishers_of(topic, proxy.next_index()) {
        if tx.try_send(Ok(command.clone())).is_ok() {
            return;
        }
    }
    tracing::debug!(
        topic,
        "no producer of the topic to ask about a half message"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transaction_ids_round_trip() {
        let id = TransactionId {
            broker_addr: "127.0.0.1:10911".into(),
            commit_log_offset: 4096,
            queue_offset: 7,
        };
        assert_eq!(TransactionId::parse(&id.to_string()), Some(id));
        assert!(TransactionId::parse("nonsense").is_none());
        assert!(TransactionId::parse("a 1 2").is_none());
    }
}
