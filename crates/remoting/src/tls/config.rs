//! RocketMQ's `tls.*` keys (its `TlsSystemConfig`), for the servers' listeners and a broker's
//! own connections, and the TLS they describe.

use std::path::PathBuf;

use rocketpy_protocol::config::parse_properties;

use super::{ClientAuth, ClientIdentity, ClientTls, ServerTls, Trust};
use crate::tls::TlsMode;

rocketpy_protocol::config_struct! {
    /// RocketMQ's TLS keys.
    pub struct TlsConfig {
        /// TLS on the listeners: disabled, permissive (TLS and plain TCP) or enforcing (TLS only); RocketMQ's default is permissive with a generated certificate, rocketpy's disabled.
        server_mode: TlsMode = TlsMode::Disabled => "tls.server.mode" | "tlsMode",
        /// The server's certificate chain (PEM).
        server_cert_path: Option<PathBuf> = None => "tls.server.certPath",
        /// The server's private key (PEM, unencrypted).
        server_key_path: Option<PathBuf> = None => "tls.server.keyPath",
        /// Password of an encrypted server key: not supported (give an unencrypted key).
        server_key_password: Option<String> = None => "tls.server.keyPassword",
        /// Client certificates: none, optional (checked when given) or require.
        server_need_client_auth: ClientAuth = ClientAuth::None => "tls.server.need.client.auth",
        /// Whether client certificates are checked (rocketpy always checks them against tls.server.trustCertPath).
        server_auth_client: bool = false => "tls.server.authClient",
        /// CAs that sign client certificates (PEM).
        server_trust_cert_path: Option<PathBuf> = None => "tls.server.trustCertPath",
        /// Whether the broker's own connections (to name servers, a slave's to its master) use TLS.
        enable: bool = false => "tls.enable",
        /// Whether those connections check the server's certificate (against tls.client.trustCertPath, else the system's CAs).
        client_auth_server: bool = false => "tls.client.authServer",
        /// CAs that sign the servers' certificates (PEM).
        client_trust_cert_path: Option<PathBuf> = None => "tls.client.trustCertPath",
        /// The certificate the broker shows servers asking for one (PEM).
        client_cert_path: Option<PathBuf> = None => "tls.client.certPath",
        /// Its private key (PEM, unencrypted).
        client_key_path: Option<PathBuf> = None => "tls.client.keyPath",
        /// Password of an encrypted client key: not supported (give an unencrypted key).
        client_key_password: Option<String> = None => "tls.client.keyPassword",
        /// RocketMQ's test mode (a generated certificate, nothing checked): not supported; false is accepted.
        test_mode_enable: bool = false => "tls.test.mode.enable",
        /// A properties file of these keys, read at start; its values win, as in RocketMQ.
        config_file: Option<PathBuf> = None => "tls.config.file",
    }
}

impl TlsConfig {
    /// These keys with `tls.config.file`'s applied over them.
    pub fn effective(&self) -> Result<TlsConfig, String> {
        let mut out = self.clone();
        if let Some(path) = &self.config_file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("tls.config.file {}: {e}", path.display()))?;
            for (key, value) in parse_properties(&text) {
                let known = out
                    .set(&key, &value)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                if !known {
                    tracing::warn!(key, file = %path.display(), "unknown TLS key ignored");
                }
            }
        }
        if out.test_mode_enable {
            return Err(
                "tls.test.mode.enable=true: rocketpy has no test mode; give tls.server.certPath and tls.server.keyPath (and set it to false)"
                    .into(),
            );
        }
        Ok(out)
    }

    /// The listeners' TLS.
    pub fn server(&self) -> Result<ServerTls, String> {
        let c = self.effective()?;
        if c.server_mode == TlsMode::Disabled {
            return Ok(ServerTls::disabled());
        }
        if c.server_key_password.is_some() {
            return Err(encrypted("tls.server.keyPassword"));
        }
        let (Some(cert), Some(key)) = (&c.server_cert_path, &c.server_key_path) else {
            return Err(format!(
                "tls.server.mode={}: tls.server.certPath and tls.server.keyPath must name the server's certificate and key",
                rocketpy_protocol::config::ConfigValue::render(&c.server_mode)
            ));
        };
        ServerTls::new(
            c.server_mode,
            cert,
            key,
            c.server_need_client_auth,
            c.server_trust_cert_path.as_deref(),
        )
    }

    /// The TLS of the broker's own connections; `None` unless `tls.enable=true`.
    pub fn client(&self) -> Result<Option<ClientTls>, String> {
        let c = self.effective()?;
        if !c.enable {
            return Ok(None);
        }
        if c.client_key_password.is_some() {
            return Err(encrypted("tls.client.keyPassword"));
        }
        let trust = match (c.client_auth_server, &c.client_trust_cert_path) {
            (false, _) => Trust::Any,
            (true, Some(path)) => Trust::CaFile(path.clone()),
            (true, None) => Trust::System,
        };
        let identity = match (&c.client_cert_path, &c.client_key_path) {
            (Some(cert), Some(key)) => Some(ClientIdentity {
                cert: cert.clone(),
                key: key.clone(),
            }),
            (None, None) => None,
            _ => {
                return Err("tls.client.certPath and tls.client.keyPath go together".into());
            }
        };
        ClientTls::new(&trust, identity.as_ref()).map(Some)
    }
}

fn encrypted(key: &str) -> String {
    format!("{key}: encrypted keys are not supported; give an unencrypted PKCS#8, PKCS#1 or SEC1 PEM key")
}
