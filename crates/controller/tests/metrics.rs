//! A controller's Prometheus endpoint (`metricsExporterType=PROM`): one controller leads a
//! group of one, a broker (played by a remoting client) gets its id, registers, heartbeats
//! and is elected, and a plain HTTP GET of `/metrics` shows RocketMQ's controller metrics
//! (`role`, `active_broker_num`, `request_total`, `request_latency_microseconds`,
//! `election_total`) and rocketpy's figures of the group's state.

use std::time::Duration;

use rocketpy_controller::server::{ControllerServer, ControllerSettings};
use rocketpy_protocol::code::controller::request as code;
use rocketpy_protocol::code::response::SUCCESS;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{
    ClientConfig, ProcessorTable, RemotingClient, RemotingServer, ServerConfig, TlsConfig,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod common;

use common::{free_port, CLUSTER, GROUP, WAIT};

fn request(code: i32, fields: &[(&str, String)]) -> RemotingCommand {
    let mut r = RemotingCommand::request(code);
    for (k, v) in fields {
        r.set_field(k, v);
    }
    r
}

async fn call(client: &RemotingClient, addr: &str, req: RemotingCommand) -> RemotingCommand {
    let r = client
        .invoke(addr, req, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
    r
}

/// `GET /metrics` over a plain TCP connection: the body.
async fn scrape(addr: std::net::SocketAddr) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("application/openmetrics-text"), "{head}");
    body.to_owned()
}

/// The value of the one sample `name` whose labels include `labels`.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let found: Vec<f64> = text
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix(name)?.strip_prefix('{')?;
            let (set, value) = rest.rsplit_once("} ")?;
            labels
                .iter()
                .all(|(k, v)| set.split(',').any(|kv| kv == format!("{k}=\"{v}\"")))
                .then(|| value.parse().unwrap())
        })
        .collect();
    assert!(found.len() <= 1, "{name} {labels:?} matches {found:?}");
    found.first().copied()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_shows_role_brokers_requests_elections_and_the_group_state() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut settings = ControllerSettings::default();
    for (k, v) in [
        ("controllerDLegerGroup", "group1"),
        ("controllerDLegerPeers", &format!("n0-127.0.0.1:{port}")),
        ("controllerDLegerSelfId", "n0"),
        ("controllerStorePath", &dir.path().display().to_string()),
        ("metricsExporterType", "PROM"),
        ("metricsPromExporterPort", "0"),
    ] {
        assert!(settings.set(k, v).unwrap(), "{k}");
    }
    let server = ControllerServer::start(settings, TlsConfig::default())
        .await
        .unwrap();
    let metrics = server.metrics_addr().expect("metrics endpoint");
    assert_eq!(metrics.ip(), server.local_addr().ip());
    let addr = server.local_addr().to_string();
    let deadline = tokio::time::Instant::now() + WAIT;
    while !server.controller().is_leader() {
        assert!(tokio::time::Instant::now() < deadline, "no leader");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A broker joins, heartbeats and asks to be elected.
    let notified = RemotingServer::bind(
        "127.0.0.1:0",
        ProcessorTable::new(),
        ServerConfig::default(),
    )
    .await
    .unwrap();
    let broker_addr = notified.local_addr().to_string();
    let client = RemotingClient::new(
        ClientConfig::default(),
        None,
        tokio::runtime::Handle::current(),
    );
    let base = vec![
        ("clusterName", CLUSTER.to_string()),
        ("brokerName", GROUP.to_string()),
    ];
    let mut apply = base.clone();
    apply.push(("appliedBrokerId", "1".into()));
    apply.push(("registerCheckCode", format!("{broker_addr};1")));
    call(
        &client,
        &addr,
        request(code::CONTROLLER_APPLY_BROKER_ID, &apply),
    )
    .await;
    let mut me = base.clone();
    me.push(("brokerId", "1".into()));
    let mut reg = me.clone();
    reg.push(("brokerAddress", broker_addr.clone()));
    call(
        &client,
        &addr,
        request(code::CONTROLLER_REGISTER_BROKER, &reg),
    )
    .await;
    let mut beat = me.clone();
    beat.push(("brokerAddr", broker_addr.clone()));
    beat.push(("epoch", "0".into()));
    beat.push(("maxOffset", "0".into()));
    beat.push(("heartbeatTimeoutMills", "60000".into()));
    call(&client, &addr, request(code::BROKER_HEARTBEAT, &beat)).await;
    let r = call(&client, &addr, request(code::CONTROLLER_ELECT_MASTER, &me)).await;
    assert_eq!(r.field_opt("masterBrokerId"), Some("1"));

    let text = scrape(metrics).await;
    eprintln!("{text}");
    let node = [
        ("node_type", "controller"),
        ("node_id", "n0"),
        ("group", "group1"),
    ];
    let group = [("cluster", CLUSTER), ("broker_set", GROUP)];
    assert_eq!(sample(&text, "role", &node), Some(1.0), "{text}");
    assert_eq!(
        sample(&text, "active_broker_num", &group),
        Some(1.0),
        "{text}"
    );
    let elect = [
        ("request_type", "CONTROLLER_ELECT_MASTER"),
        ("request_handle_status", "success"),
    ];
    assert!(
        sample(&text, "request_total", &elect).unwrap() >= 1.0,
        "{text}"
    );
    let heartbeats = [
        ("request_type", "CONTROLLER_BROKER_HEARTBEAT"),
        ("request_handle_status", "success"),
    ];
    assert_eq!(sample(&text, "request_total", &heartbeats), Some(1.0));
    assert!(
        sample(
            &text,
            "request_latency_microseconds_count",
            &[("request_type", "CONTROLLER_ELECT_MASTER")]
        )
        .unwrap()
            >= 1.0,
        "{text}"
    );
    let elected = [
        ("cluster", CLUSTER),
        ("broker_set", GROUP),
        ("election_result", "new_master_elected"),
    ];
    assert_eq!(
        sample(&text, "election_total", &elected),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "rocketmq_controller_master_epoch", &group),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "rocketmq_controller_sync_state_set_epoch", &group),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "rocketmq_controller_sync_state_set_size", &group),
        Some(1.0),
        "{text}"
    );
    assert!(text.trim_end().ends_with("# EOF"), "{text}");

    // Shut down, the endpoint stops answering.
    server.shutdown().await;
    let deadline = tokio::time::Instant::now() + WAIT;
    while tokio::net::TcpStream::connect(metrics).await.is_ok() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "metrics still served"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    client.shutdown();
    notified.shutdown().await;
}
