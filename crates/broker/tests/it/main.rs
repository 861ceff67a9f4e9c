//! The broker and the name server driven over TCP with raw frames (see `wire`), beside the
//! pytest suite: real servers on loopback, started in-process on free ports, a real store in a
//! temporary directory.

mod admin;
mod broker;
mod config_files;
mod controller_client;
mod controller_mode;
mod controller_mode_services;
mod filter;
mod ha;
mod namesrv;
mod pop;
mod registration;
mod relay;
mod timer;
mod topic_attributes;
mod transaction;
mod vip;
mod wire;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rocketpy_broker::{Broker, BrokerSettings, Clock};
use rocketpy_namesrv::{NameServer, NamesrvConfig};

/// Every test broker's settings: loopback, a free port, small files.
pub const BROKER_TEST_SETTINGS: &[(&str, &str)] = &[
    ("bindAddress", "127.0.0.1"),
    ("brokerIP1", "127.0.0.1"),
    ("listenPort", "0"),
    ("mapedFileSizeCommitLog", "1048576"),
    ("mapedFileSizeConsumeQueue", "6000"),
    ("maxHashSlotNum", "1000"),
    ("maxIndexNum", "4000"),
    // The host disk may be shared and 90 % used by others (a CI run was refused every put):
    // its fullness is not what these tests are about, so ratio checks are off.
    ("diskMaxUsedSpaceRatio", "100"),
    ("diskSpaceCleanForciblyRatio", "100"),
    ("diskSpaceWarningLevelRatio", "100"),
];

/// A name server and a broker registered with it.
pub struct Servers {
    pub namesrv: NameServer,
    pub broker: Option<Broker>,
    settings: BrokerSettings,
    _store: tempfile::TempDir,
    pub rt: tokio::runtime::Runtime,
    /// The servers' clock: manual, moved by [`Servers::advance`] (kept across restarts).
    pub clock: Clock,
}

impl Servers {
    pub fn start() -> Servers {
        Servers::start_with(|namesrv| vec![("namesrvAddr", namesrv.to_string())])
    }

    /// Started with broker settings chosen knowing the name server's address (they must name
    /// `namesrvAddr`).
    pub fn start_with(settings: impl FnOnce(SocketAddr) -> Vec<(&'static str, String)>) -> Servers {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let store = tempfile::tempdir().unwrap();
        // One manual clock for both servers: brokers' silence is measured on it too.
        let clock = Clock::manual(rocketpy_protocol::clock::now_millis());
        let namesrv_config = NamesrvConfig {
            bind_address: "127.0.0.1".into(),
            listen_port: 0,
            ..NamesrvConfig::default()
        };
        let namesrv = rt
            .block_on(NameServer::start_with_clock(
                namesrv_config,
                Default::default(),
                clock.clone(),
            ))
            .unwrap();
        let settings_for = settings;
        let mut settings = BrokerSettings::new(store.path());
        for (k, v) in BROKER_TEST_SETTINGS {
            settings.set(k, v).unwrap();
        }
        for (k, v) in settings_for(namesrv.local_addr()) {
            settings.set(k, &v).unwrap();
        }
        let broker = rt
            .block_on(Broker::start_with_clock(settings.clone(), clock.clone()))
            .unwrap();
        let servers = Servers {
            namesrv,
            broker: Some(broker),
            settings,
            _store: store,
            rt,
            clock,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while servers.namesrv.routes().live_brokers().is_empty() {
            assert!(Instant::now() < deadline, "the broker never registered");
            std::thread::sleep(Duration::from_millis(20));
        }
        servers
    }

    pub fn namesrv_addr(&self) -> SocketAddr {
        self.namesrv.local_addr()
    }

    pub fn broker_addr(&self) -> SocketAddr {
        self.broker.as_ref().unwrap().local_addr()
    }

    /// Stops the broker (as a clean shutdown does) and starts it again on the same store; it
    /// listens on a new port.
    pub fn restart_broker(&mut self) {
        self.restart_broker_after(|_| {});
    }

    /// [`Servers::restart_broker`], running `between` on the store directory while the broker
    /// is down (to make it look as a crash left it).
    pub fn restart_broker_after(&mut self, between: impl FnOnce(&std::path::Path)) {
        if let Some(broker) = self.broker.take() {
            self.rt.block_on(broker.shutdown()).unwrap();
        }
        between(self._store.path());
        self.broker = Some(
            self.rt
                .block_on(Broker::start_with_clock(
                    self.settings.clone(),
                    self.clock.clone(),
                ))
                .unwrap(),
        );
    }

    /// Moves the broker's clock `ms` forward and runs the rounds its loops would run at their
    /// next tick (pop revival, timer delivery, idle client expiry): time passes without a
    /// test sleeping.
    pub fn advance(&self, ms: i64) {
        self.clock.advance(ms);
        let inner = self.broker.as_ref().expect("a running broker").inner();
        inner.pop.revive_due(inner, inner.now_millis());
        inner.timer.tick(inner, inner.now_millis());
        let expiry = std::time::Duration::from_millis(inner.config().channel_expired_timeout);
        rocketpy_broker::housekeeping::expire_idle_clients(inner, expiry);
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        if let Some(broker) = self.broker.take() {
            self.rt.block_on(broker.shutdown()).unwrap();
        }
        self.rt.block_on(self.namesrv.shutdown());
    }
}
