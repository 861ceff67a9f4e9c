//! `RemotingClient` for Python: request/response over the native transport, GIL released
//! while waiting.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use rocketpy_protocol::RemotingCommand;
use rocketpy_protocol::SerializeType;
use rocketpy_remoting::{
    ClientConfig, Connection, RemotingClient as NativeClient, Reply, RequestHandler,
};

use crate::callbacks;
use crate::errors;
use crate::header::{fields_dict, request_fields, response_int, Header};
use crate::process::{self, Owner};
use crate::runtime::{refuse_on_io_thread, runtime, wait};

/// A response.
#[pyclass(module = "rocketpy._native", frozen)]
pub struct RemotingResponse {
    /// The code of the request this answers (which says what its header holds).
    request_code: i32,
    #[pyo3(get)]
    code: i32,
    #[pyo3(get)]
    remark: Option<String>,
    #[pyo3(get)]
    opaque: i32,
    #[pyo3(get)]
    flag: i32,
    fields: HashMap<String, String>,
    body: Bytes,
    /// A pull's messages, decoded on the I/O thread that received the answer (so the
    /// callback thread, which holds the GIL, only makes their Python objects); taken once.
    decoded: std::sync::Mutex<Option<Decoded>>,
}

/// Messages decoded ahead of `RemotingResponse::pull_result`.
type Decoded = PyResult<Vec<crate::message::MessageExt>>;

impl RemotingResponse {
    pub(crate) fn new(request_code: i32, cmd: RemotingCommand) -> Self {
        RemotingResponse {
            request_code,
            code: cmd.code,
            remark: cmd.remark,
            opaque: cmd.opaque,
            flag: cmd.flag,
            fields: cmd.ext_fields,
            body: cmd.body,
            decoded: std::sync::Mutex::new(None),
        }
    }

    /// The messages of `cmd` when it answers a pull with SUCCESS, decoded now (without the
    /// GIL: called on the I/O thread).
    fn decode_pull(request_code: i32, cmd: &RemotingCommand) -> Option<Decoded> {
        let pull = request_code == rocketpy_protocol::code::request::PULL_MESSAGE
            || request_code == rocketpy_protocol::code::request::LITE_PULL_MESSAGE;
        (pull && cmd.code == rocketpy_protocol::code::response::SUCCESS)
            .then(|| crate::message::MessageExt::decode_all(&cmd.body, None))
    }
}

#[pymethods]
impl RemotingResponse {
    /// The response header, read by attribute (`None` for absent fields).
    #[getter]
    fn header(&self) -> Header {
        Header::of_response(self.request_code, self.fields.clone())
    }

    /// Header fields by wire name, as a new dict (for diagnostics).
    #[getter]
    fn ext_fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        fields_dict(py, &self.fields)
    }

    /// The body.
    #[getter]
    fn body<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.body)
    }

    /// The body decoded as CommitLog records (a PULL_MESSAGE or QUERY_MESSAGE answer), with no
    /// copy of the body into Python first.
    #[pyo3(signature = (broker_name=None))]
    fn decode_messages(
        &self,
        broker_name: Option<&str>,
    ) -> PyResult<Vec<crate::message::MessageExt>> {
        crate::message::MessageExt::decode_all(&self.body, broker_name)
    }

    /// A pull's answer read at once: `(next_begin_offset, max_offset,
    /// suggest_which_broker_id, messages)` — fields None when absent; the messages decoded
    /// when the code is SUCCESS, else None.
    #[pyo3(signature = (broker_name=None))]
    #[allow(clippy::type_complexity)] // one tuple, as Python unpacks it
    fn pull_result(
        &self,
        broker_name: Option<&str>,
    ) -> PyResult<(
        Option<i64>,
        Option<i64>,
        Option<i64>,
        Option<Vec<crate::message::MessageExt>>,
    )> {
        let int = |name| response_int(self.request_code, &self.fields, name);
        let msgs = if self.code == rocketpy_protocol::code::response::SUCCESS {
            let ready = self
                .decoded
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            let msgs = match ready {
                Some(decoded) => decoded?,
                None => crate::message::MessageExt::decode_all(&self.body, None)?,
            };
            Some(crate::message::MessageExt::with_broker_name(
                msgs,
                broker_name,
            ))
        } else {
            None
        };
        Ok((
            int("next_begin_offset")?,
            int("max_offset")?,
            int("suggest_which_broker_id")?,
            msgs,
        ))
    }

    fn __repr__(&self) -> String {
        format!(
            "RemotingResponse(code={}, remark={:?}, fields={}, body={} bytes)",
            self.code,
            self.remark,
            self.fields.len(),
            self.body.len()
        )
    }
}

/// Hands server-initiated requests (NOTIFY_CONSUMER_IDS_CHANGED, ...) to a Python callable
/// `handler(code, header, body)` on the callback thread. Requests that expect an answer
/// are answered REQUEST_CODE_NOT_SUPPORTED: the Python client only takes notifications.
struct PyRequestHandler {
    handler: Arc<Py<PyAny>>,
}

impl RequestHandler for PyRequestHandler {
    fn handle(&self, conn: &Arc<Connection>, request: RemotingCommand) -> Reply {
        let answer = (!request.is_oneway()).then(|| {
            RemotingCommand::response_to(
                &request,
                rocketpy_protocol::code::response::REQUEST_CODE_NOT_SUPPORTED,
            )
            .with_remark(format!(
                " request type {} not supported by rocketpy's client",
                request.code
            ))
        });
        // An Arc clone: the I/O thread never takes the GIL.
        let handler = self.handler.clone();
        // Whom to answer: a check of a transaction is answered to the broker that asked.
        let peer = conn.peer().to_string();
        callbacks::submit(move |py| {
            let header = Header::of_request(request.code, request.ext_fields);
            let body = PyBytes::new(py, &request.body);
            callbacks::call_reporting(py, &handler, (request.code, header, body, peer));
        });
        Reply::Now(answer)
    }
}

/// Sends `cmd` to `addr` and waits up to `timeout` for the answer with the GIL released:
/// this thread writes and reads over a direct connection when one is free (see
/// `rocketpy_remoting::direct`), else the shared connection carries it. On the main thread a
/// signal (Ctrl-C) raises here, as in [`wait`]. The outer error is Python's (a signal, a
/// forbidden thread); the inner one the transport's.
pub(crate) fn invoke_blocking(
    py: Python<'_>,
    client: &NativeClient,
    addr: &str,
    mut cmd: RemotingCommand,
    timeout: Duration,
) -> PyResult<rocketpy_remoting::Result<RemotingCommand>> {
    refuse_on_io_thread()?;
    let main = process::is_main_thread();
    let mut interrupt: Option<PyErr> = None;
    let direct = process::detach(py, || {
        let started = std::time::Instant::now();
        let mut conn = match client.direct().take(addr, timeout) {
            Ok(Some(conn)) => conn,
            Ok(None) => return None,
            Err(e) => return Some(Err(e)),
        };
        let mut check = || match Python::attach(|py| py.check_signals()) {
            Ok(()) => true,
            Err(e) => {
                interrupt = Some(e);
                false
            }
        };
        let poll = main.then_some((
            Duration::from_millis(100),
            &mut check as &mut dyn FnMut() -> bool,
        ));
        Some(conn.invoke(&mut cmd, timeout.saturating_sub(started.elapsed()), poll))
    });
    match direct {
        Some(Err(rocketpy_remoting::RemotingError::Interrupted(addr))) => Err(interrupt
            .unwrap_or_else(|| {
                pyo3::exceptions::PyKeyboardInterrupt::new_err(format!(
                    "request to {addr} interrupted"
                ))
            })),
        Some(out) => Ok(out),
        None => {
            let client = client.clone();
            wait(py, async move { client.invoke(addr, cmd, timeout).await })
        }
    }
}

fn build(
    code: i32,
    header: Option<&Bound<'_, PyDict>>,
    body: Option<&[u8]>,
    binary: bool,
) -> PyResult<RemotingCommand> {
    let mut cmd = RemotingCommand::request(code);
    cmd.ext_fields = request_fields(code, header)?;
    if let Some(b) = body {
        cmd.body = Bytes::copy_from_slice(b);
    }
    if binary {
        cmd.serialize_type = SerializeType::RocketMq;
    }
    Ok(cmd)
}

/// `(ca_file, verify, cert_file, key_file)`: see `rocketpy.TlsOptions`.
type TlsSpec = (Option<String>, bool, Option<String>, Option<String>);

fn client_tls((ca_file, verify, cert, key): TlsSpec) -> PyResult<rocketpy_remoting::ClientTls> {
    use rocketpy_remoting::tls::{ClientIdentity, ClientTls, Trust};
    let trust = match (verify, ca_file) {
        (false, _) => Trust::Any,
        (true, Some(ca)) => Trust::CaFile(ca.into()),
        (true, None) => Trust::System,
    };
    let identity = match (cert, key) {
        (Some(cert), Some(key)) => Some(ClientIdentity {
            cert: cert.into(),
            key: key.into(),
        }),
        (None, None) => None,
        _ => {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "a client certificate needs its key file, and a key its certificate",
            ))
        }
    };
    ClientTls::new(&trust, identity.as_ref()).map_err(pyo3::exceptions::PyValueError::new_err)
}

/// A connection-pooling client of the RocketMQ remoting protocol.
#[pyclass(module = "rocketpy._native", frozen)]
pub struct RemotingClient {
    inner: NativeClient,
    owner: Owner,
}

impl RemotingClient {
    /// The native client (clones share its connections).
    pub(crate) fn native(&self) -> NativeClient {
        self.inner.clone()
    }
}

#[pymethods]
impl RemotingClient {
    /// `credentials`, `(access_key, secret_key, security_token)`, signs every request
    /// (RocketMQ's ACL). `tls`, `(ca_file, verify, cert_file, key_file)`, opens every
    /// connection with TLS.
    #[new]
    #[pyo3(signature = (request_handler=None, connect_timeout_ms=3000, direct_connections=4, credentials=None, tls=None))]
    fn new(
        request_handler: Option<Py<PyAny>>,
        connect_timeout_ms: u64,
        direct_connections: usize,
        credentials: Option<(String, String, Option<String>)>,
        tls: Option<TlsSpec>,
    ) -> PyResult<Self> {
        let handler = request_handler.map(|h| {
            Arc::new(PyRequestHandler {
                handler: Arc::new(h),
            }) as Arc<dyn RequestHandler>
        });
        let config = ClientConfig {
            connect_timeout: Duration::from_millis(connect_timeout_ms),
            direct_connections,
            credentials: credentials.map(|(access_key, secret_key, security_token)| {
                rocketpy_protocol::signature::Credentials::new(
                    access_key,
                    secret_key,
                    security_token,
                )
            }),
            tls: tls.map(client_tls).transpose()?,
            in_process: None,
            // Every client of the binding (producers, consumers, admin) is a Python client:
            // the broker's connection lists and `language` metric labels say so.
            language: rocketpy_protocol::LanguageCode::Python,
        };
        Ok(RemotingClient {
            inner: NativeClient::new(config, handler, runtime().handle().clone()),
            owner: Owner::current(),
        })
    }

    /// Sends a request and waits for its response. `header` gives the request header by
    /// attribute name (see `rocketpy_protocol::header`). With `direct`, this thread writes
    /// the request and reads the answer itself when a direct connection is free (for
    /// requests no answer of the server depends on, such as sends; see
    /// `rocketpy_remoting::direct`).
    #[pyo3(signature = (addr, code, header=None, body=None, timeout_ms=3000, binary=false, direct=false))]
    #[allow(clippy::too_many_arguments)] // mirrors the Python signature
    fn invoke(
        &self,
        py: Python<'_>,
        addr: &str,
        code: i32,
        header: Option<&Bound<'_, PyDict>>,
        body: Option<&[u8]>,
        timeout_ms: u64,
        binary: bool,
        direct: bool,
    ) -> PyResult<RemotingResponse> {
        self.owner.check("client")?;
        let cmd = build(code, header, body, binary)?;
        let timeout = Duration::from_millis(timeout_ms);
        let resp = if direct {
            invoke_blocking(py, &self.inner, addr, cmd, timeout)?
        } else {
            let client = self.inner.clone();
            wait(py, async move { client.invoke(addr, cmd, timeout).await })?
        };
        resp.map(|resp| RemotingResponse::new(code, resp))
            .map_err(errors::remoting)
    }

    /// Sends a request marked oneway.
    #[pyo3(signature = (addr, code, header=None, body=None, binary=false))]
    fn invoke_oneway(
        &self,
        py: Python<'_>,
        addr: &str,
        code: i32,
        header: Option<&Bound<'_, PyDict>>,
        body: Option<&[u8]>,
        binary: bool,
    ) -> PyResult<()> {
        self.owner.check("client")?;
        let cmd = build(code, header, body, binary)?;
        let client = self.inner.clone();
        wait(py, async move { client.invoke_oneway(addr, cmd).await })?.map_err(errors::remoting)
    }

    /// Sends a request and returns at once; `callback(response, error)` runs later on the
    /// callback thread with exactly one of the two set.
    #[pyo3(signature = (addr, code, header, body, timeout_ms, callback, binary=false))]
    #[allow(clippy::too_many_arguments)]
    fn invoke_async(
        &self,
        py: Python<'_>,
        addr: &str,
        code: i32,
        header: Option<&Bound<'_, PyDict>>,
        body: Option<&[u8]>,
        timeout_ms: u64,
        callback: Py<PyAny>,
        binary: bool,
    ) -> PyResult<()> {
        self.owner.check("client")?;
        let cmd = build(code, header, body, binary)?;
        // Spawning wakes an I/O thread, which the kernel may run at once on this core: the
        // GIL is let go meanwhile, or every Python thread would wait for this one's core
        // (measured: a push consumer's next pull, issued from the callback thread, held
        // the GIL for a third of the time it held it at all).
        let inner = &self.inner;
        process::detach(py, || {
            inner.invoke_async(
                addr,
                cmd,
                Duration::from_millis(timeout_ms),
                move |result| {
                    let decoded = result
                        .as_ref()
                        .ok()
                        .and_then(|cmd| RemotingResponse::decode_pull(code, cmd));
                    callbacks::submit(move |py| {
                        let args = match result {
                            Ok(resp) => match Py::new(py, {
                                let r = RemotingResponse::new(code, resp);
                                *r.decoded.lock().unwrap_or_else(|e| e.into_inner()) = decoded;
                                r
                            }) {
                                Ok(r) => (r.into_any(), py.None()),
                                Err(e) => (py.None(), e.into_value(py).into_any()),
                            },
                            Err(e) => (py.None(), errors::remoting(e).into_value(py).into_any()),
                        };
                        callbacks::call_reporting(py, &callback, args);
                    });
                },
            )
        });
        Ok(())
    }

    /// Reads offsets `[start, end)` of one queue from the broker at `addr` as column buffers
    /// (for the Spark reader), with up to `concurrency` pulls in flight; returns
    /// `(columns, next_offset)`. Lost offsets (retention) raise `DataLossError`, or are
    /// skipped when `fail_on_data_loss` is false. `expression_type` `SQL92` makes
    /// `subscription` an SQL92 filter (evaluated by the broker, and checked again here).
    #[pyo3(signature = (addr, group, topic, queue_id, start, end, broker_name, subscription="*", timeout_ms=10000, concurrency=16, fail_on_data_loss=true, expression_type="TAG"))]
    #[allow(clippy::too_many_arguments)]
    fn pull_columns<'py>(
        &self,
        py: Python<'py>,
        addr: &str,
        group: &str,
        topic: &str,
        queue_id: i32,
        start: i64,
        end: i64,
        broker_name: &str,
        subscription: &str,
        timeout_ms: u64,
        concurrency: usize,
        fail_on_data_loss: bool,
        expression_type: &str,
    ) -> PyResult<(Bound<'py, pyo3::types::PyDict>, i64)> {
        self.owner.check("client")?;
        let spec = rocketpy_client::pull_range::PullSpec {
            addr: addr.to_owned(),
            group: group.to_owned(),
            topic: topic.to_owned(),
            queue_id,
            subscription: subscription.to_owned(),
            expression_type: expression_type.to_owned(),
            timeout: Duration::from_millis(timeout_ms),
        };
        crate::columns::pull_columns(
            py,
            &self.inner,
            spec,
            (start, end),
            broker_name,
            concurrency,
            fail_on_data_loss,
        )
    }

    /// Closes the connection to `addr` (the next request reconnects).
    fn close_connection(&self, addr: &str) {
        if self.owner.is_current() {
            self.inner.close_connection(addr);
        }
    }

    /// Closes every connection. In a child process after fork() there is nothing to close
    /// (the connections' threads stayed in the parent), so it does nothing.
    fn shutdown(&self) {
        if self.owner.is_current() {
            self.inner.shutdown();
        }
    }
}
