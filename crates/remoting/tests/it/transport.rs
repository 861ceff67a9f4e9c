use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use rocketpy_protocol::code::response;
use rocketpy_protocol::{RemotingCommand, SerializeType};
use rocketpy_remoting::{
    ClientConfig, ProcessorTable, RemotingClient, RemotingServer, Reply, ServerConfig,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ECHO: i32 = 1000;
const SLOW: i32 = 1001;

async fn server() -> RemotingServer {
    let mut table = ProcessorTable::new();
    table.register(
        ECHO,
        Arc::new(|_: &Arc<_>, req: &RemotingCommand| {
            let mut resp =
                RemotingCommand::response_to(req, response::SUCCESS).with_body(req.body.clone());
            resp.ext_fields = req.ext_fields.clone();
            Ok(Reply::Now(Some(resp)))
        }),
    );
    crate::register_slow(&mut table, SLOW);
    RemotingServer::bind("127.0.0.1:0", table, ServerConfig::default())
        .await
        .unwrap()
}

fn client() -> RemotingClient {
    RemotingClient::new(
        ClientConfig::default(),
        None,
        tokio::runtime::Handle::current(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invoke_matches_responses_in_both_serialisations() {
    let server = server().await;
    let addr = server.local_addr().to_string();
    let client = client();
    let mut tasks = Vec::new();
    for i in 0..200 {
        let client = client.clone();
        let addr = addr.clone();
        tasks.push(tokio::spawn(async move {
            let mut req = RemotingCommand::request(ECHO)
                .with_field("i", i)
                .with_body(format!("body-{i}").into_bytes());
            if i % 2 == 1 {
                req.serialize_type = SerializeType::RocketMq;
            }
            let resp = client
                .invoke(&addr, req, Duration::from_secs(5))
                .await
                .unwrap();
            assert_eq!(resp.field("i").unwrap(), i.to_string());
            assert_eq!(&resp.body[..], format!("body-{i}").as_bytes());
            assert_eq!(resp.serialize_type == SerializeType::RocketMq, i % 2 == 1);
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_unknown_codes_and_async() {
    let server = server().await;
    let addr = server.local_addr().to_string();
    let client = client();

    let err = client
        .invoke(
            &addr,
            RemotingCommand::request(SLOW),
            Duration::from_millis(50),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("timed out"), "{err}");

    let resp = client
        .invoke(
            &addr,
            RemotingCommand::request(4242),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    assert_eq!(resp.code, response::REQUEST_CODE_NOT_SUPPORTED);
    assert!(resp.remark.unwrap().contains("4242"));

    let (tx, rx) = tokio::sync::oneshot::channel();
    client.invoke_async(
        &addr,
        RemotingCommand::request(SLOW),
        Duration::from_secs(5),
        move |r| {
            let _ = tx.send(r.map(|c| c.code));
        },
    );
    assert_eq!(rx.await.unwrap().unwrap(), response::SUCCESS);

    client
        .invoke_oneway(&addr, RemotingCommand::request(ECHO))
        .await
        .unwrap();
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_closes_only_the_offending_connection() {
    let server = server().await;
    let addr = server.local_addr().to_string();
    let mut raw = tokio::net::TcpStream::connect(&addr).await.unwrap();
    raw.write_all(&[0x7f, 0xff, 0xff, 0xff, 1, 2, 3])
        .await
        .unwrap();
    let mut buf = BytesMut::new();
    let n = tokio::time::timeout(Duration::from_secs(5), raw.read_buf(&mut buf))
        .await
        .unwrap()
        .unwrap_or(0);
    assert_eq!(
        n, 0,
        "server should close a connection that sends a bad length"
    );

    let resp = client()
        .invoke(
            &addr,
            RemotingCommand::request(ECHO),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    assert_eq!(resp.code, response::SUCCESS);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_failure_is_an_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    drop(listener);
    let err = client()
        .invoke(
            &addr,
            RemotingCommand::request(ECHO),
            Duration::from_secs(2),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains(&addr), "{err}");
    assert!(client()
        .invoke(
            "nocolon",
            RemotingCommand::request(ECHO),
            Duration::from_secs(1)
        )
        .await
        .is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_cap_and_idle_timeout() {
    let config = ServerConfig {
        max_connections: 2,
        idle_timeout: Some(Duration::from_millis(300)),
        ..ServerConfig::default()
    };
    let server = RemotingServer::bind("127.0.0.1:0", ProcessorTable::new(), config)
        .await
        .unwrap();
    let addr = server.local_addr().to_string();
    let _a = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let _b = tokio::net::TcpStream::connect(&addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(server.connection_count(), 2);
    let mut third = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let mut buf = BytesMut::new();
    let n = tokio::time::timeout(Duration::from_secs(2), third.read_buf(&mut buf))
        .await
        .unwrap()
        .unwrap_or(0);
    assert_eq!(n, 0, "over the cap: closed at once");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(server.connection_count(), 0, "idle connections closed");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_answers_requests_in_flight() {
    let server = server().await;
    let addr = server.local_addr().to_string();
    let client = client();
    let pending = {
        let (client, addr) = (client.clone(), addr.clone());
        tokio::spawn(async move {
            client
                .invoke(
                    &addr,
                    RemotingCommand::request(SLOW),
                    Duration::from_secs(5),
                )
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    server.shutdown_graceful(Duration::from_secs(2)).await;
    let resp = pending
        .await
        .unwrap()
        .expect("answered before the connection closed");
    assert_eq!(resp.code, response::SUCCESS);
    assert!(
        client
            .invoke(
                &addr,
                RemotingCommand::request(ECHO),
                Duration::from_secs(1)
            )
            .await
            .is_err(),
        "no longer listening"
    );
}

/// A client in the server's process hands its requests to the server's processors: the
/// connection they see has the peer address it was given, no socket is used (the address is
/// not one), answers come later too, and the server's shutdown ends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_connections_are_served_like_accepted_ones() {
    const PEER: i32 = 1002;
    let mut table = ProcessorTable::new();
    table.register(
        PEER,
        Arc::new(
            |conn: &Arc<rocketpy_remoting::Connection>, req: &RemotingCommand| {
                let resp = RemotingCommand::response_to(req, response::SUCCESS)
                    .with_remark(conn.peer().to_string())
                    .with_body(req.body.clone());
                Ok(Reply::Now(Some(resp)))
            },
        ),
    );
    crate::register_slow(&mut table, SLOW);
    let server = RemotingServer::bind("127.0.0.1:0", table, ServerConfig::default())
        .await
        .unwrap();
    let me: std::net::SocketAddr = "10.1.2.3:4567".parse().unwrap();
    let addr = "in-process:1";
    let client = RemotingClient::new(
        ClientConfig {
            in_process: Some((addr.to_owned(), server.in_process(), me)),
            ..ClientConfig::default()
        },
        None,
        tokio::runtime::Handle::current(),
    );
    let mut tasks = Vec::new();
    for i in 0..200 {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            let body = vec![i as u8; 64 * 1024 + i]; // larger than one read of the pipe
            let req = RemotingCommand::request(PEER).with_body(body.clone());
            let resp = client
                .invoke(addr, req, Duration::from_secs(5))
                .await
                .unwrap();
            assert_eq!(resp.remark.as_deref(), Some("10.1.2.3:4567"));
            assert_eq!(resp.body.as_ref(), body.as_slice());
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(server.connection_count(), 1, "one pipe, shared");
    let slow = client.invoke(addr, RemotingCommand::request(SLOW), Duration::from_secs(5));
    let (answer, ()) = tokio::join!(slow, server.shutdown_graceful(Duration::from_secs(2)));
    assert_eq!(
        answer.unwrap().code,
        response::SUCCESS,
        "answered before closing"
    );
    let after = client
        .invoke(addr, RemotingCommand::request(PEER), Duration::from_secs(1))
        .await;
    assert!(after.is_err(), "a stopped server takes no new pipes");
}
