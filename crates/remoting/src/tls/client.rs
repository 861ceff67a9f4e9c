//! A client's side: which servers it trusts and the certificate it shows, if any.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::{pem, provider};
use crate::stream::Stream;

/// Which server certificates a client accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// Those signed by the system's CAs, for the address's host or IP address.
    System,
    /// Those signed by the CAs in this PEM file, for the address's host or IP address.
    CaFile(PathBuf),
    /// Any (RocketMQ clients' default, `tls.client.authServer=false`): encrypted, but not
    /// proof of whom the client talks to.
    Any,
}

/// The certificate a client shows servers that ask for one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    /// The certificate chain (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM, unencrypted).
    pub key: PathBuf,
}

/// A client's TLS.
#[derive(Clone)]
pub struct ClientTls {
    connector: TlsConnector,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTls").finish_non_exhaustive()
    }
}

impl ClientTls {
    /// A client trusting servers as `trust` says and showing `identity` when asked.
    pub fn new(trust: &Trust, identity: Option<&ClientIdentity>) -> Result<Self, String> {
        let builder = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?;
        let builder = match trust {
            Trust::System => {
                let found = rustls_native_certs::load_native_certs();
                let mut roots = rustls::RootCertStore::empty();
                roots.add_parsable_certificates(found.certs);
                if roots.is_empty() {
                    return Err("no CA certificates found on this system: give a CA file".into());
                }
                builder.with_root_certificates(roots)
            }
            Trust::CaFile(path) => builder.with_root_certificates(pem::roots(path)?),
            Trust::Any => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyServer(provider()))),
        };
        let config = match identity {
            None => builder.with_no_client_auth(),
            Some(id) => builder
                .with_client_auth_cert(pem::certificates(&id.cert)?, pem::private_key(&id.key)?)
                .map_err(|e| {
                    format!(
                        "{} and {} do not make a client identity: {e}",
                        id.cert.display(),
                        id.key.display()
                    )
                })?,
        };
        Ok(ClientTls {
            connector: TlsConnector::from(Arc::new(config)),
        })
    }

    /// Opens TLS on `tcp`, connected to `addr` (`host:port`: the host is the name the
    /// server's certificate must carry).
    pub async fn connect(&self, addr: &str, tcp: TcpStream) -> io::Result<Stream> {
        let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(host.to_owned())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{host:?}: {e}")))?;
        let tls = self.connector.connect(name, tcp).await?;
        Ok(Stream::Tls(Box::new(tls.into())))
    }
}

/// Accepts any certificate, still checking that the server holds its key.
#[derive(Debug)]
struct AnyServer(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyServer {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
