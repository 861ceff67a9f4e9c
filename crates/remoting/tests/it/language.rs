//! The language a client announces: RUST by default, the configured one (the Python binding
//! says PYTHON) on every path — the shared connection, oneway and the direct pool — and in
//! both header serialisations (JSON's name, the binary header's byte).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rocketpy_protocol::code::response;
use rocketpy_protocol::{LanguageCode, RemotingCommand, SerializeType};
use rocketpy_remoting::{
    ClientConfig, ProcessorTable, RemotingClient, RemotingServer, Reply, ServerConfig,
};

const WHO: i32 = 1100;

/// A server answering WHO with the language and serialisation of the request it read.
async fn server(seen: Arc<Mutex<Vec<LanguageCode>>>) -> RemotingServer {
    let mut table = ProcessorTable::new();
    table.register(
        WHO,
        Arc::new(move |_: &Arc<_>, req: &RemotingCommand| {
            seen.lock().unwrap().push(req.language);
            let resp = RemotingCommand::response_to(req, response::SUCCESS)
                .with_field("language", req.language.name())
                .with_field("binary", req.serialize_type == SerializeType::RocketMq);
            Ok(Reply::Now(Some(resp)))
        }),
    );
    RemotingServer::bind("127.0.0.1:0", table, ServerConfig::default())
        .await
        .unwrap()
}

fn client(language: Option<LanguageCode>) -> RemotingClient {
    let mut config = ClientConfig::default();
    if let Some(language) = language {
        config.language = language;
    }
    RemotingClient::new(config, None, tokio::runtime::Handle::current())
}

fn who(binary: bool) -> RemotingCommand {
    let mut req = RemotingCommand::request(WHO);
    if binary {
        req.serialize_type = SerializeType::RocketMq;
    }
    req
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_announce_the_configured_language_in_both_headers() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let server = server(seen.clone()).await;
    let addr = server.local_addr().to_string();
    let timeout = Duration::from_secs(5);
    for (language, expected) in [(None, "RUST"), (Some(LanguageCode::Python), "PYTHON")] {
        let client = client(language);
        for binary in [false, true] {
            let resp = client.invoke(&addr, who(binary), timeout).await.unwrap();
            assert_eq!(resp.field("language").unwrap(), expected, "binary={binary}");
            assert_eq!(resp.field("binary").unwrap(), binary.to_string());

            // The blocking path of the same client (its own sockets).
            let (client, addr) = (client.clone(), addr.clone());
            let resp = tokio::task::spawn_blocking(move || {
                let mut conn = client.direct().take(&addr, timeout).unwrap().unwrap();
                conn.invoke(&mut who(binary), timeout, None).unwrap()
            })
            .await
            .unwrap();
            assert_eq!(
                resp.field("language").unwrap(),
                expected,
                "direct binary={binary}"
            );
        }
    }

    // Oneway requests too: the server saw the language it was sent.
    seen.lock().unwrap().clear();
    let python = client(Some(LanguageCode::Python));
    python.invoke_oneway(&addr, who(true)).await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while seen.lock().unwrap().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(*seen.lock().unwrap(), vec![LanguageCode::Python]);
    server.shutdown().await;
}
