//! The gRPC endpoint's ACL (`aclEnable=true`): each call is decided from the 5.x client's
//! own credentials, against the same `plain_acl.yml` accounts and rights as the broker's
//! remoting port — never the proxy's account, which is the one it signs its requests to
//! brokers with.
//!
//! A 5.x client sends `authorization: MQv2-HMAC-SHA1 Credential=<accessKey>,
//! SignedHeaders=x-mq-date-time, Signature=<hex>`, the hex HMAC-SHA1 of its `x-mq-date-time`
//! value keyed by its secret. As RocketMQ's proxy reads it: the algorithm and the signed
//! header list are not looked at, the access key is the credential up to any `/`, and the
//! signature's hex may be either case. A refusal ends the call with gRPC PERMISSION_DENIED
//! (as RocketMQ's proxy with the plain ACL), its message naming what was refused, never a
//! secret; a call without credentials is refused the same way (RocketMQ's proxy fails it
//! with INTERNAL on a null header). The rights of each method are in
//! [`rocketpy_acl::rules::GRPC`].

use rocketpy_acl::{Needs, Proof};
use tonic::metadata::MetadataMap;

use crate::context::Context;
use crate::state::ProxyInner;

/// What a call carries to prove who it comes from.
#[derive(Debug, Clone, Default)]
pub struct Credential {
    /// The access key of `Credential=`.
    pub access_key: String,
    /// The hex signature of `Signature=`.
    pub signature: String,
    /// `x-mq-date-time`, the signed value.
    pub date_time: String,
}

impl Credential {
    /// Reads the `authorization` and `x-mq-date-time` metadata; `None` without them.
    pub fn of(md: &MetadataMap) -> Option<Credential> {
        let authorization = md.get("authorization")?.to_str().ok()?;
        let (access_key, signature) = parse_authorization(authorization)?;
        let date_time = md.get("x-mq-date-time")?.to_str().ok()?.to_owned();
        Some(Credential {
            access_key,
            signature,
            date_time,
        })
    }
}

/// The access key and signature of an `authorization` value, as RocketMQ's proxy splits it:
/// after the algorithm, comma-separated `key=value` pairs.
pub fn parse_authorization(value: &str) -> Option<(String, String)> {
    let (_algorithm, pairs) = value.trim().split_once(' ')?;
    let (mut access_key, mut signature) = (None, None);
    for pair in pairs.split(',') {
        let Some((key, v)) = pair.trim().split_once('=') else {
            continue;
        };
        match key.trim() {
            "Credential" => access_key = v.trim().split('/').next().map(str::to_owned),
            "Signature" => signature = Some(v.trim().to_owned()),
            _ => {}
        }
    }
    Some((access_key?, signature?))
}

/// Decides a call of `method` from `ctx` needing `needed` (computed only with the ACL on);
/// `Err` is the status that ends the call.
pub fn authorize(
    proxy: &ProxyInner,
    ctx: &Context,
    method: &str,
    needed: impl FnOnce() -> Needs,
) -> Result<(), tonic::Status> {
    let Some(acl) = &proxy.config.acl else {
        return Ok(());
    };
    let peer = ctx
        .peer
        .map(|p| p.ip())
        .unwrap_or(std::net::IpAddr::from([0, 0, 0, 0]));
    let cred = ctx.credential.as_ref();
    let proof = match cred {
        Some(c) => Proof::DateTime {
            date_time: &c.date_time,
            signature: &c.signature,
        },
        None => Proof::DateTime {
            date_time: "",
            signature: "",
        },
    };
    let what = format_args!("gRPC {method}");
    acl.decide(
        peer,
        cred.map(|c| c.access_key.as_str()),
        proof,
        &needed(),
        &what,
    )
    .map_err(|remark| {
        tracing::info!(%peer, method, remark = %remark, "gRPC call refused");
        tonic::Status::permission_denied(remark)
    })
}

/// What a call on `topic` (and `group`) needs: `right` on the topic, SUB on the group.
pub fn on(topic: Option<&str>, right: u8, group: Option<&str>) -> Needs {
    let mut n = Needs::default();
    if let Some(g) = group.filter(|g| !g.is_empty()) {
        n.group(g);
    }
    if let Some(t) = topic.filter(|t| !t.is_empty()) {
        n.topic_of(t, right, group);
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorization_values_parse_as_rocketmq_reads_them() {
        let v = "MQv2-HMAC-SHA1 Credential=ak1, SignedHeaders=x-mq-date-time, Signature=0a1B";
        assert_eq!(
            parse_authorization(v),
            Some(("ak1".to_owned(), "0a1B".to_owned()))
        );
        let scoped = "MQv2-HMAC-SHA1 Credential=ak1/2024/region, Signature=ff";
        assert_eq!(parse_authorization(scoped).unwrap().0, "ak1");
        // The Python client sends empty credentials when it has none.
        let empty = "MQv2-HMAC-SHA1 Credential=, SignedHeaders=x-mq-date-time, Signature=00";
        assert_eq!(parse_authorization(empty).unwrap().0, "");
        assert_eq!(parse_authorization("garbage"), None);
        assert_eq!(parse_authorization("MQv2-HMAC-SHA1 Signature=00"), None);
    }
}
