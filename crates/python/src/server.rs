//! Name server and broker handles: Python starts and stops them; they serve from Rust.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use rocketpy_broker::{Broker as NativeBroker, BrokerSettings};
use rocketpy_namesrv::{NameServer as NativeNameServer, NamesrvConfig};
use rocketpy_remoting::TlsConfig;

use crate::errors;
use crate::process::Owner;
use crate::runtime::{runtime, wait};

/// Runs `fut` as a task of the shared runtime (server tasks must not live on the caller's
/// temporary `block_on`) and waits for it with the GIL released.
pub(crate) fn run<F, T>(py: Python<'_>, fut: F) -> PyResult<T>
where
    F: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let rt = runtime();
    wait(py, async move { rt.spawn(fut).await })?
        .map_err(|e| errors::RocketpyError::new_err(format!("server task failed: {e}")))
}

/// A running name server.
#[pyclass(module = "rocketpy._native", frozen)]
pub struct NameServer {
    inner: Arc<NativeNameServer>,
    /// The controller embedded with `enableControllerInNamesrv=true`.
    controller: Option<Arc<rocketpy_controller::server::ControllerServer>>,
    owner: Owner,
}

#[pymethods]
impl NameServer {
    /// Starts a name server on `host:port` (port 0 picks a free port); `config` sets more
    /// name server keys (e.g. `metricsExporterType`) over those of `config_text` (a
    /// namesrv.conf), and with `enableControllerInNamesrv=true`
    /// the keys of a controller started alongside (RocketMQ's `namesrv.conf` of controller
    /// mode).
    #[staticmethod]
    #[pyo3(signature = (host="0.0.0.0", port=9876, scan_interval_ms=10_000, broker_expiry_ms=120_000, config=None, config_text=None))]
    fn start(
        py: Python<'_>,
        host: &str,
        port: u16,
        scan_interval_ms: u64,
        broker_expiry_ms: u64,
        config: Option<HashMap<String, String>>,
        config_text: Option<&str>,
    ) -> PyResult<Self> {
        let mut settings = NamesrvConfig {
            bind_address: host.to_owned(),
            listen_port: port,
            scan_not_active_broker_interval: scan_interval_ms,
            broker_channel_expired_time: broker_expiry_ms,
            ..NamesrvConfig::default()
        };
        // The name server's keys first; the rest are the embedded controller's (and TLS keys
        // serve both), refused if neither knows them.
        let mut controller_keys = HashMap::new();
        let mut tls = TlsConfig::default();
        let mut pairs = config_text
            .map(rocketpy_protocol::config::parse_properties)
            .unwrap_or_default();
        pairs.extend(config.unwrap_or_default());
        for (key, value) in pairs {
            let bad = |e: rocketpy_protocol::config::ConfigError| {
                errors::ConfigError::new_err(e.to_string())
            };
            if !(settings.set(&key, &value).map_err(bad)? || tls.set(&key, &value).map_err(bad)?) {
                controller_keys.insert(key, value);
            }
        }
        let embedded = settings.enable_controller_in_namesrv;
        let (controller_settings, _) =
            crate::controller::controller_settings(None, Some(controller_keys.clone()), |_, _| {
                Ok(false)
            })
            .map_err(|e| {
                errors::ConfigError::new_err(format!("{e}; not a name server key either"))
            })?;
        if !embedded && !controller_keys.is_empty() {
            let mut keys: Vec<_> = controller_keys.into_keys().collect();
            keys.sort();
            return Err(errors::ConfigError::new_err(format!(
                "controller keys {keys:?} given, but enableControllerInNamesrv is not true: set it to run a controller in this name server, or start one with `rocketpy controller -c`"
            )));
        }
        let server = run(py, NativeNameServer::start_with_tls(settings, tls.clone()))?
            .map_err(errors::remoting)?;
        let server = Arc::new(server);
        let controller = match embedded {
            true => match crate::controller::start(py, controller_settings, tls) {
                Ok(c) => Some(c),
                Err(e) => {
                    let inner = server.clone();
                    run(py, async move { inner.shutdown().await })?;
                    return Err(e);
                }
            },
            false => None,
        };
        Ok(NameServer {
            inner: server,
            controller,
            owner: Owner::current(),
        })
    }

    /// `host:port` of the embedded controller (`enableControllerInNamesrv=true`), else `None`.
    #[getter]
    fn controller_address(&self) -> Option<String> {
        self.controller.as_ref().map(|c| c.local_addr().to_string())
    }

    /// `host:port` it listens on.
    #[getter]
    fn address(&self) -> String {
        self.inner.local_addr().to_string()
    }

    /// The port it listens on.
    #[getter]
    fn port(&self) -> u16 {
        self.inner.local_addr().port()
    }

    /// `host:port` of the Prometheus endpoint (`metricsExporterType=PROM`), else `None`.
    #[getter]
    fn metrics_address(&self) -> Option<String> {
        self.inner.metrics_addr().map(|a| a.to_string())
    }

    /// Addresses of the brokers currently registered.
    fn live_brokers(&self) -> Vec<String> {
        self.inner.routes().live_brokers()
    }

    /// Stops serving.
    fn shutdown(&self, py: Python<'_>) -> PyResult<()> {
        self.owner.check("name server")?;
        let inner = self.inner.clone();
        let controller = self.controller.clone();
        run(py, async move {
            if let Some(c) = controller {
                c.shutdown().await;
            }
            inner.shutdown().await
        })
    }
}

/// A running broker.
#[pyclass(module = "rocketpy._native", frozen)]
pub struct Broker {
    inner: Arc<NativeBroker>,
    owner: Owner,
    store_path: PathBuf,
}

fn default_store_root() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
        .join("store")
}

/// Settings from a broker.conf text and overrides (same keys; overrides win).
fn broker_settings(
    config_text: Option<&str>,
    overrides: Option<HashMap<String, String>>,
) -> PyResult<BrokerSettings> {
    let mut settings = BrokerSettings::new(default_store_root());
    if let Some(text) = config_text {
        settings.apply_properties(text).map_err(errors::broker)?;
    }
    let mut overrides: Vec<(String, String)> = overrides.unwrap_or_default().into_iter().collect();
    // storePathRootDir first, so storePathCommitLog given alongside it is not overridden.
    overrides.sort_by_key(|(k, _)| k != "storePathRootDir");
    for (k, v) in overrides {
        settings.set(&k, &v).map_err(errors::broker)?;
    }
    Ok(settings)
}

#[pymethods]
impl Broker {
    /// Starts a broker. `config_text` is a broker.conf (Java properties, RocketMQ key names);
    /// `overrides` (same keys) win over it. The store opens (and recovers) before this returns.
    #[staticmethod]
    #[pyo3(signature = (config_text=None, overrides=None))]
    fn start(
        py: Python<'_>,
        config_text: Option<&str>,
        overrides: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        let settings = broker_settings(config_text, overrides)?;
        let store_path = settings.store.store_path_root_dir.clone();
        let broker = run(py, NativeBroker::start(settings))?.map_err(errors::broker)?;
        Ok(Broker {
            inner: Arc::new(broker),
            owner: Owner::current(),
            store_path,
        })
    }

    /// The configuration a broker started with these arguments would have, every key with its
    /// value and what it sets: `[(key, value, doc)]`, broker keys then store keys.
    #[staticmethod]
    #[pyo3(signature = (config_text=None, overrides=None))]
    fn effective_config(
        config_text: Option<&str>,
        overrides: Option<HashMap<String, String>>,
    ) -> PyResult<Vec<(&'static str, String, &'static str)>> {
        Ok(broker_settings(config_text, overrides)?.entries())
    }

    /// `host:port` it listens on.
    #[getter]
    fn address(&self) -> String {
        self.inner.local_addr().to_string()
    }

    /// The port it listens on.
    #[getter]
    fn port(&self) -> u16 {
        self.inner.local_addr().port()
    }

    /// `host:port` of the Prometheus endpoint (`metricsExporterType=PROM`), else `None`.
    #[getter]
    fn metrics_address(&self) -> Option<String> {
        self.inner.metrics_addr().map(|a| a.to_string())
    }

    /// `host:port` of the gRPC endpoint for RocketMQ 5.x clients (`grpcServerPort`), else
    /// `None`.
    #[getter]
    fn grpc_address(&self) -> Option<String> {
        self.inner.grpc_addr().map(|a| a.to_string())
    }

    /// The address it registers with name servers (what clients connect to).
    #[getter]
    fn broker_addr(&self) -> String {
        self.inner.broker_addr().to_owned()
    }

    /// The store root directory.
    #[getter]
    fn store_path(&self) -> String {
        self.store_path.display().to_string()
    }

    /// Unregisters, stops serving, persists offsets and flushes the store.
    fn shutdown(&self, py: Python<'_>) -> PyResult<()> {
        self.owner.check("broker")?;
        let inner = self.inner.clone();
        run(py, async move { inner.shutdown().await })?.map_err(errors::broker)
    }
}
