//! The gRPC endpoint's ACL (`aclEnable=true`): each call is decided from the 5.x client's
//! own credentials, against the same `plain_acl.yml` accounts and rights as the broker's
//! remoting port — never the proxy's account, which is the one it signs its requests to
//! brokers with.
//!
//! A 5.x client proves who it is with its `authorization` metadata ([`crate::credential`]).
//! A refusal ends the call with gRPC PERMISSION_DENIED
//! (as RocketMQ's proxy with the plain ACL), its message naming what was refused, never a
//! secret; a call without credentials is refused the same way (RocketMQ's proxy fails it
//! with INTERNAL on a null header). The rights of each method are in
//! [`rocketpy_acl::rules::GRPC`].

use rocketpy_acl::{Needs, Proof};

use crate::context::Context;
use crate::state::ProxyInner;

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
