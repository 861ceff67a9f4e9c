//! Direct connections: blocking requests from a plain thread against a real server.

use std::sync::Arc;
use std::time::Duration;

use rocketpy_protocol::code::response;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{
    DirectPool, ProcessorTable, RemotingError, RemotingServer, Reply, ServerConfig,
};
use tokio::runtime::Runtime;

/// Answers with the id of the server-side connection it arrived on.
const WHO: i32 = 1100;
/// Answers after 300 ms.
const SLOW: i32 = 1101;

fn server(rt: &Runtime, idle_timeout: Option<Duration>) -> RemotingServer {
    let mut table = ProcessorTable::new();
    table.register(
        WHO,
        Arc::new(|conn: &Arc<_>, req: &RemotingCommand| {
            let conn: &Arc<rocketpy_remoting::Connection> = conn;
            Ok(Reply::Now(Some(
                RemotingCommand::response_to(req, response::SUCCESS)
                    .with_field("conn", conn.id())
                    .with_body(req.body.clone()),
            )))
        }),
    );
    crate::register_slow(&mut table, SLOW);
    let config = ServerConfig {
        idle_timeout,
        ..ServerConfig::default()
    };
    rt.block_on(RemotingServer::bind("127.0.0.1:0", table, config))
        .unwrap()
}

/// The server connection a WHO request went through.
fn who(pool: &DirectPool, addr: &str) -> String {
    let mut conn = pool.take(addr, Duration::from_secs(3)).unwrap().unwrap();
    let resp = conn
        .invoke(
            &mut RemotingCommand::request(WHO).with_body(b"ping".to_vec()),
            Duration::from_secs(3),
            None,
        )
        .unwrap();
    assert_eq!(&resp.body[..], b"ping");
    resp.field("conn").unwrap().to_owned()
}

#[test]
fn answered_requests_reuse_one_connection() {
    let rt = Runtime::new().unwrap();
    let server = server(&rt, None);
    let addr = server.local_addr().to_string();
    let pool = DirectPool::new(Duration::from_secs(3), 4, None);
    let first = who(&pool, &addr);
    assert_eq!(pool.idle(&addr), 1);
    for _ in 0..50 {
        assert_eq!(who(&pool, &addr), first);
    }
    rt.block_on(server.shutdown());
}

#[test]
fn no_more_than_the_limit_per_address() {
    let rt = Runtime::new().unwrap();
    let server = server(&rt, None);
    let addr = server.local_addr().to_string();
    let pool = DirectPool::new(Duration::from_secs(3), 2, None);
    let timeout = Duration::from_secs(3);
    let a = pool.take(&addr, timeout).unwrap().unwrap();
    let b = pool.take(&addr, timeout).unwrap().unwrap();
    assert!(pool.take(&addr, timeout).unwrap().is_none(), "a third one");
    drop(a);
    let c = pool.take(&addr, timeout).unwrap();
    assert!(c.is_some(), "the one given back is taken again");
    drop((b, c));
    assert_eq!(pool.idle(&addr), 2);
    assert!(DirectPool::new(timeout, 0, None)
        .take(&addr, timeout)
        .unwrap()
        .is_none());
    rt.block_on(server.shutdown());
}

#[test]
fn a_connection_the_server_closed_is_not_reused() {
    let rt = Runtime::new().unwrap();
    let server = server(&rt, Some(Duration::from_millis(200)));
    let addr = server.local_addr().to_string();
    let pool = DirectPool::new(Duration::from_secs(3), 4, None);
    let first = who(&pool, &addr);
    // The server closes the idle connection; the pool must notice before writing to it.
    std::thread::sleep(Duration::from_millis(700));
    let second = who(&pool, &addr);
    assert_ne!(first, second);
    assert_eq!(pool.idle(&addr), 1);
    rt.block_on(server.shutdown());
}

#[test]
fn a_timed_out_request_closes_its_connection() {
    let rt = Runtime::new().unwrap();
    let server = server(&rt, None);
    let addr = server.local_addr().to_string();
    let pool = DirectPool::new(Duration::from_secs(3), 4, None);
    let before = who(&pool, &addr);
    let mut conn = pool.take(&addr, Duration::from_secs(3)).unwrap().unwrap();
    let err = conn
        .invoke(
            &mut RemotingCommand::request(SLOW),
            Duration::from_millis(50),
            None,
        )
        .unwrap_err();
    assert!(matches!(err, RemotingError::Timeout { .. }), "{err}");
    drop(conn);
    assert_eq!(pool.idle(&addr), 0);
    // The late answer of SLOW can never be read as the next request's.
    std::thread::sleep(Duration::from_millis(400));
    assert_ne!(who(&pool, &addr), before);
    rt.block_on(server.shutdown());
}

#[test]
fn a_poll_can_abandon_the_wait() {
    let rt = Runtime::new().unwrap();
    let server = server(&rt, None);
    let addr = server.local_addr().to_string();
    let pool = DirectPool::new(Duration::from_secs(3), 4, None);
    let mut conn = pool.take(&addr, Duration::from_secs(3)).unwrap().unwrap();
    let mut polls = 0;
    let mut check = || {
        polls += 1;
        polls < 3
    };
    let err = conn
        .invoke(
            &mut RemotingCommand::request(SLOW),
            Duration::from_secs(5),
            Some((Duration::from_millis(10), &mut check)),
        )
        .unwrap_err();
    assert!(matches!(err, RemotingError::Interrupted(_)), "{err}");
    assert_eq!(polls, 3);
    drop(conn);
    assert_eq!(pool.idle(&addr), 0);
    rt.block_on(server.shutdown());
}

#[test]
fn closing_drops_connections_in_use_when_they_come_back() {
    let rt = Runtime::new().unwrap();
    let server = server(&rt, None);
    let addr = server.local_addr().to_string();
    let pool = DirectPool::new(Duration::from_secs(3), 4, None);
    let before = who(&pool, &addr);
    let conn = pool.take(&addr, Duration::from_secs(3)).unwrap().unwrap();
    pool.clear();
    drop(conn);
    assert_eq!(pool.idle(&addr), 0);
    assert_ne!(who(&pool, &addr), before);
    pool.close(&addr);
    assert_eq!(pool.idle(&addr), 0);
    rt.block_on(server.shutdown());
}

#[test]
fn connect_failure_is_an_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    drop(listener);
    let pool = DirectPool::new(Duration::from_secs(1), 4, None);
    let err = pool.take(&addr, Duration::from_secs(1)).err().unwrap();
    assert!(matches!(err, RemotingError::Connect { .. }), "{err}");
    // The failed attempt does not count against the limit.
    let pool = DirectPool::new(Duration::from_secs(1), 1, None);
    assert!(pool.take(&addr, Duration::from_secs(1)).is_err());
    assert!(pool.take(&addr, Duration::from_secs(1)).is_err());
}
