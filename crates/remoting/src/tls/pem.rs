//! Certificates and keys from PEM files, with errors that name the file and what was wanted.

use std::path::Path;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Every certificate in `path` (a chain: the leaf first).
pub(crate) fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("cannot read certificates from {}: {e}", path.display()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("cannot read certificates from {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("no PEM certificate in {}", path.display()));
    }
    Ok(certs)
}

/// The private key in `path`.
pub(crate) fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| {
        format!(
            "no usable private key in {}: {e} (an unencrypted PKCS#8, PKCS#1 or SEC1 PEM key is needed)",
            path.display()
        )
    })
}

/// A root store of every certificate in `path`.
pub(crate) fn roots(path: &Path) -> Result<rustls::RootCertStore, String> {
    let mut store = rustls::RootCertStore::empty();
    for cert in certificates(path)? {
        store
            .add(cert)
            .map_err(|e| format!("bad CA certificate in {}: {e}", path.display()))?;
    }
    Ok(store)
}
