//! TLS on RocketMQ's remoting connections, set up with RocketMQ's `tls.*` keys ([`TlsConfig`]).
//!
//! A server's `tls.server.mode` is `disabled` (plain TCP), `permissive` (TLS and plain TCP on
//! one port) or `enforcing` (TLS only). In the last two the first byte a client sends tells
//! which it speaks: a TLS connection opens with a handshake record (0x16), a plain one with a
//! frame's length, whose high byte is 0x16 only for frames of 369 MB and more, which no
//! server accepts. An enforcing server closes plain connections; a disabled one reads a TLS
//! hello as a bad frame and closes the connection.
//!
//! Clients (and a broker's own requests, with `tls.enable=true`) connect with TLS and check
//! the server's certificate against a CA file, the system's roots, or, as RocketMQ's clients
//! do unless `tls.client.authServer=true`, not at all. Certificates and keys are PEM files
//! (the key unencrypted: PKCS#8, PKCS#1 or SEC1). rustls with ring does the cryptography.

mod client;
mod config;
mod pem;
mod server;

pub use client::{ClientIdentity, ClientTls, Trust};
pub use config::TlsConfig;
pub use server::{ClientAuth, ServerTls, TlsMode};

use std::sync::Arc;

/// The one crypto provider of every TLS configuration here.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}
