//! TLS on a real server and client: the three modes, server and client certificates, and
//! the configuration keys. Certificates are made here, at run time, by rcgen.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rocketpy_protocol::code::response;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::tls::{ClientAuth, ClientIdentity, ClientTls, ServerTls, TlsMode, Trust};
use rocketpy_remoting::{
    ClientConfig, ProcessorTable, RemotingClient, RemotingServer, Reply, ServerConfig, TlsConfig,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ECHO: i32 = 1000;

/// A CA, a server certificate for 127.0.0.1 it signed, a client certificate it signed, and a
/// second CA that signed nothing here.
struct Certs {
    _dir: tempfile::TempDir,
    ca: PathBuf,
    other_ca: PathBuf,
    server_cert: PathBuf,
    server_key: PathBuf,
    client: ClientIdentity,
}

fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn certs() -> Certs {
    let dir = tempfile::tempdir().unwrap();
    let ca_cert = ca("rocketpy test CA");
    let other = ca("another CA");
    let leaf = |sans: Vec<String>, usage| {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(sans).unwrap();
        params.extended_key_usages = vec![usage];
        (params.signed_by(&key, &ca_cert).unwrap(), key)
    };
    let (server, server_key) = leaf(
        vec!["127.0.0.1".into(), "localhost".into()],
        ExtendedKeyUsagePurpose::ServerAuth,
    );
    let (client, client_key) = leaf(vec!["client".into()], ExtendedKeyUsagePurpose::ClientAuth);
    let d = dir.path();
    Certs {
        ca: write(d, "ca.pem", &ca_cert.pem()),
        other_ca: write(d, "other-ca.pem", &other.pem()),
        server_cert: write(d, "server.pem", &server.pem()),
        server_key: write(d, "server.key", &server_key.serialize_pem()),
        client: ClientIdentity {
            cert: write(d, "client.pem", &client.pem()),
            key: write(d, "client.key", &client_key.serialize_pem()),
        },
        _dir: dir,
    }
}

async fn server(tls: ServerTls) -> RemotingServer {
    let mut table = ProcessorTable::new();
    table.register(
        ECHO,
        Arc::new(|conn: &Arc<_>, req: &RemotingCommand| {
            let conn: &Arc<rocketpy_remoting::Connection> = conn;
            let resp = RemotingCommand::response_to(req, response::SUCCESS)
                .with_body(req.body.clone())
                .with_remark(if conn.is_tls() { "tls" } else { "plain" });
            Ok(Reply::Now(Some(resp)))
        }),
    );
    let config = ServerConfig {
        tls: Arc::new(tls),
        ..ServerConfig::default()
    };
    RemotingServer::bind("127.0.0.1:0", table, config)
        .await
        .unwrap()
}

fn client(tls: Option<ClientTls>) -> RemotingClient {
    let config = ClientConfig {
        tls,
        ..ClientConfig::default()
    };
    RemotingClient::new(config, None, tokio::runtime::Handle::current())
}

/// The transport the server saw for an echo, or the client's error.
async fn echo(client: &RemotingClient, addr: &str) -> Result<String, String> {
    let req = RemotingCommand::request(ECHO).with_body(vec![7u8; 100_000]);
    let resp = client
        .invoke(addr, req, Duration::from_secs(5))
        .await
        .map_err(|e| e.to_string())?;
    assert_eq!(resp.body.len(), 100_000, "a large body crosses TLS whole");
    Ok(resp.remark.unwrap_or_default())
}

fn tls_client(certs: &Certs, trust: Trust, identity: bool) -> Option<ClientTls> {
    Some(ClientTls::new(&trust, identity.then_some(&certs.client)).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enforcing_serves_tls_only_and_clients_check_the_server() {
    let c = certs();
    let tls = ServerTls::new(
        TlsMode::Enforcing,
        &c.server_cert,
        &c.server_key,
        ClientAuth::None,
        None,
    )
    .unwrap();
    let server = server(tls).await;
    let addr = server.local_addr().to_string();
    let trusted = client(tls_client(&c, Trust::CaFile(c.ca.clone()), false));
    assert_eq!(echo(&trusted, &addr).await.unwrap(), "tls");
    let any = client(tls_client(&c, Trust::Any, false));
    assert_eq!(echo(&any, &addr).await.unwrap(), "tls");
    // Another CA's client refuses the server; a plain client is refused by it.
    let wrong = client(tls_client(&c, Trust::CaFile(c.other_ca.clone()), false));
    let err = echo(&wrong, &addr).await.unwrap_err();
    assert!(err.contains("certificate"), "{err}");
    let plain = client(None);
    assert!(echo(&plain, &addr).await.is_err());
    // A certificate for 127.0.0.1 does not pass for another name.
    let by_name = tls_client(&c, Trust::CaFile(c.ca.clone()), false).unwrap();
    let tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let port = server.local_addr().port();
    assert!(by_name
        .connect(&format!("example.org:{port}"), tcp)
        .await
        .is_err());
    // The server survives all of it.
    assert_eq!(echo(&trusted, &addr).await.unwrap(), "tls");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permissive_serves_both_and_disabled_plain_only() {
    let c = certs();
    let tls = ServerTls::new(
        TlsMode::Permissive,
        &c.server_cert,
        &c.server_key,
        ClientAuth::None,
        None,
    )
    .unwrap();
    let server = server(tls).await;
    let addr = server.local_addr().to_string();
    let secure = client(tls_client(&c, Trust::CaFile(c.ca.clone()), false));
    assert_eq!(echo(&secure, &addr).await.unwrap(), "tls");
    assert_eq!(echo(&client(None), &addr).await.unwrap(), "plain");
    server.shutdown().await;

    let server = server_disabled().await;
    let addr = server.local_addr().to_string();
    assert_eq!(echo(&client(None), &addr).await.unwrap(), "plain");
    assert!(echo(&secure, &addr).await.is_err());
    server.shutdown().await;
}

async fn server_disabled() -> RemotingServer {
    server(ServerTls::disabled()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_client_certificates() {
    let c = certs();
    let tls = ServerTls::new(
        TlsMode::Enforcing,
        &c.server_cert,
        &c.server_key,
        ClientAuth::Require,
        Some(&c.ca),
    )
    .unwrap();
    let server = server(tls).await;
    let addr = server.local_addr().to_string();
    let with_cert = client(tls_client(&c, Trust::CaFile(c.ca.clone()), true));
    assert_eq!(echo(&with_cert, &addr).await.unwrap(), "tls");
    let without = client(tls_client(&c, Trust::CaFile(c.ca.clone()), false));
    assert!(echo(&without, &addr).await.is_err());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_and_garbage_connections_do_not_block_others() {
    let c = certs();
    let tls = ServerTls::new(
        TlsMode::Enforcing,
        &c.server_cert,
        &c.server_key,
        ClientAuth::None,
        None,
    )
    .unwrap();
    let server = server(tls).await;
    let addr = server.local_addr().to_string();
    let _silent = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let mut garbage = tokio::net::TcpStream::connect(&addr).await.unwrap();
    garbage
        .write_all(b"\x16\x03\x01\x00\x05hello, not a client hello")
        .await
        .unwrap();
    let secure = client(tls_client(&c, Trust::CaFile(c.ca.clone()), false));
    assert_eq!(echo(&secure, &addr).await.unwrap(), "tls");
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), garbage.read_to_end(&mut rest)).await;
    assert!(closed.is_ok(), "a bad handshake is closed");
    server.shutdown().await;
}

#[test]
fn keys_build_what_they_say_and_refuse_what_cannot_work() {
    let c = certs();
    let mut cfg = TlsConfig::default();
    assert_eq!(cfg.server().unwrap().mode(), TlsMode::Disabled);
    assert!(cfg.client().unwrap().is_none());
    cfg.set("tls.server.mode", "enforcing").unwrap();
    let err = cfg.server().unwrap_err();
    assert!(err.contains("tls.server.certPath"), "{err}");
    assert!(cfg.set("tls.server.mode", "strict").is_err());
    assert!(cfg.set("tls.server.need.client.auth", "sometimes").is_err());
    cfg.set("tls.server.certPath", c.server_cert.to_str().unwrap())
        .unwrap();
    cfg.set("tls.server.keyPath", c.server_key.to_str().unwrap())
        .unwrap();
    assert_eq!(cfg.server().unwrap().mode(), TlsMode::Enforcing);
    cfg.set("tls.server.need.client.auth", "require").unwrap();
    assert!(cfg.server().unwrap_err().contains("trustCertPath"));
    cfg.set("tls.server.trustCertPath", c.ca.to_str().unwrap())
        .unwrap();
    assert!(cfg.server().is_ok());
    cfg.set("tls.server.keyPassword", "secret").unwrap();
    assert!(cfg.server().unwrap_err().contains("encrypted"));
    // A certificate file given as the key names the file.
    let mut bad = TlsConfig::default();
    for (k, v) in [
        ("tlsMode", "permissive"),
        ("tls.server.certPath", c.server_cert.to_str().unwrap()),
        ("tls.server.keyPath", c.server_cert.to_str().unwrap()),
    ] {
        bad.set(k, v).unwrap();
    }
    assert!(bad.server().unwrap_err().contains("server.pem"));
    // tls.config.file: RocketMQ's tls.properties, its values win.
    let file = c.ca.with_file_name("tls.properties");
    std::fs::write(
        &file,
        format!(
            "tls.server.mode=permissive\ntls.server.certPath={}\ntls.server.keyPath={}\ntls.enable=true\ntls.client.authServer=true\ntls.client.trustCertPath={}\ntls.test.mode.enable=false\n",
            c.server_cert.display(),
            c.server_key.display(),
            c.ca.display()
        ),
    )
    .unwrap();
    let mut from_file = TlsConfig::default();
    from_file
        .set("tls.config.file", file.to_str().unwrap())
        .unwrap();
    assert_eq!(from_file.server().unwrap().mode(), TlsMode::Permissive);
    assert!(from_file.client().unwrap().is_some());
    from_file.set("tls.test.mode.enable", "true").unwrap();
    assert!(from_file.server().is_ok(), "the file says false and wins");
    let mut test_mode = TlsConfig::default();
    test_mode.set("tls.test.mode.enable", "true").unwrap();
    assert!(test_mode.server().unwrap_err().contains("test mode"));
}
