//! The access rule of every request code a server serves: one table per server, read by the
//! ACL at the door ([`crate::needs`]) and written into `docs/access-rules.md` ([`markdown`]).
//! A served code without a rule is refused (and a test of each server fails), so a new code
//! cannot slip past the ACL.
//!
//! What must stay true: a rule never depends on a field the caller may leave out. A field a
//! rule reads is required (absent: refused), or optional because leaving it out touches
//! nothing (a group an unregistration does not name is not left). Where only the stored
//! message tells what a request touches (VIEW_MESSAGE_BY_ID, CONSUMER_SEND_MSG_BACK,
//! END_TRANSACTION), the rule is [`Rule::Stored`]: the processor decides after reading the
//! record and before answering.
//!
//! Departures from RocketMQ 4.x's `PlainAccessValidator` (which checks only a dozen codes and
//! lets any signed account make the rest): reads of a topic's queues, messages and statistics
//! need SUB on it, the requests that name a stored message need the right on that message's
//! topic, and broker-wide statistics need an admin account.

use rocketpy_protocol::code::request;

use crate::perm::{ANY, PUB, SUB};
pub use crate::rules_controller::CONTROLLER;

/// A header field a rule reads: its name, the short alias some codes use (SEND_MESSAGE_V2's
/// `b`), and whether leaving it out is allowed (then it touches nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// The extFields key.
    pub name: &'static str,
    /// Another key for the same value (empty: none).
    pub alias: &'static str,
    /// Absent means the request touches no such resource.
    pub optional: bool,
}

const fn req(name: &'static str) -> Field {
    Field {
        name,
        alias: "",
        optional: false,
    }
}

const fn opt(name: &'static str) -> Field {
    Field {
        name,
        alias: "",
        optional: true,
    }
}

/// A body whose content names the resources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// HeartbeatData: SUB on each consumer group and each topic it subscribes (producers:
    /// signature only).
    Heartbeat,
    /// LockBatchRequestBody: SUB on its group and on each queue's topic.
    Lock,
    /// BatchAckMessageRequestBody: SUB on each ack's topic and group.
    BatchAck,
}

/// What a request must show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Any account whose signature verifies.
    Signed,
    /// An admin account.
    Admin,
    /// `right` on the topic in `topic` (a retry topic `%RETRY%g`: SUB on group `g`) and SUB on
    /// the group in `group`.
    Header {
        /// The topic field and the right it needs.
        topic: Option<(Field, u8)>,
        /// The group field.
        group: Option<Field>,
    },
    /// The resources the body names.
    Body(Body),
    /// `right` on the topics of the stored message the request names (its topic, `REAL_TOPIC`,
    /// `RETRY_TOPIC`), checked by the processor once it has read the record; and SUB on the
    /// group in `group`.
    Stored {
        /// The right on the message's topics.
        right: u8,
        /// The group field.
        group: Option<Field>,
    },
}

const fn topic(right: u8) -> Rule {
    Rule::Header {
        topic: Some((req("topic"), right)),
        group: None,
    }
}

const fn consume(topic_field: &'static str, group_field: &'static str) -> Rule {
    Rule::Header {
        topic: Some((req(topic_field), SUB)),
        group: Some(req(group_field)),
    }
}

const fn group(field: Field) -> Rule {
    Rule::Header {
        topic: None,
        group: Some(field),
    }
}

const SEND: Rule = Rule::Header {
    topic: Some((
        Field {
            name: "topic",
            alias: "b",
            optional: false,
        },
        PUB,
    )),
    group: None,
};

/// The broker's rules (its main port and its VIP port serve the same codes).
pub const BROKER: &[(i32, &str, Rule)] = &[
    (request::SEND_MESSAGE, "SEND_MESSAGE", SEND),
    (request::SEND_MESSAGE_V2, "SEND_MESSAGE_V2", SEND),
    (request::SEND_BATCH_MESSAGE, "SEND_BATCH_MESSAGE", SEND),
    (
        request::PULL_MESSAGE,
        "PULL_MESSAGE",
        consume("topic", "consumerGroup"),
    ),
    (
        request::LITE_PULL_MESSAGE,
        "LITE_PULL_MESSAGE",
        consume("topic", "consumerGroup"),
    ),
    (
        request::POP_MESSAGE,
        "POP_MESSAGE",
        consume("topic", "consumerGroup"),
    ),
    (
        request::ACK_MESSAGE,
        "ACK_MESSAGE",
        consume("topic", "consumerGroup"),
    ),
    (
        request::CHANGE_MESSAGE_INVISIBLETIME,
        "CHANGE_MESSAGE_INVISIBLETIME",
        consume("topic", "consumerGroup"),
    ),
    (
        request::BATCH_ACK_MESSAGE,
        "BATCH_ACK_MESSAGE",
        Rule::Body(Body::BatchAck),
    ),
    (
        request::QUERY_CONSUMER_OFFSET,
        "QUERY_CONSUMER_OFFSET",
        consume("topic", "consumerGroup"),
    ),
    (
        request::UPDATE_CONSUMER_OFFSET,
        "UPDATE_CONSUMER_OFFSET",
        consume("topic", "consumerGroup"),
    ),
    (request::GET_MAX_OFFSET, "GET_MAX_OFFSET", topic(SUB)),
    (request::GET_MIN_OFFSET, "GET_MIN_OFFSET", topic(SUB)),
    (
        request::SEARCH_OFFSET_BY_TIMESTAMP,
        "SEARCH_OFFSET_BY_TIMESTAMP",
        topic(SUB),
    ),
    (
        request::GET_EARLIEST_MSG_STORETIME,
        "GET_EARLIEST_MSG_STORETIME",
        topic(SUB),
    ),
    (request::QUERY_MESSAGE, "QUERY_MESSAGE", topic(SUB)),
    (
        request::VIEW_MESSAGE_BY_ID,
        "VIEW_MESSAGE_BY_ID",
        Rule::Stored {
            right: SUB,
            group: None,
        },
    ),
    (
        request::CONSUMER_SEND_MSG_BACK,
        "CONSUMER_SEND_MSG_BACK",
        Rule::Stored {
            right: SUB,
            group: Some(req("group")),
        },
    ),
    (
        request::END_TRANSACTION,
        "END_TRANSACTION",
        Rule::Stored {
            right: PUB,
            group: None,
        },
    ),
    (
        request::HEART_BEAT,
        "HEART_BEAT",
        Rule::Body(Body::Heartbeat),
    ),
    (
        request::UNREGISTER_CLIENT,
        "UNREGISTER_CLIENT",
        group(opt("consumerGroup")),
    ),
    (
        request::GET_CONSUMER_LIST_BY_GROUP,
        "GET_CONSUMER_LIST_BY_GROUP",
        group(req("consumerGroup")),
    ),
    (
        request::LOCK_BATCH_MQ,
        "LOCK_BATCH_MQ",
        Rule::Body(Body::Lock),
    ),
    // Reads nothing stored: whether this broker compiles an expression.
    (
        request::CHECK_CLIENT_CONFIG,
        "CHECK_CLIENT_CONFIG",
        Rule::Signed,
    ),
    (
        request::UNLOCK_BATCH_MQ,
        "UNLOCK_BATCH_MQ",
        Rule::Body(Body::Lock),
    ),
    // A topic's config (queues, permission, attributes): what its producers and consumers
    // may know of it.
    (request::GET_TOPIC_CONFIG, "GET_TOPIC_CONFIG", topic(ANY)),
    (
        request::GET_SUBSCRIPTIONGROUP_CONFIG,
        "GET_SUBSCRIPTIONGROUP_CONFIG",
        group(req("group")),
    ),
    (
        request::GET_TOPIC_STATS_INFO,
        "GET_TOPIC_STATS_INFO",
        topic(SUB),
    ),
    (
        request::GET_CONSUME_STATS,
        "GET_CONSUME_STATS",
        Rule::Header {
            topic: Some((opt("topic"), SUB)),
            group: Some(req("consumerGroup")),
        },
    ),
    (
        request::GET_CONSUMER_CONNECTION_LIST,
        "GET_CONSUMER_CONNECTION_LIST",
        group(req("consumerGroup")),
    ),
    (
        request::QUERY_TOPIC_CONSUME_BY_WHO,
        "QUERY_TOPIC_CONSUME_BY_WHO",
        topic(SUB),
    ),
    (
        request::QUERY_CONSUME_QUEUE,
        "QUERY_CONSUME_QUEUE",
        Rule::Header {
            topic: Some((req("topic"), SUB)),
            group: Some(opt("consumerGroup")),
        },
    ),
    // Producer groups carry no right in the plain ACL: the connections of one are public.
    (
        request::GET_PRODUCER_CONNECTION_LIST,
        "GET_PRODUCER_CONNECTION_LIST",
        Rule::Signed,
    ),
    (
        request::GET_BROKER_RUNTIME_INFO,
        "GET_BROKER_RUNTIME_INFO",
        Rule::Signed,
    ),
    (
        request::VIEW_BROKER_STATS_DATA,
        "VIEW_BROKER_STATS_DATA",
        Rule::Admin,
    ),
    (
        request::UPDATE_AND_CREATE_TOPIC,
        "UPDATE_AND_CREATE_TOPIC",
        Rule::Admin,
    ),
    (
        request::DELETE_TOPIC_IN_BROKER,
        "DELETE_TOPIC_IN_BROKER",
        Rule::Admin,
    ),
    (
        request::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
        Rule::Admin,
    ),
    (
        request::DELETE_SUBSCRIPTIONGROUP,
        "DELETE_SUBSCRIPTIONGROUP",
        Rule::Admin,
    ),
    (
        request::INVOKE_BROKER_TO_RESET_OFFSET,
        "INVOKE_BROKER_TO_RESET_OFFSET",
        Rule::Admin,
    ),
    (request::GET_BROKER_CONFIG, "GET_BROKER_CONFIG", Rule::Admin),
    // Controller mode: the controller leader signs its notifications as an admin account,
    // and mqadmin getBrokerEpoch reads the epoch table as one.
    (
        rocketpy_protocol::code::controller::request::NOTIFY_BROKER_ROLE_CHANGED,
        "NOTIFY_BROKER_ROLE_CHANGED",
        Rule::Admin,
    ),
    (
        rocketpy_protocol::code::controller::request::GET_BROKER_EPOCH_CACHE,
        "GET_BROKER_EPOCH_CACHE",
        Rule::Admin,
    ),
    (
        request::UPDATE_BROKER_CONFIG,
        "UPDATE_BROKER_CONFIG",
        Rule::Admin,
    ),
    // A slave's metadata sync: every topic, group and offset of the broker.
    (
        request::GET_ALL_TOPIC_CONFIG,
        "GET_ALL_TOPIC_CONFIG",
        Rule::Admin,
    ),
    (
        request::GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
        "GET_ALL_SUBSCRIPTIONGROUP_CONFIG",
        Rule::Admin,
    ),
    (
        request::GET_ALL_CONSUMER_OFFSET,
        "GET_ALL_CONSUMER_OFFSET",
        Rule::Admin,
    ),
    (
        request::GET_ALL_DELAY_OFFSET,
        "GET_ALL_DELAY_OFFSET",
        Rule::Admin,
    ),
];

/// The name server's rules. Registrations and everything that changes a route are an admin
/// account's: a false registration (or a data-version query, which keeps a broker alive)
/// would take a topic's clients to it.
pub const NAMESRV: &[(i32, &str, Rule)] = &[
    (
        request::GET_ROUTEINFO_BY_TOPIC,
        "GET_ROUTEINFO_BY_TOPIC",
        Rule::Signed,
    ),
    (
        request::GET_BROKER_CLUSTER_INFO,
        "GET_BROKER_CLUSTER_INFO",
        Rule::Signed,
    ),
    (
        request::GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        "GET_ALL_TOPIC_LIST_FROM_NAMESERVER",
        Rule::Signed,
    ),
    (
        request::GET_TOPICS_BY_CLUSTER,
        "GET_TOPICS_BY_CLUSTER",
        Rule::Signed,
    ),
    (request::REGISTER_BROKER, "REGISTER_BROKER", Rule::Admin),
    (request::UNREGISTER_BROKER, "UNREGISTER_BROKER", Rule::Admin),
    (
        request::QUERY_DATA_VERSION,
        "QUERY_DATA_VERSION",
        Rule::Admin,
    ),
    (
        request::WIPE_WRITE_PERM_OF_BROKER,
        "WIPE_WRITE_PERM_OF_BROKER",
        Rule::Admin,
    ),
    (
        request::ADD_WRITE_PERM_OF_BROKER,
        "ADD_WRITE_PERM_OF_BROKER",
        Rule::Admin,
    ),
    (
        request::DELETE_TOPIC_IN_NAMESRV,
        "DELETE_TOPIC_IN_NAMESRV",
        Rule::Admin,
    ),
];

/// The 5.x gRPC methods (the proxy's `MessagingService`), as RocketMQ's proxy checks them
/// with the plain ACL; `ANY` is PUB or SUB.
pub const GRPC: &[(&str, &str)] = &[
    ("QueryRoute", "PUB or SUB on the topic"),
    ("SendMessage", "PUB on the topic (one topic per call)"),
    ("EndTransaction", "PUB on the topic"),
    ("ReceiveMessage", "SUB on the topic and the group"),
    ("AckMessage", "SUB on the topic and the group"),
    ("ChangeInvisibleDuration", "SUB on the topic and the group"),
    ("ForwardMessageToDeadLetterQueue", "SUB on the topic and the group"),
    ("QueryAssignment", "SUB on the topic and the group"),
    ("Heartbeat", "SUB on the group (consumers); signature (producers)"),
    ("NotifyClientTermination", "SUB on the group when one is named; else signature"),
    ("Telemetry", "signature at the first command; each settings: PUB on every publishing topic, SUB on the group and every subscribed topic"),
    ("PullMessage, UpdateOffset, GetOffset, QueryOffset, RecallMessage, SyncLiteSubscription", "signature (answered as not supported)"),
];

/// The rule of `code` in `table`.
pub fn rule(table: &[(i32, &str, Rule)], code: i32) -> Option<Rule> {
    table
        .iter()
        .find(|(c, _, _)| *c == code)
        .map(|(_, _, r)| *r)
}

/// Checks that `table` covers exactly the `served` codes: every served code has a rule (a
/// server's test calls this with its processor table's codes), and no rule is left for a
/// code no longer served.
pub fn check_coverage(table: &[(i32, &str, Rule)], served: &[i32]) -> Result<(), String> {
    let unruled: Vec<_> = served
        .iter()
        .filter(|c| rule(table, **c).is_none())
        .collect();
    let stale: Vec<_> = table
        .iter()
        .filter(|(c, _, _)| !served.contains(c))
        .map(|(c, name, _)| (c, name))
        .collect();
    if unruled.is_empty() && stale.is_empty() {
        return Ok(());
    }
    Err(format!(
        "served without an access rule: {unruled:?}; rules for codes not served: {stale:?}"
    ))
}

fn right_text(right: u8) -> &'static str {
    match right {
        PUB => "PUB",
        SUB => "SUB",
        ANY => "PUB or SUB",
        _ => "PUB|SUB",
    }
}

fn field_text(f: Field) -> String {
    let alias = if f.alias.is_empty() {
        String::new()
    } else {
        format!(" (or `{}`)", f.alias)
    };
    let optional = if f.optional { ", when given" } else { "" };
    format!("`{}`{alias}{optional}", f.name)
}

/// What `rule` asks for, in words.
pub fn describe(rule: Rule) -> String {
    match rule {
        Rule::Signed => "signature".into(),
        Rule::Admin => "admin account".into(),
        Rule::Header { topic, group } => {
            let mut parts = Vec::new();
            if let Some((f, right)) = topic {
                parts.push(format!(
                    "{} on the topic in {}",
                    right_text(right),
                    field_text(f)
                ));
            }
            if let Some(f) = group {
                parts.push(format!("SUB on the group in {}", field_text(f)));
            }
            parts.join("; ")
        }
        Rule::Body(Body::Heartbeat) => {
            "SUB on each consumer group of the body and each topic it subscribes".into()
        }
        Rule::Body(Body::Lock) => "SUB on the body's group and on each queue's topic".into(),
        Rule::Body(Body::BatchAck) => "SUB on each ack's topic and group".into(),
        Rule::Stored { right, group } => {
            let mut text = format!(
                "{} on the stored message's topics (its topic, REAL_TOPIC, RETRY_TOPIC), checked after reading it",
                right_text(right)
            );
            if let Some(f) = group {
                text.push_str(&format!("; SUB on the group in {}", field_text(f)));
            }
            text
        }
    }
}

/// `docs/access-rules.md`: every port and every served code with the right it needs.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Access rules\n\n\
         Generated from `crates/acl/src/rules.rs` (`cargo test -p rocketpy-acl` checks this file; \
         `UPDATE_ACCESS_RULES=1` rewrites it). With `aclEnable=true` every request passes the \
         rule of its code; a code without a rule is refused. A retry topic `%RETRY%g` named \
         where a topic is expected is group `g`'s. Globally trusted addresses and an account's \
         trusted address pass without a signature, as in RocketMQ.\n\n\
         ## Ports\n\n\
         | port | who may use it |\n|---|---|\n\
         | broker `listenPort` and VIP port (`listenPort - 2`) | the broker table below |\n\
         | name server `listenPort` | the name server table below |\n\
         | controller (its `controllerDLegerPeers` port) | the controller table below; peer controllers' Raft traffic included |\n\
         | gRPC `grpcServerPort` | the 5.x table below, from the clients' `authorization` metadata |\n\
         | HA `haListenPort` | replication peers only: slaves whose address matches `haAllowedAddresses` (others are closed before a byte is sent); with `aclEnable=true`, a master listening beyond loopback without it refuses to start |\n\
         | metrics `metricsPromExporterPort` | anyone who reaches it (read only; shows topic and group names): bind it to a trusted interface |\n\
         | console (`rocketpy console`) | the page's token, from the addresses it serves (`Host` and `Origin` checked) |\n\n",
    );
    for (title, table) in [
        ("Broker", BROKER),
        ("Name server", NAMESRV),
        ("Controller", CONTROLLER),
    ] {
        out.push_str(&format!(
            "## {title}\n\n| code | request | needs |\n|---|---|---|\n"
        ));
        let mut rows: Vec<_> = table.to_vec();
        rows.sort_by_key(|(code, _, _)| *code);
        for (code, name, rule) in rows {
            out.push_str(&format!("| {code} | {name} | {} |\n", describe(rule)));
        }
        out.push('\n');
    }
    out.push_str("## gRPC (5.x clients)\n\n| method | needs |\n|---|---|\n");
    for (method, needs) in GRPC {
        out.push_str(&format!("| {method} | {needs} |\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_one_rule() {
        for table in [BROKER, NAMESRV, CONTROLLER] {
            let mut codes: Vec<i32> = table.iter().map(|(c, _, _)| *c).collect();
            codes.sort_unstable();
            let n = codes.len();
            codes.dedup();
            assert_eq!(codes.len(), n, "a code with two rules");
        }
    }

    /// The generated document is committed; a changed table must change it too.
    #[test]
    fn docs_match_the_table() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/access-rules.md");
        let text = markdown();
        if std::env::var_os("UPDATE_ACCESS_RULES").is_some() {
            std::fs::write(&path, &text).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == text,
            "docs/access-rules.md is out of date: run UPDATE_ACCESS_RULES=1 cargo test -p rocketpy-acl"
        );
    }
}
