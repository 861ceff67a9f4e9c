//! What every call carries besides its message: the client's id and namespace (the
//! `x-mq-*` metadata of 5.x clients), its address, and the time it may take (`grpc-timeout`).

use std::net::SocketAddr;
use std::time::Duration;

use crate::pb::Code;
use crate::status::ProxyError;

/// The caller of one RPC.
#[derive(Debug, Clone)]
pub struct Context {
    /// `x-mq-client-id`.
    pub client_id: String,
    /// `x-mq-namespace` (may be empty).
    pub namespace: String,
    /// `x-mq-language`.
    pub language: String,
    /// The client's address.
    pub peer: Option<SocketAddr>,
    /// What is left of the call's deadline, if it has one.
    pub timeout: Option<Duration>,
    /// The `authorization` the call carries (the ACL decides it: [`crate::auth`]).
    pub credential: Option<crate::credential::Credential>,
}

impl Context {
    /// Reads the metadata of `req`; a call without a client id is refused
    /// (CLIENT_ID_REQUIRED), as RocketMQ's proxy refuses it.
    pub fn of<T>(req: &tonic::Request<T>) -> Result<Context, ProxyError> {
        let md = req.metadata();
        let text = |k: &str| {
            md.get(k)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .trim()
                .to_owned()
        };
        let client_id = text("x-mq-client-id");
        if client_id.is_empty() {
            return Err(ProxyError::new(
                Code::ClientIdRequired,
                "client id cannot be empty",
            ));
        }
        Ok(Context {
            client_id,
            namespace: text("x-mq-namespace"),
            language: text("x-mq-language"),
            peer: req.remote_addr(),
            timeout: grpc_timeout(&text("grpc-timeout")),
            credential: crate::credential::Credential::of(md),
        })
    }
}

/// Parses gRPC's `grpc-timeout` header: digits and a unit (H, M, S, m, u, n).
pub fn grpc_timeout(text: &str) -> Option<Duration> {
    let (digits, unit) = text.split_at(text.len().checked_sub(1)?);
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n.saturating_mul(3600)),
        "M" => Duration::from_secs(n.saturating_mul(60)),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeouts_parse() {
        assert_eq!(grpc_timeout("23S"), Some(Duration::from_secs(23)));
        assert_eq!(grpc_timeout("3000m"), Some(Duration::from_millis(3000)));
        assert_eq!(grpc_timeout("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(grpc_timeout(""), None);
        assert_eq!(grpc_timeout("12x"), None);
    }
}
