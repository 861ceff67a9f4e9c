//! Controllers on real loopback ports: three of them form a group over TCP, brokers (played
//! by remoting clients and servers here) get ids, register, heartbeat and are elected; a
//! master whose connections close is replaced and the group's live brokers are told; the
//! group outlives its leader. Heartbeat ages and the warm-up run on a manual clock.

use std::sync::Arc;
use std::time::Duration;

use rocketpy_controller::server::{ControllerServer, ControllerSettings};
use rocketpy_protocol::clock::Clock;
use rocketpy_protocol::code::controller::request as code;
use rocketpy_protocol::code::controller::response::{
    CONTROLLER_ELECT_MASTER_FAILED, CONTROLLER_NOT_LEADER,
};
use rocketpy_protocol::code::response::SUCCESS;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{
    ClientConfig, Connection, ProcessorTable, RemotingClient, RemotingServer, Reply, ServerConfig,
    TlsConfig,
};
use tokio::sync::mpsc;

mod common;

use common::{free_port, CLUSTER, GROUP, WAIT};

fn settings(peers: &str, id: &str, dir: &std::path::Path) -> ControllerSettings {
    let mut s = ControllerSettings::default();
    for (k, v) in [
        ("controllerDLegerGroup", "group1"),
        ("controllerDLegerPeers", peers),
        ("controllerDLegerSelfId", id),
        ("controllerStorePath", &dir.join(id).display().to_string()),
        ("scanNotActiveBrokerInterval", "50"),
        ("scanInactiveMasterInterval", "50"),
        ("electionWarmUpMillis", "5000"),
    ] {
        assert!(s.set(k, v).unwrap(), "{k}");
    }
    s
}

fn client() -> RemotingClient {
    RemotingClient::new(
        ClientConfig::default(),
        None,
        tokio::runtime::Handle::current(),
    )
}

fn request(code: i32, fields: &[(&str, String)]) -> RemotingCommand {
    let mut r = RemotingCommand::request(code);
    for (k, v) in fields {
        r.set_field(k, v);
    }
    r
}

async fn call(client: &RemotingClient, addr: &str, req: RemotingCommand) -> RemotingCommand {
    client
        .invoke(addr, req, Duration::from_secs(5))
        .await
        .unwrap()
}

/// The leader's address, as any controller reports it, once one leads.
async fn leader(client: &RemotingClient, addrs: &[String]) -> String {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        for a in addrs {
            if let Ok(r) = client
                .invoke(
                    a,
                    request(code::CONTROLLER_GET_METADATA_INFO, &[]),
                    Duration::from_secs(1),
                )
                .await
            {
                if let Some(l) = r.field_opt("controllerLeaderAddress") {
                    return l.to_owned();
                }
            }
        }
        assert!(tokio::time::Instant::now() < deadline, "no leader");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A broker as the controller sees it: its own port (where notifications arrive) and a
/// client whose connections carry its heartbeats.
struct FakeBroker {
    id: i64,
    server: RemotingServer,
    client: RemotingClient,
    notified: mpsc::UnboundedReceiver<RemotingCommand>,
}

impl FakeBroker {
    async fn start(id: i64) -> Self {
        let (tx, notified) = mpsc::unbounded_channel();
        let mut table = ProcessorTable::new();
        table.register(
            code::NOTIFY_BROKER_ROLE_CHANGED,
            Arc::new(move |_: &Arc<Connection>, req: &RemotingCommand| {
                let _ = tx.send(req.clone());
                Ok(Reply::Now(None))
            }),
        );
        let server = RemotingServer::bind("127.0.0.1:0", table, ServerConfig::default())
            .await
            .unwrap();
        FakeBroker {
            id,
            server,
            client: client(),
            notified,
        }
    }

    fn addr(&self) -> String {
        self.server.local_addr().to_string()
    }

    fn fields(&self) -> Vec<(&'static str, String)> {
        vec![
            ("clusterName", CLUSTER.into()),
            ("brokerName", GROUP.into()),
            ("brokerId", self.id.to_string()),
        ]
    }

    async fn heartbeat(&self, controllers: &[String]) {
        let mut f = self.fields();
        f.push(("brokerAddr", self.addr()));
        f.push(("epoch", "0".into()));
        f.push(("maxOffset", (100 * self.id).to_string()));
        f.push(("heartbeatTimeoutMills", "10000".into()));
        for c in controllers {
            let r = call(&self.client, c, request(code::BROKER_HEARTBEAT, &f)).await;
            assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
        }
    }

    /// GET_NEXT_BROKER_ID, APPLY_BROKER_ID, REGISTER_BROKER, as a broker starting for the
    /// first time does.
    async fn join(&self, leader: &str) {
        let base = [
            ("clusterName", CLUSTER.to_string()),
            ("brokerName", GROUP.to_string()),
        ];
        let next = call(
            &self.client,
            leader,
            request(code::CONTROLLER_GET_NEXT_BROKER_ID, &base),
        )
        .await;
        assert_eq!(
            next.field_opt("nextBrokerId"),
            Some(&*self.id.to_string()),
            "{} {:?}",
            next.code,
            next.remark
        );
        let mut apply = base.to_vec();
        apply.push(("appliedBrokerId", self.id.to_string()));
        apply.push(("registerCheckCode", format!("{};1", self.addr())));
        let r = call(
            &self.client,
            leader,
            request(code::CONTROLLER_APPLY_BROKER_ID, &apply),
        )
        .await;
        assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
        let mut reg = self.fields();
        reg.push(("brokerAddress", self.addr()));
        let r = call(
            &self.client,
            leader,
            request(code::CONTROLLER_REGISTER_BROKER, &reg),
        )
        .await;
        assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
    }
}

async fn replica_info(client: &RemotingClient, leader: &str) -> RemotingCommand {
    let r = call(
        client,
        leader,
        request(
            code::CONTROLLER_GET_REPLICA_INFO,
            &[("brokerName", GROUP.into())],
        ),
    )
    .await;
    assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_of_three_replaces_a_master_and_outlives_its_leader() {
    let dir = tempfile::tempdir().unwrap();
    let names = ["n0", "n1", "n2"];
    let ports: Vec<u16> = names.iter().map(|_| free_port()).collect();
    let peers: String = names
        .iter()
        .zip(&ports)
        .map(|(n, p)| format!("{n}-127.0.0.1:{p};"))
        .collect();
    let clock = Clock::manual(1_000_000);
    let mut servers = Vec::new();
    for n in names {
        servers.push(Some(
            ControllerServer::start_with_clock(
                settings(&peers, n, dir.path()),
                TlsConfig::default(),
                clock.clone(),
            )
            .await
            .unwrap(),
        ));
    }
    let addrs: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let admin = client();
    let leader_addr = leader(&admin, &addrs).await;

    // A follower refuses state requests, naming the leader; any controller answers metadata.
    let follower = addrs.iter().find(|a| **a != leader_addr).unwrap();
    let r = call(
        &admin,
        follower,
        request(
            code::CONTROLLER_GET_REPLICA_INFO,
            &[("brokerName", GROUP.into())],
        ),
    )
    .await;
    assert_eq!(r.code, CONTROLLER_NOT_LEADER);
    let meta = call(
        &admin,
        follower,
        request(code::CONTROLLER_GET_METADATA_INFO, &[]),
    )
    .await;
    assert_eq!(meta.field_opt("isLeader"), Some("false"));
    assert_eq!(meta.field_opt("group"), Some("group1"));
    assert_eq!(meta.field_opt("peers"), Some(&*peers.replace('-', ":")));

    // Two brokers join; the first to ask becomes master (the group's first election).
    let mut b1 = FakeBroker::start(1).await;
    let mut b2 = FakeBroker::start(2).await;
    for b in [&b1, &b2] {
        b.join(&leader_addr).await;
        b.heartbeat(&addrs).await;
    }
    let elect = |b: &FakeBroker| request(code::CONTROLLER_ELECT_MASTER, &b.fields());
    let r = call(&b1.client, &leader_addr, elect(&b1)).await;
    assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
    assert_eq!(r.field_opt("masterBrokerId"), Some("1"));
    // The election is pushed to the group's live brokers.
    for b in [&mut b1, &mut b2] {
        let n = tokio::time::timeout(WAIT, b.notified.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(n.field_opt("masterBrokerId"), Some("1"));
        assert_eq!(n.field_opt("masterEpoch"), Some("1"));
    }
    // The master adds its replica to the SyncStateSet.
    let mut alter = request(
        code::CONTROLLER_ALTER_SYNC_STATE_SET,
        &[
            ("brokerName", GROUP.into()),
            ("masterBrokerId", "1".into()),
            ("masterEpoch", "1".into()),
        ],
    );
    alter.body = br#"{"syncStateSet":[1,2],"syncStateSetEpoch":1}"#.to_vec().into();
    let r = call(&b1.client, &leader_addr, alter).await;
    assert_eq!(r.code, SUCCESS, "{:?}", r.remark);
    assert_eq!(r.field_opt("newSyncStateSetEpoch"), Some("2"));

    // During the warm-up, no election may replace a master.
    let mut designate = elect(&b2);
    designate.set_field("designateElect", "true");
    let r = call(&admin, &leader_addr, designate).await;
    assert_eq!(r.code, CONTROLLER_ELECT_MASTER_FAILED, "{:?}", r.remark);
    clock.advance(5_000);
    b2.heartbeat(&addrs).await;

    // The master's connections close (kill -9): the leader elects the in-sync replica and
    // tells it.
    b1.client.shutdown();
    let n = tokio::time::timeout(WAIT, b2.notified.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n.field_opt("masterBrokerId"), Some("2"));
    assert_eq!(n.field_opt("masterEpoch"), Some("2"));
    assert_eq!(n.field_opt("masterAddress"), Some(&*b2.addr()));
    let info = replica_info(&admin, &leader_addr).await;
    assert_eq!(info.field_opt("masterBrokerId"), Some("2"));

    // The leader stops; another takes over with the same state, and b2's heartbeats (sent to
    // every controller) keep it alive there.
    let index = addrs.iter().position(|a| *a == leader_addr).unwrap();
    servers[index].take().unwrap().shutdown().await;
    let rest: Vec<String> = addrs
        .iter()
        .filter(|a| **a != leader_addr)
        .cloned()
        .collect();
    let deadline = tokio::time::Instant::now() + WAIT;
    let new_leader = loop {
        let l = leader(&admin, &rest).await;
        if l != leader_addr {
            break l;
        }
        assert!(tokio::time::Instant::now() < deadline, "no new leader");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let info = replica_info(&admin, &new_leader).await;
    assert_eq!(info.field_opt("masterBrokerId"), Some("2"));
    assert_eq!(info.field_opt("masterEpoch"), Some("2"));

    // A master whose heartbeats stop (paused, partitioned) expires on the clock; with no
    // other in-sync replica alive, the group is left without a master rather than an
    // unclean one.
    clock.advance(10_001);
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let info = replica_info(&admin, &new_leader).await;
        if info.field_opt("masterBrokerId").is_none() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the expired master stayed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for s in servers.into_iter().flatten() {
        s.shutdown().await;
    }
}
