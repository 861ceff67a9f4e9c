//! The ACL at a server's door: every request with a known code is checked before its
//! processor runs; a refusal is NO_PERMISSION (16) with the reason as its remark, and the
//! connection stays open for the next request.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rocketpy_protocol::code::response;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, RequestGuard};

use crate::Acl;

/// How often the ACL file is looked at for changes (RocketMQ 4.9.3+ watches every 5 s).
pub const RELOAD_INTERVAL: Duration = Duration::from_secs(5);

/// The ACL file a server reads: `aclFile`, else `conf/plain_acl.yml` under `rocketmqHome`
/// (else `$ROCKETMQ_HOME`, else the working directory).
pub fn acl_path(acl_file: Option<&str>, rocketmq_home: Option<&str>) -> PathBuf {
    if let Some(f) = acl_file.filter(|f| !f.trim().is_empty()) {
        return PathBuf::from(f);
    }
    let home = rocketmq_home
        .filter(|h| !h.trim().is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("ROCKETMQ_HOME").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("."));
    home.join("conf").join("plain_acl.yml")
}

/// The guard of one server.
pub struct AclGuard {
    acl: Arc<Acl>,
}

impl AclGuard {
    /// A guard deciding with `acl`.
    pub fn new(acl: Arc<Acl>) -> Self {
        AclGuard { acl }
    }
}

impl RequestGuard for AclGuard {
    fn check(&self, conn: &Arc<Connection>, request: &RemotingCommand) -> Result<(), ProcessError> {
        // The broker's own gRPC proxy: it decided the call with the 5.x client's account
        // (rocketpy_proxy::auth) before asking; nothing outside this process reaches a pipe.
        if conn.is_in_process() {
            return Ok(());
        }
        self.acl
            .check(conn.peer().ip(), request)
            .map_err(|remark| ProcessError::new(response::NO_PERMISSION, remark))
    }
}

/// Reads the ACL file again whenever it changes, until the task is dropped.
pub async fn watch(acl: Arc<Acl>) {
    let mut tick = tokio::time::interval(RELOAD_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let a = acl.clone();
        match tokio::task::spawn_blocking(move || a.reload_if_changed()).await {
            Ok(Ok(true)) => tracing::info!(file = %acl.path().display(), "ACL file reloaded"),
            Ok(Ok(false)) | Err(_) => {}
            Ok(Err(e)) => {
                tracing::error!(error = %e, "the changed ACL file is not valid; the accounts before it stay")
            }
        }
    }
}

/// Loads the ACL of a server, with the file's problems as a clear error.
pub fn load(path: &Path, server: crate::Server) -> Result<Arc<Acl>, String> {
    Acl::load(path.to_path_buf(), server).map(Arc::new)
}
