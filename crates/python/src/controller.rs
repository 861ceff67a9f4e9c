//! The controller handle (controller mode, issue 43): Python starts and stops it; it serves
//! from Rust (`rocketpy_controller::server`).

use std::collections::HashMap;
use std::sync::Arc;

use pyo3::prelude::*;
use rocketpy_controller::server::{ControllerServer, ControllerSettings, ServeError};
use rocketpy_protocol::config::parse_properties;
use rocketpy_remoting::TlsConfig;

use crate::errors;
use crate::process::Owner;
use crate::server::run;

/// Controller settings and TLS keys from a controller.conf text and overrides (overrides
/// win); `extra` takes keys neither knows (the name server's, when embedded) and says whether
/// it took them. A key nobody knows is refused.
pub(crate) fn controller_settings(
    config_text: Option<&str>,
    overrides: Option<HashMap<String, String>>,
    mut extra: impl FnMut(&str, &str) -> PyResult<bool>,
) -> PyResult<(ControllerSettings, TlsConfig)> {
    let mut settings = ControllerSettings::default();
    let mut tls = TlsConfig::default();
    let mut pairs = config_text.map(parse_properties).unwrap_or_default();
    pairs.extend(overrides.unwrap_or_default());
    for (key, value) in pairs {
        let bad =
            |e: rocketpy_protocol::config::ConfigError| errors::ConfigError::new_err(e.to_string());
        let known = settings.set(&key, &value).map_err(bad)?
            || tls.set(&key, &value).map_err(bad)?
            || extra(&key, &value)?;
        if !known {
            return Err(errors::ConfigError::new_err(format!(
                "unknown controller key {key:?} (rocketpy controller -p lists the keys)"
            )));
        }
    }
    Ok((settings, tls))
}

/// A start failure as the documented exception.
pub(crate) fn serve_error(e: ServeError) -> PyErr {
    match e {
        ServeError::Remoting(e) => errors::remoting(e),
        // As the name server's: a port in use is the same error on either endpoint.
        ServeError::Metrics(e) => errors::remoting(rocketpy_remoting::RemotingError::Io(e)),
        ServeError::Settings(_) | ServeError::Acl(_) => errors::ConfigError::new_err(e.to_string()),
        other => errors::RocketpyError::new_err(other.to_string()),
    }
}

/// Starts a controller on the shared runtime.
pub(crate) fn start(
    py: Python<'_>,
    settings: ControllerSettings,
    tls: TlsConfig,
) -> PyResult<Arc<ControllerServer>> {
    run(py, ControllerServer::start(settings, tls))?
        .map(Arc::new)
        .map_err(serve_error)
}

/// A running controller.
#[pyclass(module = "rocketpy._native", frozen)]
pub struct Controller {
    inner: Arc<ControllerServer>,
    owner: Owner,
}

#[pymethods]
impl Controller {
    /// Starts a controller. `config_text` is a controller.conf (RocketMQ's keys:
    /// `controllerDLegerGroup`, `controllerDLegerPeers`, `controllerDLegerSelfId`,
    /// `controllerStorePath`, ...); `overrides` (same keys) win over it. It listens on its own
    /// entry of `controllerDLegerPeers`.
    #[staticmethod]
    #[pyo3(signature = (config_text=None, overrides=None))]
    fn start(
        py: Python<'_>,
        config_text: Option<&str>,
        overrides: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        let (settings, tls) = controller_settings(config_text, overrides, |_, _| Ok(false))?;
        Ok(Controller {
            inner: start(py, settings, tls)?,
            owner: Owner::current(),
        })
    }

    /// `(key, value, doc)` of every controller key, as `config_text` and `overrides` set them
    /// (RocketMQ's `mqcontroller -p`).
    #[staticmethod]
    #[pyo3(signature = (config_text=None, overrides=None))]
    fn effective_config(
        config_text: Option<&str>,
        overrides: Option<HashMap<String, String>>,
    ) -> PyResult<Vec<(String, String, String)>> {
        let (settings, _) = controller_settings(config_text, overrides, |_, _| Ok(false))?;
        Ok(settings
            .entries()
            .into_iter()
            .zip(ControllerSettings::KEYS)
            .map(|((k, v), spec)| (k.to_owned(), v, spec.doc.to_owned()))
            .collect())
    }

    /// `host:port` it listens on.
    #[getter]
    fn address(&self) -> String {
        self.inner.local_addr().to_string()
    }

    /// `host:port` of the Prometheus endpoint (`metricsExporterType=PROM`), else `None`.
    #[getter]
    fn metrics_address(&self) -> Option<String> {
        self.inner.metrics_addr().map(|a| a.to_string())
    }

    /// This controller's id among the peers (`controllerDLegerSelfId`).
    #[getter]
    fn self_id(&self) -> String {
        self.inner.self_name().to_owned()
    }

    /// The leading controller's id, when one is known.
    #[getter]
    fn leader_id(&self) -> Option<String> {
        self.inner.leader_name()
    }

    /// Whether this controller leads the group now.
    #[getter]
    fn is_leader(&self) -> bool {
        self.inner.controller().is_leader()
    }

    /// Stops serving; the Raft store stays for a restart.
    fn shutdown(&self, py: Python<'_>) -> PyResult<()> {
        self.owner.check("controller")?;
        let inner = self.inner.clone();
        run(py, async move { inner.shutdown().await })
    }
}
