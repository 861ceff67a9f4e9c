//! What a request needs, from the rule of its code ([`crate::rules`]): PUB on the topic a
//! send writes; SUB on the topic and the group a consumer reads as; an admin account for the
//! requests that change topics, groups, offsets or configuration. A group's right is kept
//! under its retry topic (`%RETRY%group`), and a retry topic named by a request is its
//! group's. The body is read at most once, within the bounds of
//! [`rocketpy_protocol::limits`], before any signature is checked.

use rocketpy_protocol::body::batch_ack::BatchAckMessageRequestBody;
use rocketpy_protocol::body::{fastjson, HeartbeatData, LockBatchRequestBody};
use rocketpy_protocol::message::properties::{self, keys};
use rocketpy_protocol::topic::{
    is_broker_internal_topic, DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX,
};
use rocketpy_protocol::RemotingCommand;

use crate::perm::SUB;
use crate::rules::{self, Body, Field, Rule};

/// Where a request is served: the rules differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// A broker.
    Broker,
    /// A name server.
    Namesrv,
    /// A controller (controller mode, issue 43).
    Controller,
}

/// The rights a request needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needs {
    /// Only an admin account may make it.
    pub admin: bool,
    /// (topic, or `%RETRY%group` for a group; the right).
    pub resources: Vec<(String, u8)>,
    /// The right its processor checks on the topics of the stored message it names, once
    /// read ([`Rule::Stored`]; see [`stored_message`]).
    pub stored: Option<u8>,
}

impl Needs {
    /// `right` on `topic`; a retry or dead-letter topic is its group's (SUB).
    pub fn topic(&mut self, topic: &str, right: u8) {
        self.topic_of(topic, right, None)
    }

    /// [`Needs::topic`] in a request that names `group`: that group's pop retry topics
    /// (`%RETRY%group_topic`, `%RETRY%group+topic`) are its own, not a group of that name.
    pub fn topic_of(&mut self, topic: &str, right: u8, group: Option<&str>) {
        let Some(rest) = topic
            .strip_prefix(RETRY_GROUP_TOPIC_PREFIX)
            .or_else(|| topic.strip_prefix(DLQ_GROUP_TOPIC_PREFIX))
        else {
            self.resources.push((topic.to_owned(), right));
            return;
        };
        let owner = match group {
            Some(g)
                if rest
                    .strip_prefix(g)
                    .is_some_and(|r| r.is_empty() || r.starts_with(['_', '+'])) =>
            {
                g
            }
            _ => rest,
        };
        self.group(owner);
    }

    /// SUB on `group`.
    pub fn group(&mut self, group: &str) {
        self.resources
            .push((format!("{RETRY_GROUP_TOPIC_PREFIX}{group}"), SUB));
    }
}

/// The value of a field a rule reads: absent (or empty) is refused unless the field is
/// optional, when it touches nothing. The name wins over the alias, as in the processors'
/// header decoding (`header!`): the ACL must read the value the processor acts on.
fn field(req: &RemotingCommand, f: Field) -> Result<Option<&str>, String> {
    let value = req
        .field_opt(f.name)
        .or_else(|| {
            (!f.alias.is_empty())
                .then(|| req.field_opt(f.alias))
                .flatten()
        })
        .filter(|v| !v.is_empty());
    match value {
        None if !f.optional => Err(format!(
            "request code {} names no {} (the ACL needs it)",
            req.code, f.name
        )),
        v => Ok(v),
    }
}

fn named(what: &str, name: &str, code: i32) -> Result<(), String> {
    if name.is_empty() {
        return Err(format!("request code {code} has a {what} without a name"));
    }
    Ok(())
}

/// The resources a body names (read once, within the body bounds).
fn body_needs(req: &RemotingCommand, body: Body, n: &mut Needs) -> Result<(), String> {
    match body {
        Body::Heartbeat => {
            let hb: HeartbeatData = fastjson::from_slice(&req.body)
                .map_err(|e| format!("the heartbeat's body is not readable: {e}"))?;
            for c in &hb.consumer_data_set {
                named("consumer group", &c.group_name, req.code)?;
                n.group(&c.group_name);
                for s in &c.subscription_data_set {
                    named("subscription topic", &s.topic, req.code)?;
                    n.topic_of(&s.topic, SUB, Some(&c.group_name));
                }
            }
        }
        Body::Lock => {
            let body: LockBatchRequestBody = fastjson::from_slice(&req.body)
                .map_err(|e| format!("the lock request's body is not readable: {e}"))?;
            named("consumer group", &body.consumer_group, req.code)?;
            n.group(&body.consumer_group);
            for mq in &body.mq_set {
                named("queue topic", &mq.topic, req.code)?;
                n.topic_of(&mq.topic, SUB, Some(&body.consumer_group));
            }
        }
        Body::BatchAck => {
            let body: BatchAckMessageRequestBody = fastjson::from_slice(&req.body)
                .map_err(|e| format!("the batch ack's body is not readable: {e}"))?;
            for a in &body.acks {
                named("topic", &a.topic, req.code)?;
                named("consumer group", &a.consumer_group, req.code)?;
                n.topic_of(&a.topic, SUB, Some(&a.consumer_group));
                n.group(&a.consumer_group);
            }
        }
    }
    n.resources.sort_unstable();
    n.resources.dedup();
    Ok(())
}

/// The rights `req` needs on `server`; an error for a request the ACL must refuse before
/// reading further: a code without a rule, a field the rule needs left out, a body that
/// cannot be read.
pub fn needs(req: &RemotingCommand, server: Server) -> Result<Needs, String> {
    let table = match server {
        Server::Broker => rules::BROKER,
        Server::Namesrv => rules::NAMESRV,
        Server::Controller => rules::CONTROLLER,
    };
    let Some(rule) = rules::rule(table, req.code) else {
        return Err(format!("request code {} has no access rule", req.code));
    };
    let mut n = Needs::default();
    match rule {
        Rule::Signed => {}
        Rule::Admin => n.admin = true,
        Rule::Header { topic, group } => {
            let group = match group {
                Some(f) => field(req, f)?,
                None => None,
            };
            if let Some((f, right)) = topic {
                if let Some(t) = field(req, f)? {
                    n.topic_of(t, right, group);
                }
            }
            if let Some(g) = group {
                n.group(g);
            }
            n.resources.sort_unstable();
            n.resources.dedup();
        }
        Rule::Body(body) => body_needs(req, body, &mut n)?,
        Rule::Stored { right, group } => {
            n.stored = Some(right);
            if let Some(f) = group {
                if let Some(g) = field(req, f)? {
                    n.group(g);
                }
            }
        }
    }
    Ok(n)
}

/// The rights on a stored message ([`Rule::Stored`]): `right` on the topic it belongs to —
/// `REAL_TOPIC` for a message the broker keeps elsewhere for a while (delayed, timed, half),
/// else the topic it is stored in (a retry or dead-letter topic: its group's) — and on the
/// topic a retry copy came from (`RETRY_TOPIC`). A record the broker wrote for itself (in an
/// internal topic, standing for no user topic) is an admin account's.
pub fn stored_message(topic: &str, props: &str, right: u8) -> Needs {
    let mut n = Needs::default();
    let real = properties::find(props, keys::REAL_TOPIC).filter(|t| !t.is_empty());
    match real {
        Some(real) => n.topic(real, right),
        None if is_broker_internal_topic(topic) => n.admin = true,
        None => n.topic(topic, right),
    }
    if let Some(t) = properties::find(props, keys::RETRY_TOPIC).filter(|t| !t.is_empty()) {
        n.topic(t, right);
    }
    n.resources.sort_unstable();
    n.resources.dedup();
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perm::PUB;

    fn req(code: i32, fields: &[(&str, &str)], body: &[u8]) -> RemotingCommand {
        let mut r = RemotingCommand::request(code).with_body(body.to_vec());
        for (k, v) in fields {
            r.set_field(k, v);
        }
        r
    }

    fn resources(code: i32, fields: &[(&str, &str)], body: &[u8]) -> Vec<(String, u8)> {
        needs(&req(code, fields, body), Server::Broker)
            .unwrap()
            .resources
    }

    fn g(group: &str) -> (String, u8) {
        (format!("%RETRY%{group}"), SUB)
    }

    #[test]
    fn sends_need_pub_consumers_need_sub_on_topic_and_group() {
        assert_eq!(
            resources(310, &[("a", "P"), ("b", "T")], b""),
            vec![("T".into(), PUB)]
        );
        assert_eq!(
            resources(10, &[("topic", "T")], b""),
            vec![("T".into(), PUB)]
        );
        assert_eq!(
            resources(310, &[("a", "P"), ("b", "%RETRY%g")], b""),
            vec![g("g")]
        );
        assert_eq!(
            resources(11, &[("topic", "T"), ("consumerGroup", "g")], b""),
            vec![g("g"), ("T".into(), SUB)]
        );
        // A pop retry topic is the popping group's, whatever its name holds.
        assert_eq!(
            resources(
                200050,
                &[("topic", "%RETRY%g_T"), ("consumerGroup", "g")],
                b""
            ),
            vec![g("g")]
        );
        let hb = br#"{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T","subString":"*"},{"topic":"%RETRY%g","subString":"*"}]}],"producerDataSet":[{"groupName":"p"}]}"#;
        assert_eq!(resources(34, &[], hb), vec![g("g"), ("T".into(), SUB)]);
        assert!(needs(&req(34, &[], b"{not json"), Server::Broker).is_err());
        let acks = br#"{"brokerName":"b","acks":[{"c":"g","t":"T","so":1,"b":"AQ=="},{"c":"g","t":"T","so":9,"b":"AQ=="}]}"#;
        assert_eq!(
            resources(200151, &[], acks),
            vec![g("g"), ("T".into(), SUB)]
        );
        let lock = br#"{"consumerGroup":"g","clientId":"c","mqSet":[{"topic":"T","brokerName":"b","queueId":0}]}"#;
        assert_eq!(resources(41, &[], lock), vec![g("g"), ("T".into(), SUB)]);
        assert!(
            needs(&req(17, &[("topic", "T")], b""), Server::Broker)
                .unwrap()
                .admin
        );
        assert!(
            !needs(&req(105, &[("topic", "T")], b""), Server::Namesrv)
                .unwrap()
                .admin
        );
        assert!(needs(&req(103, &[], b""), Server::Namesrv).unwrap().admin);
        assert!(needs(&req(322, &[], b""), Server::Namesrv).unwrap().admin);
    }

    /// A rule never depends on a field the caller may leave out.
    #[test]
    fn fields_a_rule_reads_must_be_there() {
        let refused = |code, fields: &[(&str, &str)], body: &[u8]| {
            needs(&req(code, fields, body), Server::Broker).unwrap_err()
        };
        assert!(refused(11, &[("consumerGroup", "g")], b"").contains("names no topic"));
        assert!(
            refused(11, &[("topic", "T"), ("consumerGroup", "")], b"").contains("consumerGroup")
        );
        assert!(refused(310, &[("a", "P")], b"").contains("names no topic"));
        assert!(refused(12, &[], b"").contains("names no topic"));
        assert!(refused(321, &[("consumerGroup", "g")], b"").contains("topic"));
        assert!(refused(36, &[("offset", "0")], b"").contains("names no group"));
        assert!(refused(
            41,
            &[],
            br#"{"consumerGroup":"","clientId":"c","mqSet":[]}"#
        )
        .contains("without a name"));
        assert!(refused(9999, &[], b"").contains("no access rule"));
        // Optional fields touch nothing when left out.
        assert_eq!(resources(35, &[("clientID", "c")], b""), vec![]);
        assert_eq!(
            resources(35, &[("clientID", "c"), ("consumerGroup", "g")], b""),
            vec![g("g")]
        );
    }

    #[test]
    fn stored_messages_need_the_right_on_every_topic_they_stand_for() {
        let view = needs(&req(33, &[("offset", "0")], b""), Server::Broker).unwrap();
        assert_eq!((view.stored, view.resources.len()), (Some(SUB), 0));
        let back = needs(
            &req(36, &[("offset", "0"), ("group", "g")], b""),
            Server::Broker,
        )
        .unwrap();
        assert_eq!((back.stored, back.resources), (Some(SUB), vec![g("g")]));
        assert_eq!(
            needs(&req(37, &[], b""), Server::Broker).unwrap().stored,
            Some(PUB)
        );
        let delayed = "REAL_TOPIC\u{1}Secret\u{2}REAL_QID\u{1}0";
        assert_eq!(
            stored_message("SCHEDULE_TOPIC_XXXX", delayed, SUB).resources,
            vec![("Secret".into(), SUB)]
        );
        let op = stored_message("RMQ_SYS_TRANS_OP_HALF_TOPIC", "TAGS\u{1}d", SUB);
        assert!(op.admin && op.resources.is_empty());
        let retried = "RETRY_TOPIC\u{1}Orders";
        assert_eq!(
            stored_message("%RETRY%g", retried, SUB).resources,
            vec![g("g"), ("Orders".into(), SUB)]
        );
    }
}
