//! A client that opens many calls and sends each a part of a large message, never finishing
//! any: the proxy holds at most its per-connection bound of their bytes, ending the calls
//! past it with RESOURCE_EXHAUSTED instead of buffering them all.

use std::time::Duration;

use bytes::Bytes;
mod common;

const CALLS: usize = 80;
const SENT_PER_CALL: usize = 1 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_messages_are_bounded_per_connection() {
    let proxy = common::loopback_proxy().await;
    let addr = proxy.local_addr();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(connection);
    let mut answers = Vec::new();
    let mut streams = Vec::new();
    for _ in 0..CALLS {
        let mut client = client.clone().ready().await.unwrap();
        let request = http::Request::post(format!(
            "http://{addr}/apache.rocketmq.v2.MessagingService/SendMessage"
        ))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("x-mq-client-id", "inbound-test")
        .body(())
        .unwrap();
        let (answer, mut stream) = client.send_request(request, false).unwrap();
        // A message announced at 15 MiB, of which 1 MiB comes.
        let mut part = vec![0u8; 5 + SENT_PER_CALL];
        part[1..5].copy_from_slice(&(15u32 << 20).to_be_bytes());
        stream.send_data(Bytes::from(part), false).unwrap();
        answers.push(answer);
        streams.push(stream);
    }
    // The calls past the bound are answered at once; the others wait for the rest of their
    // message: give them all the same few seconds, together.
    let mut waiting = tokio::task::JoinSet::new();
    for answer in answers {
        waiting.spawn(async move {
            let resp = tokio::time::timeout(Duration::from_secs(5), answer)
                .await
                .ok()?
                .ok()?;
            Some(resp.headers().get("grpc-status")?.to_str().ok()?.to_owned())
        });
    }
    let mut exhausted = 0;
    while let Some(status) = waiting.join_next().await {
        if let Some(code) = status.unwrap() {
            assert_eq!(code, "8", "ended with RESOURCE_EXHAUSTED");
            exhausted += 1;
        }
    }
    // 80 MiB sent, 64 MiB held at most: at least 16 calls ended.
    assert!(
        exhausted >= 16,
        "only {exhausted} of {CALLS} calls were ended"
    );
    drop(streams);
    proxy.shutdown().await;
}
