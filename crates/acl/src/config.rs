//! `plain_acl.yml` (RocketMQ 4.x's plain access configuration):
//!
//! ```yaml
//! globalWhiteRemoteAddresses: ["10.10.103.*"]
//! accounts:
//!   - accessKey: RocketMQ
//!     secretKey: 12345678
//!     whiteRemoteAddress: ""
//!     admin: false
//!     defaultTopicPerm: DENY
//!     defaultGroupPerm: SUB
//!     topicPerms: ["topicA=DENY", "topicB=PUB|SUB"]
//!     groupPerms: ["groupA=DENY", "groupB=PUB|SUB"]
//! ```
//!
//! Keys are RocketMQ's; unknown keys (`dataVersion`) are ignored. A right other than `PUB`,
//! `SUB`, `PUB|SUB` or `DENY` is read as DENY, as RocketMQ reads it, and logged.

use std::collections::HashMap;

use rocketpy_protocol::signature::SigningKey;
use rocketpy_protocol::topic::RETRY_GROUP_TOPIC_PREFIX;
use serde::Deserialize;

use crate::address::AddressPattern;
use crate::perm;

/// Shortest access and secret key RocketMQ accepts.
const MIN_KEY_LEN: usize = 7;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawFile {
    #[serde(default)]
    global_white_remote_addresses: Vec<String>,
    #[serde(default)]
    accounts: Vec<RawAccount>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawAccount {
    #[serde(default)]
    access_key: Option<serde_norway::Value>,
    #[serde(default)]
    secret_key: Option<serde_norway::Value>,
    #[serde(default)]
    white_remote_address: Option<String>,
    #[serde(default)]
    admin: Option<serde_norway::Value>,
    #[serde(default)]
    default_topic_perm: Option<String>,
    #[serde(default)]
    default_group_perm: Option<String>,
    #[serde(default)]
    topic_perms: Vec<String>,
    #[serde(default)]
    group_perms: Vec<String>,
}

/// One account (its Debug form leaves out the secret).
#[derive(Clone)]
pub struct Account {
    /// Its access key.
    pub access_key: String,
    /// Its secret key.
    pub secret_key: String,
    /// The secret, keyed for checking signatures.
    pub key: SigningKey,
    /// Addresses it is trusted from without a signature or rights.
    pub white: AddressPattern,
    /// Whether it may make admin requests.
    pub admin: bool,
    /// Its right on topics not named in `topics`.
    pub default_topic: u8,
    /// Its right on groups not named in `groups`.
    pub default_group: u8,
    /// Rights by topic.
    pub topics: HashMap<String, u8>,
    /// Rights by group, keyed by the group's retry topic (`%RETRY%group`, as RocketMQ keys
    /// them).
    pub groups: HashMap<String, u8>,
}

impl std::fmt::Debug for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Account")
            .field("access_key", &self.access_key)
            .field("white", &self.white)
            .field("admin", &self.admin)
            .field("default_topic", &self.default_topic)
            .field("default_group", &self.default_group)
            .field("topics", &self.topics)
            .field("groups", &self.groups)
            .finish_non_exhaustive()
    }
}

/// The whole file.
#[derive(Debug, Clone, Default)]
pub struct AclConfig {
    /// Addresses trusted without credentials.
    pub global_white: Vec<AddressPattern>,
    /// Accounts by access key.
    pub accounts: HashMap<String, Account>,
}

/// A YAML scalar as text (keys written as numbers, `12345678`, are read as text).
fn scalar(v: &serde_norway::Value) -> Option<String> {
    match v {
        serde_norway::Value::String(s) => Some(s.clone()),
        serde_norway::Value::Number(n) => Some(n.to_string()),
        serde_norway::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn right(text: Option<&str>, what: &str) -> u8 {
    match text {
        None => perm::DENY,
        Some(t) => perm::parse(t).unwrap_or_else(|| {
            tracing::warn!(
                right = t,
                what,
                "unknown right in the ACL file, read as DENY"
            );
            perm::DENY
        }),
    }
}

fn rights(
    entries: &[String],
    what: &str,
    key: impl Fn(&str) -> String,
) -> Result<HashMap<String, u8>, String> {
    let mut out = HashMap::new();
    for e in entries {
        let parts: Vec<&str> = e
            .split('=')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        let [name, r] = parts[..] else {
            return Err(format!("Parse resource permission failed for {what}:{e}"));
        };
        out.insert(key(name), right(Some(r), what));
    }
    Ok(out)
}

impl AclConfig {
    /// Parses the YAML text; errors name what is wrong (never a secret key).
    pub fn parse(text: &str) -> Result<AclConfig, String> {
        if text.trim().is_empty() {
            return Ok(AclConfig::default());
        }
        let raw: RawFile =
            serde_norway::from_str(text).map_err(|e| format!("the ACL file is not valid: {e}"))?;
        let mut cfg = AclConfig {
            global_white: raw
                .global_white_remote_addresses
                .iter()
                .map(|p| AddressPattern::parse(p))
                .collect::<Result<_, _>>()?,
            accounts: HashMap::new(),
        };
        for a in raw.accounts {
            let ak = a.access_key.as_ref().and_then(scalar).unwrap_or_default();
            let sk = a.secret_key.as_ref().and_then(scalar).unwrap_or_default();
            if ak.len() < MIN_KEY_LEN || sk.len() < MIN_KEY_LEN {
                return Err(format!(
                    "account {ak:?}: the accessKey and secretKey cannot be null and must have at least {MIN_KEY_LEN} characters"
                ));
            }
            let admin = match a.admin.as_ref() {
                None => false,
                Some(serde_norway::Value::Bool(b)) => *b,
                Some(v) => scalar(v).is_some_and(|s| s.eq_ignore_ascii_case("true")),
            };
            let account = Account {
                white: AddressPattern::parse(a.white_remote_address.as_deref().unwrap_or(""))?,
                admin,
                default_topic: right(a.default_topic_perm.as_deref(), "defaultTopicPerm"),
                default_group: right(a.default_group_perm.as_deref(), "defaultGroupPerm"),
                topics: rights(&a.topic_perms, "topic", str::to_owned)?,
                groups: rights(&a.group_perms, "group", |g| {
                    format!("{RETRY_GROUP_TOPIC_PREFIX}{g}")
                })?,
                key: SigningKey::new(&sk),
                secret_key: sk,
                access_key: ak.clone(),
            };
            // RocketMQ keeps the first account of an access key.
            cfg.accounts.entry(ak).or_insert(account);
        }
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rocketmqs_example_file_parses() {
        let cfg = AclConfig::parse(
            r#"
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB
  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    admin: true
dataVersion:
  - counter: 1
    timestamp: 1700000000000
"#,
        )
        .unwrap();
        assert_eq!(cfg.global_white.len(), 2);
        let a = &cfg.accounts["RocketMQ"];
        assert_eq!(
            a.secret_key, "12345678",
            "a number in YAML is the text of the key"
        );
        assert!(!a.admin);
        assert_eq!((a.default_topic, a.default_group), (perm::DENY, perm::SUB));
        assert_eq!(a.topics["topicB"], perm::PUB | perm::SUB);
        assert_eq!(a.groups["%RETRY%groupA"], perm::DENY);
        let b = &cfg.accounts["rocketmq2"];
        assert!(b.admin && b.default_topic == perm::DENY && b.topics.is_empty());
        assert!(b.white.matches("192.168.1.9".parse().unwrap()));
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let short = AclConfig::parse("accounts:\n  - accessKey: short\n    secretKey: 12345678\n");
        assert!(short.unwrap_err().contains("at least 7"));
        let entry = AclConfig::parse(
            "accounts:\n  - accessKey: account1\n    secretKey: 12345678\n    topicPerms: [\"t\"]\n",
        );
        assert!(entry.unwrap_err().contains("topic:t"));
        assert!(AclConfig::parse("accounts: [").is_err());
        assert!(AclConfig::parse("globalWhiteRemoteAddresses: [\"1.2.3\"]").is_err());
        assert!(AclConfig::parse("").unwrap().accounts.is_empty());
    }
}
