//! The scrape endpoint: `GET /metrics` answers the registry in OpenMetrics text (which
//! Prometheus reads natively). Rendering runs on the blocking pool, because collectors may read
//! the store (the lag's oldest unconsumed message) and must not stall request handling.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{ALLOW, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Content type of OpenMetrics text, the format `prometheus-client` writes.
pub const CONTENT_TYPE_OPENMETRICS: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A listening scrape endpoint; dropping it (or [`MetricsServer::shutdown`]) stops it.
pub struct MetricsServer {
    addr: SocketAddr,
    accept: JoinHandle<()>,
}

impl MetricsServer {
    /// Listens on `addr` (`host:port`, port 0 picks one) and serves `registry` from the
    /// current tokio runtime. Scrapes are serialised: collectors see one scrape at a time.
    pub async fn bind(addr: &str, registry: Registry) -> std::io::Result<MetricsServer> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let registry = Arc::new(Mutex::new(registry));
        let accept = tokio::spawn(async move {
            loop {
                let (stream, _) = match listener.accept().await {
                    Ok(conn) => conn,
                    Err(e) => {
                        // Out of descriptors and the like: wait, keep the endpoint up.
                        tracing::debug!(error = %e, "metrics accept failed");
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let registry = registry.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| answer(req, registry.clone()));
                    if let Err(e) = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await
                    {
                        tracing::debug!(error = %e, "metrics connection ended");
                    }
                });
            }
        });
        tracing::info!(%addr, "metrics endpoint listening (GET /metrics)");
        Ok(MetricsServer { addr, accept })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting scrapes (scrapes under way finish).
    pub fn shutdown(&self) {
        self.accept.abort();
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *response.status_mut() = status;
    response
}

async fn answer(
    req: Request<Incoming>,
    registry: Arc<Mutex<Registry>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "only GET\n");
        response
            .headers_mut()
            .insert(ALLOW, hyper::header::HeaderValue::from_static("GET, HEAD"));
        return Ok(response);
    }
    match req.uri().path() {
        "/metrics" => {}
        "/" => return Ok(plain(StatusCode::OK, "metrics are at /metrics\n")),
        _ => {
            return Ok(plain(
                StatusCode::NOT_FOUND,
                "not found; metrics are at /metrics\n",
            ))
        }
    }
    let rendered = tokio::task::spawn_blocking(move || {
        let mut text = String::with_capacity(16 * 1024);
        prometheus_client::encoding::text::encode(&mut text, &registry.lock()).map(|_| text)
    })
    .await;
    Ok(match rendered {
        Ok(Ok(text)) => {
            let mut response = Response::new(Full::new(Bytes::from(text)));
            response.headers_mut().insert(
                CONTENT_TYPE,
                hyper::header::HeaderValue::from_static(CONTENT_TYPE_OPENMETRICS),
            );
            response
        }
        _ => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "metrics could not be rendered\n",
        ),
    })
}
