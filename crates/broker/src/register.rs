//! Registration with every name server: at start, every `registerNameServerPeriod`, at once
//! when topics change, and unregistration at shutdown.

use std::sync::Arc;
use std::time::Duration;

use rocketpy_protocol::body::{fastjson, DataVersion, RegisterBrokerBody};
use rocketpy_protocol::code::{request, response};
use rocketpy_protocol::flag::perm;
use rocketpy_protocol::header::{
    QueryDataVersionRequestHeader, QueryDataVersionResponseHeader, RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader, UnRegisterBrokerRequestHeader,
};
use rocketpy_protocol::RemotingCommand;

use crate::state::BrokerInner;
use rocketpy_remoting::lifecycle::{stopped, Stop};

/// Asks the registration task to register at once, and lets whoever asked wait until a
/// registration that began after the ask has ended: RocketMQ's broker answers a topic update
/// only once the name servers know it, so a producer right after `updateTopic` finds its
/// route (not the TBW102 template's queues).
#[derive(Debug)]
pub struct RegisterNow {
    notify: tokio::sync::Notify,
    /// Registrations begun, and the last one ended (their numbers).
    begun: std::sync::atomic::AtomicU64,
    ended: tokio::sync::watch::Sender<u64>,
}

impl Default for RegisterNow {
    fn default() -> Self {
        RegisterNow {
            notify: tokio::sync::Notify::new(),
            begun: Default::default(),
            ended: tokio::sync::watch::Sender::new(0),
        }
    }
}

impl RegisterNow {
    /// Asks for a registration now.
    pub fn notify_one(&self) {
        self.notify.notify_one();
    }

    /// Asks for a registration now; the future ends when one that began after this call has
    /// ended, or after `timeout`.
    pub fn registered(&self, timeout: Duration) -> impl std::future::Future<Output = ()> {
        // A registration that begins between the change and this read may be counted as
        // one that began before: then the next one is waited for (the ask ensures it).
        let want = self.begun.load(std::sync::atomic::Ordering::SeqCst) + 1;
        let mut ended = self.ended.subscribe();
        self.notify.notify_one();
        async move {
            let _ = tokio::time::timeout(timeout, ended.wait_for(|n| *n >= want)).await;
        }
    }

    /// The registration task's side: one registration, numbered.
    async fn run<F: std::future::Future<Output = ()>>(&self, registration: F) {
        let n = self.begun.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        registration.await;
        self.ended.send_modify(|e| *e = (*e).max(n));
    }
}

fn register_request(broker: &BrokerInner, broker_id: i64) -> Option<RemotingCommand> {
    let mut topics = broker.topics.snapshot();
    topics.data_version.state_version = broker.state_version();
    // A broker that may not be written or read registers every topic with its own
    // permission (RocketMQ's registerBrokerAll), so clients route around it.
    let permission = broker.permission();
    if !perm::is_writeable(permission) || !perm::is_readable(permission) {
        for cfg in topics.topic_config_table.values_mut() {
            cfg.perm = permission;
        }
    }
    let body = RegisterBrokerBody {
        topic_config_serialize_wrapper: topics,
        filter_server_list: Vec::new(),
    };
    let body = match serde_json::to_vec(&body) {
        Ok(b) => b,
        Err(e) => {
            tracing::error!(error = %e, "cannot encode RegisterBrokerBody");
            return None;
        }
    };
    let cfg = broker.config();
    let crc = crc32fast::hash(&body) & 0x7FFF_FFFF;
    let header = RegisterBrokerRequestHeader {
        broker_name: cfg.broker_name.clone(),
        broker_addr: broker.broker_addr.clone(),
        cluster_name: cfg.broker_cluster_name.clone(),
        // Where slaves connect (a master's HA listener); a slave has none and registers
        // RocketMQ's default, listenPort + 1, as its Java counterpart does.
        ha_server_addr: Some(broker.ha_addr.clone().unwrap_or_else(|| {
            format!(
                "{}:{}",
                broker.store_host.ip(),
                broker.store_host.port().wrapping_add(1)
            )
        })),
        broker_id,
        compressed: Some(false),
        body_crc32: Some(crc.into()),
    };
    Some(
        RemotingCommand::request(request::REGISTER_BROKER)
            .with_header(&header)
            .with_body(body),
    )
}

/// Whether the name server at `addr` needs this broker's registration: asks it with
/// QUERY_DATA_VERSION whether `version` is news (an unchanged answer also keeps the broker
/// alive there). Unlike RocketMQ's broker, which skips a name server that answers with an
/// error, any answer but a clear "unchanged" registers: a name server without the request
/// (an old or foreign one) would otherwise expire the broker.
async fn needs_registration(
    broker: &BrokerInner,
    broker_id: i64,
    addr: &str,
    version: &DataVersion,
    timeout: Duration,
) -> bool {
    let cfg = broker.config();
    let body = match serde_json::to_vec(version) {
        Ok(body) => body,
        Err(_) => return true,
    };
    let req = RemotingCommand::request(request::QUERY_DATA_VERSION)
        .with_header(&QueryDataVersionRequestHeader {
            broker_name: cfg.broker_name.clone(),
            broker_addr: broker.broker_addr.clone(),
            cluster_name: cfg.broker_cluster_name.clone(),
            broker_id,
        })
        .with_body(body);
    let resp = match broker.namesrv.invoke(addr, req, timeout).await {
        Ok(resp) if resp.code == response::SUCCESS => resp,
        Ok(resp) => {
            tracing::debug!(namesrv = %addr, code = resp.code, "QUERY_DATA_VERSION refused; registering");
            return true;
        }
        Err(e) => {
            tracing::debug!(namesrv = %addr, error = %e, "QUERY_DATA_VERSION failed; registering");
            return true;
        }
    };
    let changed = resp
        .decode_header::<QueryDataVersionResponseHeader>()
        .ok()
        .and_then(|h| h.changed)
        .unwrap_or(true);
    // As RocketMQ's broker does, a version in the answer that is not ours also means changed.
    let differs = !resp.body.is_empty()
        && fastjson::from_slice::<DataVersion>(&resp.body).map_or(true, |v| v != *version);
    changed || differs
}

/// Registers with every name server concurrently; failures are logged and retried next period.
/// Unless `force`, a name server that already has this broker's data version is only asked
/// (QUERY_DATA_VERSION), not sent the topic table.
pub async fn register_all(broker: &Arc<BrokerInner>, force: bool) {
    let addrs = broker.config().namesrv_addrs();
    let timeout = Duration::from_millis(broker.config().register_broker_timeout_mills.max(100));
    // Controller mode: nothing to register until the controller told the role.
    let Some(broker_id) = broker.registration_id() else {
        return;
    };
    // A topic change after this read notifies `register_now`, whose registration is full.
    let mut version = broker.topics.data_version();
    version.state_version = broker.state_version();
    let mut tasks = Vec::new();
    for addr in addrs {
        let broker = broker.clone();
        let version = version.clone();
        tasks.push(tokio::spawn(async move {
            if !force && !needs_registration(&broker, broker_id, &addr, &version, timeout).await {
                tracing::trace!(namesrv = %addr, "name server has this data version");
                return;
            }
            let Some(mut req) = register_request(&broker, broker_id) else {
                return;
            };
            req.opaque = rocketpy_protocol::command::next_opaque();
            match broker.namesrv.invoke(&addr, req, timeout).await {
                Ok(resp) if resp.code == response::SUCCESS => {
                    tracing::debug!(namesrv = %addr, "registered with name server");
                    if !broker.store.role().is_master() {
                        // A slave learns its master from the answer (RocketMQ's
                        // RegisterBrokerResult: haServerAddr, masterAddr).
                        if let Ok(h) = resp.decode_header::<RegisterBrokerResponseHeader>() {
                            learn_master(&broker, h);
                        }
                    }
                }
                Ok(resp) => tracing::warn!(namesrv = %addr, code = resp.code, remark = ?resp.remark, "name server refused registration"),
                Err(e) => tracing::warn!(namesrv = %addr, error = %e, "registration with name server failed"),
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}

/// Takes the master's HA address from a name server's answer to a slave's registration. In
/// controller mode the answer must name the master the controller told this broker to
/// follow: right after a failover the name server may not have heard from the new master yet
/// and names the old one, whose HA address would be followed until the next periodic
/// registration (30 s). Such an answer is ignored and the registration asked again shortly.
fn learn_master(broker: &Arc<BrokerInner>, answer: RegisterBrokerResponseHeader) {
    let expected = broker.replicas.as_ref().and_then(|r| r.followed_master());
    if let Some(expected) = expected {
        if answer.master_addr.as_deref() != Some(expected.as_str()) {
            tracing::debug!(named = ?answer.master_addr, %expected, "name server does not know the new master yet; registering again shortly");
            let broker = broker.clone();
            tokio::spawn(async move {
                tokio::time::sleep(RELEARN_MASTER_AFTER).await;
                broker.register_now.notify_one();
            });
            return;
        }
    }
    broker.ha.set_master(
        answer.ha_server_addr,
        answer.master_addr,
        broker.settings.store.ha_master_address.is_some(),
    );
}

/// How soon a controller-mode slave registers again when the name server named another
/// master than the controller's.
const RELEARN_MASTER_AFTER: Duration = Duration::from_millis(300);

/// Registers every period after the first registration, which the broker's start awaits
/// (as RocketMQ's broker does, so a client asking the name server right after the broker
/// started finds it): `forceRegister` decides whether the period's registration may be
/// skipped where nothing changed; a `register_now` notification (topics changed) registers
/// at once, always in full.
pub async fn registration_loop(broker: Arc<BrokerInner>, mut stop: Stop) {
    let period = broker.config().register_period();
    loop {
        let force = tokio::select! {
            biased;
            _ = stopped(&mut stop) => return,
            _ = tokio::time::sleep(period) => broker.config().force_register,
            _ = broker.register_now.notify.notified() => true,
        };
        broker.register_now.run(register_all(&broker, force)).await;
    }
}

/// Tells every name server this broker is gone.
pub async fn unregister_all(broker: &Arc<BrokerInner>) {
    let cfg = broker.config();
    let timeout = Duration::from_millis(cfg.register_broker_timeout_mills.clamp(100, 3000));
    for addr in cfg.namesrv_addrs() {
        let req = RemotingCommand::request(request::UNREGISTER_BROKER).with_header(
            &UnRegisterBrokerRequestHeader {
                broker_name: cfg.broker_name.clone(),
                broker_addr: broker.broker_addr.clone(),
                cluster_name: cfg.broker_cluster_name.clone(),
                broker_id: broker.registration_id().unwrap_or(cfg.broker_id),
            },
        );
        if let Err(e) = broker.namesrv.invoke(&addr, req, timeout).await {
            tracing::warn!(namesrv = %addr, error = %e, "unregistration failed");
        }
    }
}
