//! A server's side: its mode, its certificate, and telling TLS from plain connections.

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rocketpy_protocol::config::ConfigValue;
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;

use super::{pem, provider};
use crate::stream::Stream;

/// The first byte of a TLS connection (a handshake record).
const TLS_HANDSHAKE: u8 = 0x16;

/// How long a new connection may take to send its first byte and finish its handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// RocketMQ's `tls.server.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TlsMode {
    /// Plain TCP only.
    #[default]
    Disabled,
    /// TLS and plain TCP.
    Permissive,
    /// TLS only.
    Enforcing,
}

impl ConfigValue for TlsMode {
    fn parse_value(raw: &str) -> Result<Self, String> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "disabled" => Ok(TlsMode::Disabled),
            "permissive" => Ok(TlsMode::Permissive),
            "enforcing" => Ok(TlsMode::Enforcing),
            other => Err(format!(
                "expected disabled, permissive or enforcing, not {other:?}"
            )),
        }
    }
    fn render(&self) -> String {
        match self {
            TlsMode::Disabled => "disabled",
            TlsMode::Permissive => "permissive",
            TlsMode::Enforcing => "enforcing",
        }
        .to_owned()
    }
}

/// RocketMQ's `tls.server.need.client.auth`: whether clients must show a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuth {
    /// No client certificate is asked for.
    #[default]
    None,
    /// One is checked when given.
    Optional,
    /// One is required.
    Require,
}

impl ConfigValue for ClientAuth {
    fn parse_value(raw: &str) -> Result<Self, String> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "none" => Ok(ClientAuth::None),
            "optional" => Ok(ClientAuth::Optional),
            "require" | "required" => Ok(ClientAuth::Require),
            other => Err(format!("expected none, optional or require, not {other:?}")),
        }
    }
    fn render(&self) -> String {
        match self {
            ClientAuth::None => "none",
            ClientAuth::Optional => "optional",
            ClientAuth::Require => "require",
        }
        .to_owned()
    }
}

/// A server's TLS: its mode and, unless disabled, its certificate.
pub struct ServerTls {
    mode: TlsMode,
    config: Option<Arc<rustls::ServerConfig>>,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl ServerTls {
    /// Plain TCP only.
    pub fn disabled() -> Self {
        ServerTls {
            mode: TlsMode::Disabled,
            config: None,
        }
    }

    /// A server presenting the certificate chain in `cert` with the key in `key`; clients'
    /// certificates are checked against the CAs in `trust` as `client_auth` says.
    pub fn new(
        mode: TlsMode,
        cert: &Path,
        key: &Path,
        client_auth: ClientAuth,
        trust: Option<&Path>,
    ) -> Result<Self, String> {
        if mode == TlsMode::Disabled {
            return Ok(Self::disabled());
        }
        let builder = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?;
        let builder = match client_auth {
            ClientAuth::None => builder.with_no_client_auth(),
            ClientAuth::Optional | ClientAuth::Require => {
                let trust = trust.ok_or(
                    "tls.server.need.client.auth asks for client certificates: tls.server.trustCertPath must name the CAs that sign them",
                )?;
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    Arc::new(pem::roots(trust)?),
                    provider(),
                );
                let verifier = match client_auth {
                    ClientAuth::Optional => verifier.allow_unauthenticated(),
                    _ => verifier,
                };
                builder.with_client_cert_verifier(verifier.build().map_err(|e| e.to_string())?)
            }
        };
        let config = builder
            .with_single_cert(pem::certificates(cert)?, pem::private_key(key)?)
            .map_err(|e| {
                format!(
                    "{} and {} do not make a server identity: {e}",
                    cert.display(),
                    key.display()
                )
            })?;
        Ok(ServerTls {
            mode,
            config: Some(Arc::new(config)),
        })
    }

    /// Its mode.
    pub fn mode(&self) -> TlsMode {
        self.mode
    }

    /// The same server offering `protocols` by ALPN (gRPC needs `h2`).
    pub fn with_alpn(&self, protocols: &[&[u8]]) -> Self {
        let config = self.config.as_ref().map(|c| {
            let mut c = (**c).clone();
            c.alpn_protocols = protocols.iter().map(|p| p.to_vec()).collect();
            Arc::new(c)
        });
        ServerTls {
            mode: self.mode,
            config,
        }
    }

    /// What a new connection speaks: TLS (after its handshake) or plain TCP, as the mode
    /// allows. An error means the connection is to be closed (enforcing mode and a plain
    /// client, a failed handshake, a client that sent nothing in time); its text says why.
    pub async fn accept(&self, tcp: TcpStream) -> io::Result<Stream> {
        let Some(config) = &self.config else {
            return Ok(Stream::Plain(tcp));
        };
        let mut first = [0u8; 1];
        let peeked = tokio::time::timeout(HANDSHAKE_TIMEOUT, tcp.peek(&mut first))
            .await
            .map_err(|_| timed_out("sent nothing"))??;
        if peeked == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "closed before sending anything",
            ));
        }
        if first[0] != TLS_HANDSHAKE {
            return match self.mode {
                TlsMode::Enforcing => Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    "a plain connection refused: tls.server.mode=enforcing",
                )),
                _ => Ok(Stream::Plain(tcp)),
            };
        }
        let acceptor = TlsAcceptor::from(config.clone());
        let tls = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp))
            .await
            .map_err(|_| timed_out("did not finish its TLS handshake"))??;
        Ok(Stream::Tls(Box::new(tls.into())))
    }
}

fn timed_out(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!("{what} within {HANDSHAKE_TIMEOUT:?}"),
    )
}
