//! The topic and consumer group a consuming request names, checked before anything is done
//! with them, as RocketMQ's proxy checks them (`GrpcValidator`): a missing, blank or
//! malformed topic is ILLEGAL_TOPIC, and so is a system topic; a group likewise is
//! ILLEGAL_CONSUMER_GROUP. Without this, an ack with an empty group was answered OK and wrote
//! a checkpoint under group "".

use rocketpy_protocol::topic::{is_system_topic, retry_topic, validate_topic};

use crate::convert::wrap;
use crate::pb::{self, Code};
use crate::status::ProxyError;

/// Prefix of RocketMQ's own consumer groups (`MixAll.CID_RMQ_SYS_PREFIX`).
const SYSTEM_GROUP_PREFIX: &str = "CID_RMQ_SYS_";

/// The request's topic (its namespace applied), or ILLEGAL_TOPIC.
pub fn topic(resource: Option<&pb::Resource>) -> Result<String, ProxyError> {
    let name = resource.map(wrap).unwrap_or_default();
    if name.trim().is_empty() {
        return Err(ProxyError::new(Code::IllegalTopic, "the topic is blank"));
    }
    validate_topic(&name).map_err(|e| ProxyError::new(Code::IllegalTopic, e.to_string()))?;
    if is_system_topic(&name) {
        return Err(ProxyError::new(
            Code::IllegalTopic,
            "cannot access system topic",
        ));
    }
    Ok(name)
}

/// The request's consumer group (its namespace applied), or ILLEGAL_CONSUMER_GROUP. A
/// group's retry topic must be a valid topic, as the broker requires.
pub fn group(resource: Option<&pb::Resource>) -> Result<String, ProxyError> {
    let name = resource.map(wrap).unwrap_or_default();
    if name.trim().is_empty() {
        return Err(ProxyError::new(
            Code::IllegalConsumerGroup,
            "the consumer group is blank",
        ));
    }
    if validate_topic(&retry_topic(&name)).is_err() {
        return Err(ProxyError::new(
            Code::IllegalConsumerGroup,
            format!(
                "the consumer group {name:?} is invalid: at most 120 characters of letters, \
                 digits, %, |, _ and -"
            ),
        ));
    }
    if name.starts_with(SYSTEM_GROUP_PREFIX) {
        return Err(ProxyError::new(
            Code::IllegalConsumerGroup,
            "cannot use system consumer group",
        ));
    }
    Ok(name)
}

/// Both, topic first (as RocketMQ checks them).
pub fn topic_and_group(
    topic_res: Option<&pb::Resource>,
    group_res: Option<&pb::Resource>,
) -> Result<(String, String), ProxyError> {
    Ok((topic(topic_res)?, group(group_res)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(name: &str) -> pb::Resource {
        pb::Resource {
            name: name.into(),
            ..Default::default()
        }
    }

    #[test]
    fn blank_malformed_and_system_names_are_refused_with_their_codes() {
        let code = |r: Result<String, ProxyError>| r.err().map(|e| e.status().code);
        let topic_code = Some(Code::IllegalTopic as i32);
        let group_code = Some(Code::IllegalConsumerGroup as i32);
        assert_eq!(code(topic(None)), topic_code);
        assert_eq!(code(topic(Some(&res(" ")))), topic_code);
        assert_eq!(code(topic(Some(&res("a b")))), topic_code);
        assert_eq!(
            code(topic(Some(&res("RMQ_SYS_TRANS_HALF_TOPIC")))),
            topic_code
        );
        assert_eq!(topic(Some(&res("Orders"))).ok().as_deref(), Some("Orders"));
        assert_eq!(code(group(None)), group_code);
        assert_eq!(code(group(Some(&res("")))), group_code);
        assert_eq!(code(group(Some(&res(&"g".repeat(121))))), group_code);
        assert_eq!(code(group(Some(&res("CID_RMQ_SYS_TRANS")))), group_code);
        assert_eq!(
            group(Some(&res("orders-group"))).ok().as_deref(),
            Some("orders-group")
        );
    }
}
