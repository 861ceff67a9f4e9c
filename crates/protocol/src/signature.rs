//! The 4.x request signature (RocketMQ's `AclClientRPCHook` / `AclUtils`): a client adds
//! `AccessKey` (and `SecurityToken`) to a request's ext fields, then signs the values of all
//! its ext fields — sorted by key, concatenated without separators — followed by the body,
//! with HmacSHA1 keyed by its secret key; `Signature` is the standard base64 of the MAC. The
//! server recomputes it over what it received, so every field a client sends is covered,
//! whichever header it thinks it sent (the C++ client signs its `OnsChannel` too).

use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha1::Sha1;

use crate::command::{ExtFields, RemotingCommand};

/// Ext field naming the account.
pub const ACCESS_KEY: &str = "AccessKey";
/// Ext field with the signature.
pub const SIGNATURE: &str = "Signature";
/// Ext field with a security token (passed on, never checked, as in RocketMQ).
pub const SECURITY_TOKEN: &str = "SecurityToken";
/// QUERY_MESSAGE's flag that 4.9.0–4.9.3 clients add after signing (RocketMQ issue #5310).
const UNIQUE_KEY_QUERY: &str = "_UNIQUE_KEY_QUERY";
/// Protocol version of 4.9.3 (`MQVersion.Version.V4_9_3`): its clients and older ones do not
/// sign `_UNIQUE_KEY_QUERY`; later ones do.
const V4_9_3: i32 = 399;

type HmacSha1 = Hmac<Sha1>;

/// The bytes signed: the ext fields' values in key order (less `Signature`, and less
/// `_UNIQUE_KEY_QUERY` for clients of `version` 4.9.3 and older), then the body.
pub fn content(fields: &ExtFields, body: &[u8], version: i32) -> Vec<u8> {
    let mut keys: Vec<&String> = fields
        .keys()
        .filter(|k| *k != SIGNATURE && !(*k == UNIQUE_KEY_QUERY && version <= V4_9_3))
        .collect();
    keys.sort();
    let mut out = Vec::with_capacity(fields.values().map(String::len).sum::<usize>() + body.len());
    for k in keys {
        out.extend_from_slice(fields[k].as_bytes());
    }
    out.extend_from_slice(body);
    out
}

/// The signature of `content` with `secret_key`.
pub fn sign(content: &[u8], secret_key: &str) -> String {
    let mut mac = HmacSha1::new_from_slice(secret_key.as_bytes()).expect("HMAC takes any key");
    mac.update(content);
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// Whether `signature` (base64) signs `content` with `secret_key`; compared in constant time.
pub fn verify(content: &[u8], secret_key: &str, signature: &str) -> bool {
    let Ok(given) = base64::engine::general_purpose::STANDARD.decode(signature.trim()) else {
        return false;
    };
    let mut mac = HmacSha1::new_from_slice(secret_key.as_bytes()).expect("HMAC takes any key");
    mac.update(content);
    mac.verify_slice(&given).is_ok()
}

/// Signs a request as a client does: adds `AccessKey` (and `SecurityToken`), then
/// `Signature` over every ext field and the body.
pub fn sign_request(
    fields: &mut ExtFields,
    body: &[u8],
    access_key: &str,
    secret_key: &str,
    security_token: Option<&str>,
) {
    fields.remove(SIGNATURE);
    fields.insert(ACCESS_KEY.to_owned(), access_key.to_owned());
    if let Some(token) = security_token {
        fields.insert(SECURITY_TOKEN.to_owned(), token.to_owned());
    }
    // Clients sign everything they send: the version rule only spares old clients.
    let signed = content(fields, body, i32::MAX);
    fields.insert(SIGNATURE.to_owned(), sign(&signed, secret_key));
}

/// An account's keys, as a client signs its requests with them (RocketMQ's
/// `SessionCredentials`).
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The account.
    pub access_key: String,
    /// Its secret: never sent, never logged.
    pub secret_key: String,
    /// An optional security token, sent along.
    pub security_token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key", &self.access_key)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// Signs `cmd` (its header must be in its ext fields already).
    pub fn sign(&self, cmd: &mut RemotingCommand) {
        sign_request(
            &mut cmd.ext_fields,
            &cmd.body,
            &self.access_key,
            &self.secret_key,
            self.security_token.as_deref(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, &str)]) -> ExtFields {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_published_test_vector() {
        // rocketmq-client-rust's AclClientRPCHook unit test (the Java algorithm, 4.9.4+).
        let f = fields(&[
            ("AccessKey", "ak"),
            ("SecurityToken", "token"),
            ("a", "first"),
            ("z", "last"),
        ]);
        let c = content(&f, b"body", 413);
        assert_eq!(c, b"aktokenfirstlastbody");
        assert_eq!(sign(&c, "secret"), "wuJkFDNRMKY6aFXTDwT/vg0UC8M=");
        assert!(verify(&c, "secret", "wuJkFDNRMKY6aFXTDwT/vg0UC8M="));
        assert!(!verify(&c, "secreT", "wuJkFDNRMKY6aFXTDwT/vg0UC8M="));
        assert!(!verify(&c, "secret", "not base64!"));
    }

    #[test]
    fn signing_covers_every_field_but_the_signature() {
        let mut f = fields(&[("topic", "T"), ("queueId", "3")]);
        sign_request(&mut f, b"x", "account1", "secret1", None);
        let sig = f[SIGNATURE].clone();
        assert!(verify(&content(&f, b"x", 413), "secret1", &sig));
        f.insert("queueId".into(), "4".into());
        assert!(
            !verify(&content(&f, b"x", 413), "secret1", &sig),
            "a changed field breaks it"
        );
        f.insert("queueId".into(), "3".into());
        assert!(
            !verify(&content(&f, b"y", 413), "secret1", &sig),
            "a changed body breaks it"
        );
    }

    #[test]
    fn old_clients_query_flag_is_left_out() {
        let mut f = fields(&[("topic", "T")]);
        sign_request(&mut f, b"", "account1", "secret1", None);
        let sig = f[SIGNATURE].clone();
        f.insert(UNIQUE_KEY_QUERY.into(), "false".into()); // added after signing (4.9.3)
        assert!(verify(&content(&f, b"", 399), "secret1", &sig));
        assert!(!verify(&content(&f, b"", 401), "secret1", &sig));
    }
}
