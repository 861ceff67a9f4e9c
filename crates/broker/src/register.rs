//! Registration with every name server: at start, every `registerNameServerPeriod`, at once
//! when topics change, and unregistration at shutdown.

use std::sync::Arc;
use std::time::Duration;

use rocketpy_protocol::body::RegisterBrokerBody;
use rocketpy_protocol::code::{request, response};
use rocketpy_protocol::header::{RegisterBrokerRequestHeader, UnRegisterBrokerRequestHeader};
use rocketpy_protocol::RemotingCommand;

use crate::BrokerInner;

fn register_request(broker: &BrokerInner) -> Option<RemotingCommand> {
    let body = RegisterBrokerBody {
        topic_config_serialize_wrapper: broker.topics.snapshot(),
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
        // RocketMQ's default HA port, listenPort + 1 (nothing listens there yet: no HA).
        ha_server_addr: Some(format!(
            "{}:{}",
            broker.store_host.ip(),
            broker.store_host.port().wrapping_add(1)
        )),
        broker_id: cfg.broker_id,
        compressed: Some(false),
        body_crc32: Some(crc.into()),
    };
    Some(
        RemotingCommand::request(request::REGISTER_BROKER)
            .with_header(&header)
            .with_body(body),
    )
}

/// Registers with every name server concurrently; failures are logged and retried next period.
pub async fn register_all(broker: &Arc<BrokerInner>) {
    let addrs = broker.config().namesrv_addrs();
    let timeout = Duration::from_millis(broker.config().register_broker_timeout_mills.max(100));
    let mut tasks = Vec::new();
    for addr in addrs {
        let Some(mut req) = register_request(broker) else {
            return;
        };
        let broker = broker.clone();
        tasks.push(tokio::spawn(async move {
            req.opaque = rocketpy_protocol::command::next_opaque();
            match broker.namesrv.invoke(&addr, req, timeout).await {
                Ok(resp) if resp.code == response::SUCCESS => {
                    tracing::debug!(namesrv = %addr, "registered with name server");
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

/// Registers now and then every period, or sooner when `register_now` is notified.
pub async fn registration_loop(broker: Arc<BrokerInner>) {
    let period = broker.config().register_period();
    loop {
        register_all(&broker).await;
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = broker.register_now.notified() => {}
        }
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
                broker_id: cfg.broker_id,
            },
        );
        if let Err(e) = broker.namesrv.invoke(&addr, req, timeout).await {
            tracing::warn!(namesrv = %addr, error = %e, "unregistration failed");
        }
    }
}
