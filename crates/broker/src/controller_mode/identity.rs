//! A broker's controller id on disk (RocketMQ's `brokerIdentity` file, `cluster#name#id`, and
//! the `brokerIdentity-temp` file of an id being applied, `cluster#name#id#addr;millis`):
//! docs/controller-design.md §4.1 step 3.
//!
//! What must stay true:
//! - The id is written (with the previous content kept as `.bak`) only after the controller
//!   accepted it, and read back before the broker asks for a new one: a broker keeps its id
//!   across restarts, so its place in the SyncStateSet survives them.
//! - A file naming another cluster or broker name is an error, never silently replaced: the
//!   store belongs to another group.
//! - A damaged file with no usable `.bak` is an error (asking for a new id would make this
//!   broker a stranger to its group while its old id still sits in the SyncStateSet).

use std::path::{Path, PathBuf};

use rocketpy_store::StoreError;

use crate::config_file;

/// What `brokerIdentity` holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub cluster_name: String,
    pub broker_name: String,
    pub broker_id: i64,
}

impl Identity {
    fn encode(&self) -> String {
        format!(
            "{}#{}#{}",
            self.cluster_name, self.broker_name, self.broker_id
        )
    }

    fn parse(bytes: &[u8]) -> Result<Identity, String> {
        let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8".to_owned())?;
        let mut parts = text.trim().splitn(4, '#');
        let (Some(cluster), Some(name), Some(id)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(format!(
                "expected cluster#brokerName#brokerId, got {text:?}"
            ));
        };
        let broker_id = id
            .parse::<i64>()
            .ok()
            .filter(|id| *id >= 1)
            .ok_or_else(|| format!("broker id {id:?} is not a controller id (≥ 1)"))?;
        Ok(Identity {
            cluster_name: cluster.to_owned(),
            broker_name: name.to_owned(),
            broker_id,
        })
    }
}

/// The identity files of one store.
#[derive(Debug, Clone)]
pub struct IdentityFile {
    path: PathBuf,
}

impl IdentityFile {
    pub fn new(path: &Path) -> Self {
        Self {
            path: path.to_owned(),
        }
    }

    fn temp(&self) -> PathBuf {
        PathBuf::from(format!("{}-temp", self.path.display()))
    }

    /// The stored id for this cluster and broker name: `Ok(None)` for a store that never had
    /// one.
    pub fn load(&self, cluster_name: &str, broker_name: &str) -> Result<Option<i64>, StoreError> {
        let bak = PathBuf::from(format!("{}.bak", self.path.display()));
        let existed = self.path.exists() || bak.exists();
        let Some(identity) = config_file::load(&self.path, Identity::parse)? else {
            if existed {
                return Err(StoreError::Config {
                    path: self.path.clone(),
                    reason: "the broker identity file and its .bak are damaged (kept aside): restore it, or clean this broker from the controller (mqadmin cleanBrokerMetadata) and empty the store".into(),
                });
            }
            return Ok(None);
        };
        if identity.cluster_name != cluster_name || identity.broker_name != broker_name {
            return Err(StoreError::Config {
                path: self.path.clone(),
                reason: format!(
                    "this store belongs to {}/{} (controller id {}), not {cluster_name}/{broker_name}: use the store of this broker, or another storePathRootDir",
                    identity.cluster_name, identity.broker_name, identity.broker_id
                ),
            });
        }
        Ok(Some(identity.broker_id))
    }

    /// Records an id about to be applied (RocketMQ's `brokerIdentity-temp`).
    pub fn begin(&self, identity: &Identity, check_code: &str) -> Result<(), StoreError> {
        let text = format!("{}#{check_code}", identity.encode());
        config_file::persist(&self.temp(), text.as_bytes())
    }

    /// The controller accepted the id: it becomes this store's, and the temporary file goes.
    pub fn commit(&self, identity: &Identity) -> Result<(), StoreError> {
        config_file::persist(&self.path, identity.encode().as_bytes())?;
        self.abandon()
    }

    /// The controller refused the id: forget it.
    pub fn abandon(&self) -> Result<(), StoreError> {
        for p in [
            self.temp(),
            PathBuf::from(format!("{}.bak", self.temp().display())),
        ] {
            match std::fs::remove_file(&p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(StoreError::io(&p, e))
                }
                _ => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: i64) -> Identity {
        Identity {
            cluster_name: "c".into(),
            broker_name: "b".into(),
            broker_id: n,
        }
    }

    #[test]
    fn keeps_an_accepted_id() {
        let dir = tempfile::tempdir().unwrap();
        let file = IdentityFile::new(&dir.path().join("brokerIdentity"));
        assert_eq!(file.load("c", "b").unwrap(), None);
        file.begin(&id(2), "h:1;5").unwrap();
        assert_eq!(file.load("c", "b").unwrap(), None);
        file.commit(&id(2)).unwrap();
        assert_eq!(file.load("c", "b").unwrap(), Some(2));
        assert!(!dir.path().join("brokerIdentity-temp").exists());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("brokerIdentity")).unwrap(),
            "c#b#2"
        );
    }

    #[test]
    fn refuses_another_groups_store_and_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("brokerIdentity");
        let file = IdentityFile::new(&path);
        file.commit(&id(1)).unwrap();
        assert!(file.load("c", "other").is_err());
        std::fs::write(&path, "garbage").unwrap();
        // The damaged file is put aside and nothing else holds an id: an error, not "new".
        assert!(file.load("c", "b").is_err());
        // Java's file reads too.
        std::fs::write(&path, "DefaultCluster#broker-a#3\n").unwrap();
        assert_eq!(
            IdentityFile::new(&path)
                .load("DefaultCluster", "broker-a")
                .unwrap(),
            Some(3)
        );
    }
}
