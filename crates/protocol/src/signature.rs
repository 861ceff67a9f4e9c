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

/// Whether `key` takes part in the signed content (see [`content`]).
fn signed_key(key: &str, version: i32) -> bool {
    key != SIGNATURE && !(key == UNIQUE_KEY_QUERY && version <= V4_9_3)
}

/// The bytes signed: the ext fields' values in key order (less `Signature`, and less
/// `_UNIQUE_KEY_QUERY` for clients of `version` 4.9.3 and older), then the body.
/// ([`sign_fields`] and [`verify_request`] hash the same bytes without copying them.)
pub fn content(fields: &ExtFields, body: &[u8], version: i32) -> Vec<u8> {
    let mut out = Vec::with_capacity(fields.values().map(String::len).sum::<usize>() + body.len());
    for_each_signed(fields, body, version, |part| out.extend_from_slice(part));
    out
}

/// Feeds the signed content to `sink` piece by piece, in order.
fn for_each_signed(fields: &ExtFields, body: &[u8], version: i32, mut sink: impl FnMut(&[u8])) {
    // Pairs, not keys: looking each key up again would hash it again.
    let mut pairs: Vec<(&String, &String)> = fields
        .iter()
        .filter(|(k, _)| signed_key(k, version))
        .collect();
    pairs.sort_unstable_by(|a, b| a.0.cmp(b.0));
    for (_, v) in pairs {
        sink(v.as_bytes());
    }
    sink(body);
}

fn mac_of(fields: &ExtFields, body: &[u8], version: i32, secret_key: &str) -> HmacSha1 {
    let mut mac = HmacSha1::new_from_slice(secret_key.as_bytes()).expect("HMAC takes any key");
    for_each_signed(fields, body, version, |part| mac.update(part));
    mac
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

/// The signature of a request's content ([`content`]) with `secret_key`.
pub fn sign_fields(fields: &ExtFields, body: &[u8], version: i32, secret_key: &str) -> String {
    let mac = mac_of(fields, body, version, secret_key);
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// Whether `signature` (base64) signs a request's content ([`content`]) with `secret_key`;
/// compared in constant time.
pub fn verify_request(
    fields: &ExtFields,
    body: &[u8],
    version: i32,
    secret_key: &str,
    signature: &str,
) -> bool {
    let Ok(given) = base64::engine::general_purpose::STANDARD.decode(signature.trim()) else {
        return false;
    };
    mac_of(fields, body, version, secret_key)
        .verify_slice(&given)
        .is_ok()
}

/// A secret key ready to sign and verify: HMAC's keyed state is computed once (a server
/// keeps one per account; with it a request's check hashes only its content).
#[derive(Clone)]
pub struct SigningKey(HmacSha1);

impl SigningKey {
    /// The key of `secret_key`.
    pub fn new(secret_key: &str) -> Self {
        SigningKey(HmacSha1::new_from_slice(secret_key.as_bytes()).expect("HMAC takes any key"))
    }

    fn mac(&self, fields: &ExtFields, body: &[u8], version: i32) -> HmacSha1 {
        let mut mac = self.0.clone();
        for_each_signed(fields, body, version, |part| mac.update(part));
        mac
    }

    /// The signature of a request's content ([`content`]), as [`sign_fields`].
    pub fn sign(&self, fields: &ExtFields, body: &[u8], version: i32) -> String {
        let mac = self.mac(fields, body, version);
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    }

    /// Whether `signature` signs a request's content, as [`verify_request`].
    pub fn verify(&self, fields: &ExtFields, body: &[u8], version: i32, signature: &str) -> bool {
        let Ok(given) = base64::engine::general_purpose::STANDARD.decode(signature.trim()) else {
            return false;
        };
        self.mac(fields, body, version).verify_slice(&given).is_ok()
    }

    /// Whether `signature` (hex, either case) is the HMAC-SHA1 of `content`: the 5.x clients'
    /// `authorization` signature of their `x-mq-date-time`. Compared in constant time.
    pub fn verify_hex(&self, content: &[u8], signature: &str) -> bool {
        let Some(given) = hex_decode(signature.trim()) else {
            return false;
        };
        let mut mac = self.0.clone();
        mac.update(content);
        mac.verify_slice(&given).is_ok()
    }

    /// The lowercase hex HMAC-SHA1 of `content` (how the 5.x clients sign).
    pub fn sign_hex(&self, content: &[u8]) -> String {
        let mut mac = self.0.clone();
        mac.update(content);
        mac.finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

fn hex_decode(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    text.as_bytes()
        .chunks(2)
        .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(..)")
    }
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
    let signature = sign_fields(fields, body, i32::MAX, secret_key);
    fields.insert(SIGNATURE.to_owned(), signature);
}

/// An account's keys, as a client signs its requests with them (RocketMQ's
/// `SessionCredentials`).
#[derive(Clone)]
pub struct Credentials {
    /// The account.
    pub access_key: String,
    /// An optional security token, sent along.
    pub security_token: Option<String>,
    /// Its secret: never sent, never logged.
    secret_key: String,
    key: SigningKey,
}

impl PartialEq for Credentials {
    fn eq(&self, other: &Self) -> bool {
        (&self.access_key, &self.secret_key, &self.security_token)
            == (&other.access_key, &other.secret_key, &other.security_token)
    }
}

impl Eq for Credentials {}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key", &self.access_key)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// The credentials of an account.
    pub fn new(access_key: String, secret_key: String, security_token: Option<String>) -> Self {
        Credentials {
            key: SigningKey::new(&secret_key),
            access_key,
            secret_key,
            security_token,
        }
    }

    /// The secret key.
    pub fn secret_key(&self) -> &str {
        &self.secret_key
    }

    /// Signs `cmd` as [`sign_request`] does (its header must be in its ext fields already).
    pub fn sign(&self, cmd: &mut RemotingCommand) {
        let fields = &mut cmd.ext_fields;
        fields.remove(SIGNATURE);
        fields.insert(ACCESS_KEY.to_owned(), self.access_key.clone());
        if let Some(token) = &self.security_token {
            fields.insert(SECURITY_TOKEN.to_owned(), token.clone());
        }
        let signature = self.key.sign(fields, &cmd.body, i32::MAX);
        fields.insert(SIGNATURE.to_owned(), signature);
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
        let sig = sign_fields(&f, b"body", 413, "secret");
        assert_eq!(sig, "wuJkFDNRMKY6aFXTDwT/vg0UC8M=");
        assert!(verify_request(&f, b"body", 413, "secret", &sig));
        assert!(!verify_request(&f, b"bodY", 413, "secret", &sig));
        let key = SigningKey::new("secret");
        assert_eq!(key.sign(&f, b"body", 413), sig);
        assert!(key.verify(&f, b"body", 413, &sig));
        assert!(!SigningKey::new("secreT").verify(&f, b"body", 413, &sig));
        let mut cmd = RemotingCommand::request(10);
        cmd.ext_fields = fields(&[("a", "first"), ("z", "last")]);
        cmd.body = bytes::Bytes::from_static(b"body");
        Credentials::new("ak".into(), "secret".into(), Some("token".into())).sign(&mut cmd);
        assert_eq!(cmd.ext_fields[SIGNATURE], sig, "as sign_request signs");
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
