//! Frames sent by several tasks through a socket that fills up (the peer is not reading) arrive
//! whole, and each task's frames arrive in the order it sent them: the direct-write fast path
//! and the writer task's queue must never interleave or reorder.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use rocketpy_protocol::{frame, RemotingCommand};
use rocketpy_remoting::connection::ConnectionConfig;
use rocketpy_remoting::{Connection, Reply, RequestHandler};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};

struct Ignore;

impl RequestHandler for Ignore {
    fn handle(&self, _: &Arc<Connection>, _: RemotingCommand) -> Reply {
        Reply::Now(None)
    }
}

const SENDERS: usize = 3;
const PER_SENDER: usize = 150;

fn body(sender: usize, i: usize) -> Vec<u8> {
    // Sizes from a few bytes to ~300 KiB, so some frames overflow the socket buffers.
    let len = (i * 7919 + sender * 104_729) % 300_000;
    vec![(i % 251) as u8; len]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_stay_whole_and_ordered_through_a_full_socket() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut peer, _) = listener.accept().await.unwrap();
    let conn = Connection::spawn(stream, Arc::new(Ignore), ConnectionConfig::default()).unwrap();

    let mut senders = Vec::new();
    for s in 0..SENDERS {
        let conn = conn.clone();
        senders.push(tokio::spawn(async move {
            for i in 0..PER_SENDER {
                let mut cmd = RemotingCommand::request(1000)
                    .with_field("s", s)
                    .with_field("i", i)
                    .with_body(body(s, i));
                cmd.mark_oneway();
                conn.send(&cmd).await.unwrap();
                if i % 10 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        }));
    }
    // Let the socket fill before reading anything.
    tokio::time::sleep(Duration::from_millis(200)).await;

    let mut buf = BytesMut::new();
    let mut next: HashMap<usize, usize> = HashMap::new();
    let mut seen = 0;
    while seen < SENDERS * PER_SENDER {
        while let Some(cmd) = frame::decode(&mut buf).unwrap() {
            let s: usize = cmd.field("s").unwrap().parse().unwrap();
            let i: usize = cmd.field("i").unwrap().parse().unwrap();
            let want = next.entry(s).or_insert(0);
            assert_eq!(
                i, *want,
                "sender {s}: frame {i} arrived when {want} was due"
            );
            assert_eq!(
                &cmd.body[..],
                &body(s, i)[..],
                "sender {s} frame {i} damaged"
            );
            *want += 1;
            seen += 1;
        }
        if seen == SENDERS * PER_SENDER {
            break;
        }
        let n = tokio::time::timeout(Duration::from_secs(20), peer.read_buf(&mut buf))
            .await
            .expect("frames stopped arriving")
            .unwrap();
        assert!(n > 0, "connection closed early");
    }
    for t in senders {
        t.await.unwrap();
    }
    conn.close();
}
