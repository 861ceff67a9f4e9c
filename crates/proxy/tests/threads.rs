//! The gRPC server's own threads: connections dealt out among them are all served, and a
//! shutdown ends open connections and closes the listening socket before it returns.

use std::time::Duration;

use bytes::Bytes;
mod common;

/// One empty Heartbeat over a fresh HTTP/2 connection; the call's `grpc-status`, and the
/// connection's task (it ends when the server closes the connection).
async fn heartbeat(
    addr: std::net::SocketAddr,
) -> (String, tokio::task::JoinHandle<Result<(), h2::Error>>) {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.unwrap();
    let connection = tokio::spawn(connection);
    let mut client = client.ready().await.unwrap();
    let request = http::Request::post(format!(
        "http://{addr}/apache.rocketmq.v2.MessagingService/Heartbeat"
    ))
    .header("content-type", "application/grpc")
    .header("te", "trailers")
    .header("x-mq-client-id", "threads-test")
    .body(())
    .unwrap();
    let (answer, mut stream) = client.send_request(request, false).unwrap();
    // An empty HeartbeatRequest: the 5-byte gRPC prefix of a zero-length message.
    stream.send_data(Bytes::from_static(&[0; 5]), true).unwrap();
    let mut body = answer.await.unwrap().into_body();
    while let Some(chunk) = body.data().await {
        chunk.unwrap();
    }
    let trailers = body.trailers().await.unwrap().unwrap();
    let status = trailers["grpc-status"].to_str().unwrap().to_owned();
    (status, connection)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_connection_is_served_and_shutdown_closes_them() {
    let proxy = common::loopback_proxy().await;
    let addr = proxy.local_addr();
    // More connections than threads: each thread gets some, and each answers.
    let mut open = Vec::new();
    for _ in 0..5 {
        let (status, connection) = heartbeat(addr).await;
        assert_eq!(status, "0", "the call was answered");
        open.push(connection);
    }
    tokio::time::timeout(Duration::from_secs(10), proxy.shutdown())
        .await
        .expect("shutdown returns");
    for connection in open {
        let ended = tokio::time::timeout(Duration::from_secs(5), connection).await;
        assert!(
            ended.is_ok(),
            "an open connection was closed by the shutdown"
        );
    }
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "nothing listens after the shutdown"
    );
}
