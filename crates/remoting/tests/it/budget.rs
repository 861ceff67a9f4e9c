//! A peer that pipelines requests and reads no answers holds a bounded number of bytes in the
//! server, however large each answer: the connection stops reading its requests once the
//! answers it owes pass the high water mark (or its held requests pass theirs), answers read
//! later reserve room first, and when the peer reads again every answer arrives, in order.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use rocketpy_protocol::{frame, RemotingCommand};
use rocketpy_remoting::connection::ConnectionConfig;
use rocketpy_remoting::{Connection, Marks, Reply, RequestHandler};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const ANSWER: usize = 128 * 1024;
const REQUESTS: usize = 600;
const MARKS: Marks = Marks {
    high: 1 << 20,
    low: 512 << 10,
    held: 32 << 10,
};
/// Most the server may owe: the high mark, one answer queued past it, one reserved.
const BOUND: usize = MARKS.high + 2 * (ANSWER + 1024);

/// Code 1: answered at once; code 2: answered later, reading its answer when there is room.
struct Answers {
    handled: AtomicUsize,
}

fn answer(req: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response_to(req, 0).with_body(vec![7u8; ANSWER])
}

impl RequestHandler for Answers {
    fn handle(&self, conn: &Arc<Connection>, req: RemotingCommand) -> Reply {
        self.handled.fetch_add(1, Ordering::AcqRel);
        if req.code == 1 {
            return Reply::Now(Some(answer(&req)));
        }
        let conn = conn.clone();
        Reply::Later(Box::pin(async move {
            tokio::task::yield_now().await;
            let _room = conn.reserve(ANSWER).await;
            Some(answer(&req))
        }))
    }
}

async fn pipelined_without_reading(code: i32) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (stream, _) = listener.accept().await.unwrap();
    let handler = Arc::new(Answers {
        handled: AtomicUsize::new(0),
    });
    let config = ConnectionConfig {
        marks: MARKS,
        ..ConnectionConfig::default()
    };
    let conn = Connection::spawn(stream, handler.clone(), config).unwrap();

    let mut requests = BytesMut::new();
    let mut opaques = Vec::new();
    for i in 0..REQUESTS {
        let req = RemotingCommand::request(code).with_field("i", i);
        opaques.push(req.opaque);
        frame::encode(&req, &mut requests).unwrap();
    }
    let (mut rd, mut wr) = client.into_split();
    // Small requests: the socket takes them all; the server reads them as it has room.
    let sender = tokio::spawn(async move { wr.write_all(&requests).await.map(|()| wr) });
    // The kernel's socket buffers take a few MiB of answers; past them the answers pile up in
    // the server until it stops reading. Watch the bound hold until nothing moves for 1 s.
    let (mut most, mut stalled, mut handled) = (0, 0, 0);
    while stalled < 100 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        most = most.max(conn.owed_bytes());
        let now = handler.handled.load(Ordering::Acquire);
        stalled = if now == handled { stalled + 1 } else { 0 };
        handled = now;
    }
    assert!(
        most <= BOUND,
        "the server held {most} bytes of answers (bound {BOUND})"
    );
    assert!(
        handled < REQUESTS,
        "it stopped reading ({handled} of {REQUESTS} handled)"
    );

    // The peer reads now: every answer arrives (those answered at once in order).
    let mut buf = BytesMut::new();
    let mut got = Vec::new();
    while got.len() < REQUESTS {
        while let Some(resp) = frame::decode(&mut buf).unwrap() {
            assert_eq!(resp.body.len(), ANSWER);
            got.push(resp.opaque);
        }
        if got.len() == REQUESTS {
            break;
        }
        let n = tokio::time::timeout(Duration::from_secs(20), rd.read_buf(&mut buf))
            .await
            .expect("answers stopped")
            .unwrap();
        assert!(n > 0, "connection closed");
    }
    drop(sender.await.unwrap().unwrap());
    if code != 1 {
        got.sort_unstable();
    }
    assert_eq!(got, opaques);
    conn.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_at_once_are_bounded_in_bytes() {
    pipelined_without_reading(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_read_later_are_bounded_in_bytes() {
    pipelined_without_reading(2).await;
}
