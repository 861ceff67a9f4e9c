//! What a 5.x client's call carries to prove who it comes from. A 5.x client sends
//! `authorization: MQv2-HMAC-SHA1 Credential=<accessKey>, SignedHeaders=x-mq-date-time,
//! Signature=<hex>`, the hex HMAC-SHA1 of its `x-mq-date-time` value keyed by its secret. As
//! RocketMQ's proxy reads it: the algorithm and the signed header list are not looked at, the
//! access key is the credential up to any `/`, and the signature's hex may be either case.
//! The ACL decides with it in [`crate::auth`].

use tonic::metadata::MetadataMap;

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
