//! RocketMQ 4.x's ACL (`aclEnable=true`) for rocketpy's broker and name server: accounts
//! from `plain_acl.yml` ([`config`]), the request signature
//! ([`rocketpy_protocol::signature`]), trusted address patterns ([`address`]) and the
//! rights each request needs ([`needs`]). [`Acl::check`] decides a request; the file is read
//! again when it changes ([`Acl::reload_if_changed`]).
//!
//! The order of the checks is RocketMQ's: a globally trusted address passes; otherwise the
//! request must name a known account; an account trusted from this address passes; then its
//! signature must verify and its account must hold the rights. A refusal names what was
//! refused and for which account, never a secret.

pub mod address;
pub mod config;
pub mod guard;
pub mod needs;
pub mod perm;
pub mod rules;
pub mod rules_controller;

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use parking_lot::{Mutex, RwLock};
use rocketpy_protocol::signature::{ACCESS_KEY, SIGNATURE};
use rocketpy_protocol::RemotingCommand;

pub use config::AclConfig;
pub use needs::{needs, stored_message, Needs, Server};

/// How a caller proves who it is.
#[derive(Debug, Clone, Copy)]
pub enum Proof<'a> {
    /// A remoting request signed as RocketMQ's `AclClientRPCHook` signs (its ext fields and
    /// body).
    Request(&'a RemotingCommand),
    /// A 5.x gRPC call: the hex HMAC-SHA1 of its `x-mq-date-time` value.
    DateTime {
        /// The signed value.
        date_time: &'a str,
        /// The hex signature from the `authorization` metadata.
        signature: &'a str,
    },
    /// Already proved (the request passed [`Acl::check`] before its processor asked).
    Checked,
}

/// The ACL of one server: its accounts (reloaded when the file changes) and where it runs.
pub struct Acl {
    path: PathBuf,
    server: Server,
    config: RwLock<Arc<AclConfig>>,
    /// The file's modification time when last read (None: it did not exist).
    loaded: Mutex<Option<SystemTime>>,
}

impl std::fmt::Debug for Acl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Acl")
            .field("path", &self.path)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

impl Acl {
    /// Loads `path` (a missing file is an empty ACL: nobody but trusted addresses gets in).
    pub fn load(path: PathBuf, server: Server) -> Result<Acl, String> {
        let (config, stamp) = read(&path)?;
        Ok(Acl {
            path,
            server,
            config: RwLock::new(Arc::new(config)),
            loaded: Mutex::new(stamp),
        })
    }

    /// An ACL from `config` (tests).
    pub fn of(config: AclConfig, server: Server) -> Acl {
        Acl {
            path: PathBuf::new(),
            server,
            config: RwLock::new(Arc::new(config)),
            loaded: Mutex::new(None),
        }
    }

    /// The file it reads.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the file again if it changed since the last read; a file that no longer parses
    /// keeps the accounts there were (and the error is returned, for the log).
    pub fn reload_if_changed(&self) -> Result<bool, String> {
        let now = modified(&self.path);
        let mut loaded = self.loaded.lock();
        if now == *loaded {
            return Ok(false);
        }
        *loaded = now; // a broken file is not read again until it changes again
        let (config, _) = read(&self.path)?;
        *self.config.write() = Arc::new(config);
        Ok(true)
    }

    /// Decides `req` from `peer`: `Err` holds the refusal's remark. A request whose rule is
    /// [`rules::Rule::Stored`] passes here on its signature and the rest of its rule; its
    /// processor asks [`Acl::permits`] once it has read the stored message.
    pub fn check(&self, peer: IpAddr, req: &RemotingCommand) -> Result<(), String> {
        let needed = needs(req, self.server)?;
        let what = format!("request code={}", req.code);
        self.decide(
            peer,
            req.field_opt(ACCESS_KEY),
            Proof::Request(req),
            &needed,
            &what,
        )
    }

    /// Whether the caller of `req`, which passed [`Acl::check`], holds the rights in
    /// `needed` (those of a stored message it named, [`stored_message`]).
    pub fn permits(
        &self,
        peer: IpAddr,
        req: &RemotingCommand,
        needed: &Needs,
    ) -> Result<(), String> {
        let what = format!("request code={}", req.code);
        self.decide(
            peer,
            req.field_opt(ACCESS_KEY),
            Proof::Checked,
            needed,
            &what,
        )
    }

    /// Decides a caller from `peer` claiming `access_key` with `proof`, needing `needed`;
    /// `what` names the request in refusals. RocketMQ's order: a globally trusted address
    /// passes; then the account must exist; an account trusted from this address passes;
    /// then the proof must verify and the account must hold the rights. `what` is formatted
    /// only into a refusal: nothing is built for a request that passes.
    pub fn decide(
        &self,
        peer: IpAddr,
        access_key: Option<&str>,
        proof: Proof<'_>,
        needed: &Needs,
        what: &dyn std::fmt::Display,
    ) -> Result<(), String> {
        let cfg = self.config.read().clone();
        if cfg.global_white.iter().any(|p| p.matches(peer)) {
            return Ok(());
        }
        let Some(ak) = access_key.filter(|ak| !ak.is_empty()) else {
            return Err(format!(
                "No accessKey is configured: {what} from {peer} is not signed"
            ));
        };
        let Some(account) = cfg.accounts.get(ak) else {
            return Err(format!("No acl config for {ak}"));
        };
        if account.white.matches(peer) {
            return Ok(());
        }
        let verified = match proof {
            Proof::Request(req) => {
                let given = req.field_opt(SIGNATURE).unwrap_or_default();
                account
                    .key
                    .verify(&req.ext_fields, &req.body, req.version, given)
            }
            Proof::DateTime {
                date_time,
                signature,
            } => account.key.verify_hex(date_time.as_bytes(), signature),
            Proof::Checked => true,
        };
        if !verified {
            return Err(format!("Check signature failed for accessKey={ak}"));
        }
        if needed.admin && !account.admin {
            return Err(format!(
                "Need admin permission for {what}, but accessKey={ak} is not"
            ));
        }
        // RocketMQ's rule: an admin account with no named topic or group holds everything.
        if account.admin && account.topics.is_empty() && account.groups.is_empty() {
            return Ok(());
        }
        for (resource, right) in &needed.resources {
            let (owned, kind, name) =
                match resource.strip_prefix(rocketpy_protocol::topic::RETRY_GROUP_TOPIC_PREFIX) {
                    Some(group) => (
                        account
                            .groups
                            .get(resource)
                            .copied()
                            .unwrap_or(account.default_group),
                        "group",
                        group,
                    ),
                    None => (
                        account
                            .topics
                            .get(resource)
                            .copied()
                            .unwrap_or(account.default_topic),
                        "topic",
                        resource.as_str(),
                    ),
                };
            if !perm::grants(owned, *right) {
                return Err(format!(
                    "No {} permission on {kind} {name} for accessKey={ak}",
                    perm::name(*right)
                ));
            }
        }
        Ok(())
    }
}

fn read(path: &Path) -> Result<(AclConfig, Option<SystemTime>), String> {
    let stamp = modified(path);
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("cannot read the ACL file {}: {e}", path.display())),
    };
    let config = AclConfig::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((config, stamp))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocketpy_protocol::signature::Credentials;

    const FILE: &str = r#"
globalWhiteRemoteAddresses: ["10.1.1.*"]
accounts:
  - accessKey: producer1
    secretKey: secret-p
    defaultTopicPerm: DENY
    topicPerms: ["Orders=PUB"]
  - accessKey: consumer1
    secretKey: secret-c
    defaultTopicPerm: SUB
    defaultGroupPerm: DENY
    groupPerms: ["readers=SUB"]
    topicPerms: ["Secret=DENY"]
  - accessKey: admin001
    secretKey: secret-a
    admin: true
  - accessKey: trusted1
    secretKey: secret-t
    whiteRemoteAddress: 127.0.0.*
"#;

    fn acl() -> Acl {
        Acl::of(AclConfig::parse(FILE).unwrap(), Server::Broker)
    }

    fn signed(code: i32, fields: &[(&str, &str)], ak: &str, sk: &str) -> RemotingCommand {
        let mut r = RemotingCommand::request(code);
        for (k, v) in fields {
            r.set_field(k, v);
        }
        Credentials::new(ak.into(), sk.into(), None).sign(&mut r);
        r
    }

    const HOST: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 7));

    #[test]
    fn rights_decide_and_refusals_name_what() {
        let acl = acl();
        let send = |topic| signed(310, &[("a", "p"), ("b", topic)], "producer1", "secret-p");
        assert_eq!(acl.check(HOST, &send("Orders")), Ok(()));
        assert_eq!(
            acl.check(HOST, &send("Other")).unwrap_err(),
            "No PUB permission on topic Other for accessKey=producer1"
        );
        let pull = |topic, group| {
            signed(
                11,
                &[("topic", topic), ("consumerGroup", group)],
                "consumer1",
                "secret-c",
            )
        };
        assert_eq!(acl.check(HOST, &pull("Orders", "readers")), Ok(()));
        assert!(acl
            .check(HOST, &pull("Orders", "others"))
            .unwrap_err()
            .contains("group others"));
        assert!(acl
            .check(HOST, &pull("Secret", "readers"))
            .unwrap_err()
            .contains("topic Secret"));
        let create = |ak, sk| signed(17, &[("topic", "New")], ak, sk);
        assert_eq!(acl.check(HOST, &create("admin001", "secret-a")), Ok(()));
        assert!(acl
            .check(HOST, &create("producer1", "secret-p"))
            .unwrap_err()
            .starts_with("Need admin permission for request code=17"));
    }

    #[test]
    fn credentials_and_addresses_are_checked_in_rocketmqs_order() {
        let acl = acl();
        let unsigned = RemotingCommand::request(30).with_field("topic", "T");
        assert!(acl
            .check(HOST, &unsigned)
            .unwrap_err()
            .starts_with("No accessKey is configured"));
        assert_eq!(
            acl.check("10.1.1.9".parse().unwrap(), &unsigned),
            Ok(()),
            "globally trusted"
        );
        let wrong = signed(310, &[("b", "Orders")], "producer1", "not-the-secret");
        assert_eq!(
            acl.check(HOST, &wrong).unwrap_err(),
            "Check signature failed for accessKey=producer1"
        );
        let unknown = signed(310, &[("b", "Orders")], "nobody00", "x");
        assert_eq!(
            acl.check(HOST, &unknown).unwrap_err(),
            "No acl config for nobody00"
        );
        let mut tampered = signed(310, &[("b", "Orders")], "producer1", "secret-p");
        tampered.set_field("b", "Other");
        assert!(acl
            .check(HOST, &tampered)
            .unwrap_err()
            .starts_with("Check signature failed"));
        let trusted = signed(17, &[("topic", "T")], "trusted1", "wrong!!");
        assert_eq!(
            acl.check("127.0.0.1".parse().unwrap(), &trusted),
            Ok(()),
            "trusted address"
        );
        assert!(acl.check(HOST, &trusted).is_err());
    }

    #[test]
    fn the_file_is_read_again_when_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plain_acl.yml");
        let acl = Acl::load(path.clone(), Server::Broker).unwrap();
        let req = signed(310, &[("b", "Orders")], "producer1", "secret-p");
        assert!(acl.check(HOST, &req).is_err(), "no file: nobody");
        std::fs::write(&path, FILE).unwrap();
        assert_eq!(acl.reload_if_changed(), Ok(true));
        assert_eq!(acl.check(HOST, &req), Ok(()));
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&path, "accounts: [").unwrap();
        assert!(acl.reload_if_changed().is_err());
        assert_eq!(
            acl.check(HOST, &req),
            Ok(()),
            "a broken file keeps the accounts"
        );
        assert_eq!(
            acl.reload_if_changed(),
            Ok(false),
            "and is not read again until it changes"
        );
    }
}
