//! What a request needs (RocketMQ's `PlainAccessValidator.parse`, widened where the issue of
//! rights is plain): PUB on the topic a send writes; SUB on the topic and the group a
//! consumer reads as — pulls, pops, offsets, heartbeats, locks; an admin account for the
//! requests that change topics, groups, offsets or configuration. A group's right is kept
//! under its retry topic (`%RETRY%group`), and a retry topic named by a request is its
//! group's.

use rocketpy_protocol::body::batch_ack::BatchAckMessageRequestBody;
use rocketpy_protocol::body::{fastjson, HeartbeatData};
use rocketpy_protocol::code::request;
use rocketpy_protocol::topic::RETRY_GROUP_TOPIC_PREFIX;
use rocketpy_protocol::RemotingCommand;

use crate::perm::{PUB, SUB};

/// Where a request is served: the rights differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// A broker.
    Broker,
    /// A name server.
    Namesrv,
}

/// The rights a request needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needs {
    /// Only an admin account may make it.
    pub admin: bool,
    /// (topic, or `%RETRY%group` for a group; the right).
    pub resources: Vec<(String, u8)>,
}

impl Needs {
    fn topic(&mut self, topic: Option<&str>, right: u8) {
        if let Some(t) = topic.filter(|t| !t.is_empty()) {
            self.resources.push((t.to_owned(), right));
        }
    }

    fn group(&mut self, group: Option<&str>) {
        if let Some(g) = group.filter(|g| !g.is_empty()) {
            self.resources
                .push((format!("{RETRY_GROUP_TOPIC_PREFIX}{g}"), SUB));
        }
    }
}

/// Broker requests only an admin account may make.
const BROKER_ADMIN: &[i32] = &[
    request::UPDATE_AND_CREATE_TOPIC,
    request::UPDATE_BROKER_CONFIG,
    request::GET_BROKER_CONFIG,
    request::DELETE_TOPIC_IN_BROKER,
    request::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
    request::DELETE_SUBSCRIPTIONGROUP,
    request::INVOKE_BROKER_TO_RESET_OFFSET,
    // A slave's metadata sync: every topic, group and offset of the broker.
    request::GET_ALL_TOPIC_CONFIG,
    request::GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
    request::GET_ALL_CONSUMER_OFFSET,
    request::GET_ALL_DELAY_OFFSET,
];

/// Name server requests only an admin account may make: a false broker registration
/// would take a topic's clients to it.
const NAMESRV_ADMIN: &[i32] = &[
    request::REGISTER_BROKER,
    request::UNREGISTER_BROKER,
    request::WIPE_WRITE_PERM_OF_BROKER,
    request::ADD_WRITE_PERM_OF_BROKER,
    request::DELETE_TOPIC_IN_NAMESRV,
    PUT_KV_CONFIG,
    DELETE_KV_CONFIG,
    UPDATE_NAMESRV_CONFIG,
];

/// RocketMQ's KV config and name server config requests (not served by rocketpy: refused
/// without an admin account all the same).
const PUT_KV_CONFIG: i32 = 100;
const DELETE_KV_CONFIG: i32 = 102;
const UPDATE_NAMESRV_CONFIG: i32 = 318;

/// A header field: its name, or the short alias SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE use.
fn field<'a>(req: &'a RemotingCommand, name: &str, alias: &str) -> Option<&'a str> {
    req.field_opt(name).or_else(|| req.field_opt(alias))
}

/// The rights `req` needs on `server`; an error for a request whose body cannot be read
/// (it is refused, as RocketMQ refuses it).
pub fn needs(req: &RemotingCommand, server: Server) -> Result<Needs, String> {
    let mut n = Needs::default();
    if server == Server::Namesrv {
        n.admin = NAMESRV_ADMIN.contains(&req.code);
        return Ok(n);
    }
    n.admin = BROKER_ADMIN.contains(&req.code);
    match req.code {
        request::SEND_MESSAGE | request::SEND_MESSAGE_V2 | request::SEND_BATCH_MESSAGE => {
            let topic = field(req, "topic", "b");
            match topic.and_then(|t| t.strip_prefix(RETRY_GROUP_TOPIC_PREFIX)) {
                // A consumer giving a message back through its retry topic.
                Some(group) => n.group(Some(group)),
                None => n.topic(topic, PUB),
            }
        }
        request::CONSUMER_SEND_MSG_BACK => n.group(req.field_opt("group")),
        request::PULL_MESSAGE
        | request::LITE_PULL_MESSAGE
        | request::QUERY_CONSUMER_OFFSET
        | request::UPDATE_CONSUMER_OFFSET => {
            n.topic(req.field_opt("topic"), SUB);
            n.group(req.field_opt("consumerGroup"));
        }
        request::POP_MESSAGE | request::ACK_MESSAGE | request::CHANGE_MESSAGE_INVISIBLETIME => {
            let topic = req.field_opt("topic");
            if !topic.is_some_and(|t| t.starts_with(RETRY_GROUP_TOPIC_PREFIX)) {
                n.topic(topic, SUB);
            }
            n.group(req.field_opt("consumerGroup"));
        }
        request::BATCH_ACK_MESSAGE => {
            let body: BatchAckMessageRequestBody = fastjson::from_slice(&req.body)
                .map_err(|e| format!("the batch ack's body is not readable: {e}"))?;
            let mut named: Vec<(&str, &str)> = body
                .acks
                .iter()
                .map(|a| (a.topic.as_str(), a.consumer_group.as_str()))
                .collect();
            named.sort_unstable();
            named.dedup();
            for (topic, group) in named {
                n.topic(Some(topic), SUB);
                n.group(Some(group));
            }
        }
        request::QUERY_MESSAGE | request::VIEW_MESSAGE_BY_ID => {
            n.topic(req.field_opt("topic"), SUB)
        }
        request::UNREGISTER_CLIENT | request::GET_CONSUMER_LIST_BY_GROUP => {
            n.group(req.field_opt("consumerGroup"))
        }
        request::LOCK_BATCH_MQ | request::UNLOCK_BATCH_MQ => {
            let body: serde_json::Value = fastjson::from_slice(&req.body)
                .map_err(|e| format!("the lock request's body is not readable: {e}"))?;
            n.group(body["consumerGroup"].as_str());
        }
        request::HEART_BEAT => {
            let hb: HeartbeatData = fastjson::from_slice(&req.body)
                .map_err(|e| format!("the heartbeat's body is not readable: {e}"))?;
            for c in &hb.consumer_data_set {
                n.group(Some(&c.group_name));
                for s in &c.subscription_data_set {
                    if !s.topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) {
                        n.topic(Some(&s.topic), SUB);
                    }
                }
            }
        }
        _ => {}
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(code: i32, fields: &[(&str, &str)], body: &[u8]) -> RemotingCommand {
        let mut r = RemotingCommand::request(code).with_body(body.to_vec());
        for (k, v) in fields {
            r.set_field(k, v);
        }
        r
    }

    #[test]
    fn sends_need_pub_consumers_need_sub_on_topic_and_group() {
        let send = needs(&req(310, &[("a", "P"), ("b", "T")], b""), Server::Broker).unwrap();
        assert_eq!(send.resources, vec![("T".into(), PUB)]);
        let back = needs(
            &req(310, &[("a", "P"), ("b", "%RETRY%g")], b""),
            Server::Broker,
        )
        .unwrap();
        assert_eq!(back.resources, vec![("%RETRY%g".into(), SUB)]);
        let pull = needs(
            &req(11, &[("topic", "T"), ("consumerGroup", "g")], b""),
            Server::Broker,
        )
        .unwrap();
        assert_eq!(
            pull.resources,
            vec![("T".into(), SUB), ("%RETRY%g".into(), SUB)]
        );
        let hb = br#"{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T","subString":"*"},{"topic":"%RETRY%g","subString":"*"}]}],"producerDataSet":[{"groupName":"p"}]}"#;
        let beat = needs(&req(34, &[], hb), Server::Broker).unwrap();
        assert_eq!(
            beat.resources,
            vec![("%RETRY%g".into(), SUB), ("T".into(), SUB)]
        );
        assert!(needs(&req(34, &[], b"{not json"), Server::Broker).is_err());
        let acks = br#"{"brokerName":"b","acks":[{"c":"g","t":"T","so":1,"b":"AQ=="},{"c":"g","t":"T","so":9,"b":"AQ=="}]}"#;
        assert_eq!(
            needs(&req(200151, &[], acks), Server::Broker)
                .unwrap()
                .resources,
            vec![("T".into(), SUB), ("%RETRY%g".into(), SUB)]
        );
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
    }
}
