//! The exception tree. Python code catches `RocketpyError` or a more precise subclass; Rust
//! errors map onto the closest class and never become a bare `RuntimeError`.

use pyo3::create_exception;
use pyo3::exceptions::{
    PyConnectionError, PyConnectionRefusedError, PyConnectionResetError, PyException,
    PyTimeoutError,
};
use pyo3::prelude::*;
use rocketpy_broker::BrokerError as NativeBrokerError;
use rocketpy_protocol::ProtocolError;
use rocketpy_remoting::RemotingError as NativeRemotingError;
use rocketpy_store::StoreError as NativeStoreError;

create_exception!(
    _native,
    RocketpyError,
    PyException,
    "Base class of every rocketpy error."
);
create_exception!(
    _native,
    RemotingError,
    RocketpyError,
    "Network or protocol failure."
);
create_exception!(
    _native,
    RemotingTimeoutError,
    RemotingError,
    "No response within the timeout."
);
create_exception!(
    _native,
    RemotingConnectError,
    RemotingError,
    "Could not connect, or the connection closed."
);
create_exception!(_native, StoreError, RocketpyError, "Message store failure.");
create_exception!(
    _native,
    InvalidArgumentError,
    RocketpyError,
    "An argument the store or a server refuses (bad topic, oversized message, ...)."
);
create_exception!(
    _native,
    StoreLockedError,
    StoreError,
    "Another process has the store open."
);
create_exception!(
    _native,
    StoreFullError,
    StoreError,
    "The store's disk is full: writes are refused until space is freed (reads still work)."
);
create_exception!(
    _native,
    CorruptDataError,
    StoreError,
    "Stored or received bytes do not match the format."
);
create_exception!(
    _native,
    DataLossError,
    RocketpyError,
    "Messages asked for are no longer stored (retention moved past their offsets)."
);
create_exception!(
    _native,
    ConfigError,
    RocketpyError,
    "Invalid configuration."
);

create_exception!(
    _native,
    ForkedProcessError,
    RocketpyError,
    "An object created before os.fork() was used in the child process: its network threads \
     stayed in the parent. Create clients, servers and stores after forking."
);

// A client-side refusal (the Python class, `rocketpy.errors.ClientError`: what callers of
// the producer catch), raised natively where the native paths refuse a send.
pyo3::import_exception!(rocketpy.errors, ClientError);

/// Maps a remoting error onto the exception tree. Network failures carry the operating
/// system's view as `__cause__` (a `ConnectionRefusedError`, `ConnectionResetError`,
/// `TimeoutError`...), so callers can tell "nothing listens there" from "it went away".
pub fn remoting(e: NativeRemotingError) -> PyErr {
    let msg = e.to_string();
    let (err, cause) = match &e {
        NativeRemotingError::Timeout { .. } => (
            RemotingTimeoutError::new_err(msg.clone()),
            Some(PyTimeoutError::new_err(msg)),
        ),
        NativeRemotingError::Connect { reason, .. } => {
            // The reason is the io::Error's text; "refused" is the one kind callers act on.
            let cause = if reason.contains("refused") {
                PyConnectionRefusedError::new_err(reason.clone())
            } else {
                PyConnectionError::new_err(reason.clone())
            };
            (RemotingConnectError::new_err(msg), Some(cause))
        }
        NativeRemotingError::ConnectionClosed(_) => (
            RemotingConnectError::new_err(msg.clone()),
            Some(PyConnectionResetError::new_err(msg)),
        ),
        NativeRemotingError::Protocol(
            ProtocolError::Malformed(_) | ProtocolError::FrameTooLarge(_),
        ) => (CorruptDataError::new_err(msg), None),
        _ => (RemotingError::new_err(msg), None),
    };
    if let Some(cause) = cause {
        Python::attach(|py| err.set_cause(py, Some(cause)));
    }
    err
}

/// Maps a store error onto the exception tree.
pub fn store(e: NativeStoreError) -> PyErr {
    let msg = e.to_string();
    if e.is_no_space() {
        return StoreFullError::new_err(msg);
    }
    match e {
        NativeStoreError::Locked(_) => StoreLockedError::new_err(msg),
        NativeStoreError::Corrupt { .. } => CorruptDataError::new_err(msg),
        NativeStoreError::InvalidArgument(_) | NativeStoreError::MessageTooLarge { .. } => {
            InvalidArgumentError::new_err(msg)
        }
        NativeStoreError::Config { .. } => ConfigError::new_err(msg),
        _ => StoreError::new_err(msg),
    }
}

/// Maps a broker error onto the exception tree.
pub fn broker(e: NativeBrokerError) -> PyErr {
    match e {
        NativeBrokerError::Store(e) => store(e),
        NativeBrokerError::Remoting(e) => remoting(e),
        NativeBrokerError::Config(msg) => ConfigError::new_err(msg),
        other => RocketpyError::new_err(other.to_string()),
    }
}

/// Adds the classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("RocketpyError", py.get_type::<RocketpyError>())?;
    m.add("RemotingError", py.get_type::<RemotingError>())?;
    m.add(
        "RemotingTimeoutError",
        py.get_type::<RemotingTimeoutError>(),
    )?;
    m.add(
        "RemotingConnectError",
        py.get_type::<RemotingConnectError>(),
    )?;
    m.add("StoreError", py.get_type::<StoreError>())?;
    m.add("StoreLockedError", py.get_type::<StoreLockedError>())?;
    m.add("StoreFullError", py.get_type::<StoreFullError>())?;
    m.add("CorruptDataError", py.get_type::<CorruptDataError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("DataLossError", py.get_type::<DataLossError>())?;
    m.add("ForkedProcessError", py.get_type::<ForkedProcessError>())?;
    m.add(
        "InvalidArgumentError",
        py.get_type::<InvalidArgumentError>(),
    )?;
    Ok(())
}
