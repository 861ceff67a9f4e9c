//! Replication in controller mode on the broker's HA port: the accept loop serves slaves while
//! this broker is master, and the follow loop replicates from the master while it is a slave
//! (`crate::ha::autoswitch` does the sessions).
//!
//! What must stay true: a broker serves replication only while it is master, and follows only
//! the master the controller named; a role change ends the sessions of the old role at once.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};

use super::replicas::{ReplicasManager, Role};
use crate::ha::autoswitch::{self, HaSettings, NoCommonEpoch};
use crate::state::BrokerInner;
use rocketpy_remoting::lifecycle::{stopped, Stop};

/// Accepts slaves while master; connections of a deposed master end with its role.
pub async fn accept(
    manager: Arc<ReplicasManager>,
    broker: Arc<BrokerInner>,
    listener: TcpListener,
    mut stop: Stop,
) {
    let allowed =
        crate::ha::allow::allowed_peers(&broker.settings.ha_exposure()).unwrap_or(Some(Vec::new()));
    let settings = HaSettings::from_store_config(&broker.settings.store);
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stopped(&mut stop) => return,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(error = %e, "HA accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let master = manager.ha_master().cloned();
        let serving = *manager.role().borrow() == Role::Master;
        let (Some(master), true, true) = (
            master,
            serving,
            crate::ha::allow::serves(allowed.as_deref(), peer.ip()),
        ) else {
            tracing::debug!(%peer, "HA connection refused: not the master, or not an allowed peer");
            continue;
        };
        let mut role = manager.role();
        let stop = stop.clone();
        tokio::spawn(async move {
            tracing::info!(%peer, "replica connected");
            let session = autoswitch::serve_connection(master, stream, settings, stop);
            tokio::select! {
                result = session => if let Err(e) = result {
                    tracing::warn!(%peer, error = %e, "replica connection closed");
                },
                _ = role.wait_for(|r| *r != Role::Master) => {
                    tracing::info!(%peer, "no longer the master: replica connection closed");
                }
            }
        });
    }
}

/// Replicates from the master while a slave; restarts when the master changes.
pub async fn follow(manager: Arc<ReplicasManager>, broker: Arc<BrokerInner>, mut stop: Stop) {
    let settings = HaSettings::from_store_config(&broker.settings.store);
    let mut role = manager.role();
    loop {
        let current = role.borrow_and_update().clone();
        let target = match (&current, broker.ha.master_ha_addr(), manager.ha_slave()) {
            (Role::Slave { .. }, Some(ha), Some(slave)) => Some((ha, slave.clone())),
            _ => None,
        };
        let delay = match target {
            None => Duration::from_millis(200),
            Some((addr, slave)) => {
                let session_stop = stop.clone();
                let session = async {
                    let stream =
                        tokio::time::timeout(Duration::from_secs(3), TcpStream::connect(&addr))
                            .await
                            .map_err(|_| -> autoswitch::Error {
                                format!("connecting to {addr} timed out").into()
                            })??;
                    stream.set_nodelay(true)?;
                    tracing::info!(master = %addr, "replicating from the master");
                    autoswitch::session(&slave, stream, settings, session_stop).await
                };
                tokio::select! {
                    result = session => match result {
                        Ok(()) => Duration::from_millis(200),
                        Err(e) if e.downcast_ref::<NoCommonEpoch>().is_some() => {
                            tracing::error!(master = %addr, error = %e, "this replica shares no epoch with the master: empty its store to rejoin");
                            Duration::from_secs(30)
                        }
                        Err(e) => {
                            tracing::warn!(master = %addr, error = %e, "replication interrupted; reconnecting");
                            Duration::from_secs(1)
                        }
                    },
                    _ = role.changed() => Duration::ZERO,
                    _ = stopped(&mut stop) => return,
                }
            }
        };
        tokio::select! {
            _ = stopped(&mut stop) => return,
            _ = role.changed() => {}
            _ = tokio::time::sleep(delay) => {}
        }
    }
}
