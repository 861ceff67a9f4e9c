//! A broker's controller client against a real controller on loopback: joining with a
//! persistent id, registering, the first election, heartbeats keeping it alive, the
//! SyncStateSet change, and a restart that keeps its id.

use std::time::Duration;

use rocketpy_broker::controller_mode::client::{Beat, ControllerClient, ControllerError};
use rocketpy_broker::controller_mode::identity::IdentityFile;
use rocketpy_controller::server::{ControllerServer, ControllerSettings};
use rocketpy_protocol::code::controller::response::CONTROLLER_FENCED_MASTER_EPOCH;
use rocketpy_remoting::{ClientConfig, RemotingClient, TlsConfig};

use crate::controller_mode::free_port;

async fn controller(dir: &std::path::Path) -> ControllerServer {
    let mut s = ControllerSettings::default();
    let peers = format!("n0-127.0.0.1:{}", free_port());
    for (k, v) in [
        ("controllerDLegerPeers", peers.as_str()),
        ("controllerDLegerSelfId", "n0"),
        ("controllerStorePath", &dir.display().to_string()),
        ("electionWarmUpMillis", "0"),
    ] {
        s.set(k, v).unwrap();
    }
    ControllerServer::start(s, TlsConfig::default())
        .await
        .unwrap()
}

fn client(controller: &str, broker_addr: &str) -> ControllerClient {
    ControllerClient::new(
        RemotingClient::new(
            ClientConfig::default(),
            None,
            tokio::runtime::Handle::current(),
        ),
        vec![controller.to_owned()],
        "DefaultCluster",
        "broker-a",
        broker_addr,
    )
}

fn beat(id: i64) -> Beat {
    Beat {
        broker_id: id,
        epoch: 0,
        max_offset: 0,
        confirm_offset: 0,
        timeout_ms: 10_000,
        election_priority: i32::MAX,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joins_registers_is_elected_and_keeps_its_id() {
    let dir = tempfile::tempdir().unwrap();
    let server = controller(&dir.path().join("controller")).await;
    let addr = server.local_addr().to_string();
    let a = client(&addr, "127.0.0.1:30911");
    // The single controller leads after its first election.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while a.find_leader().await.is_err() {
        assert!(tokio::time::Instant::now() < deadline, "no leader");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let file_a = IdentityFile::new(&dir.path().join("a").join("brokerIdentity"));
    std::fs::create_dir_all(dir.path().join("a")).unwrap();
    let id_a = a.join(&file_a, 1).await.unwrap();
    assert_eq!(id_a, 1);
    let info = a.register(id_a).await.unwrap();
    assert_eq!(info.master_broker_id, None);
    a.heartbeat(&beat(id_a)).await;
    let info = a.elect(id_a).await.unwrap();
    assert_eq!(info.master_broker_id, Some(1));
    assert_eq!(info.master_epoch, 1);

    let b = client(&addr, "127.0.0.1:30921");
    let file_b = IdentityFile::new(&dir.path().join("b").join("brokerIdentity"));
    std::fs::create_dir_all(dir.path().join("b")).unwrap();
    let id_b = b.join(&file_b, 2).await.unwrap();
    assert_eq!(id_b, 2);
    let info = b.register(id_b).await.unwrap();
    assert_eq!(info.master_address.as_deref(), Some("127.0.0.1:30911"));
    b.heartbeat(&beat(id_b)).await;

    // The master adds b to the set; a stale master epoch is fenced.
    let set = [1, 2].into();
    let stale = a.alter_sync_state_set(1, 0, &set, 1).await.unwrap_err();
    assert!(
        matches!(stale, ControllerError::Refused { code, .. } if code == CONTROLLER_FENCED_MASTER_EPOCH)
    );
    assert_eq!(a.alter_sync_state_set(1, 1, &set, 1).await.unwrap(), 2);
    let info = b.replica_info().await.unwrap();
    assert_eq!(info.sync_state_set, set);

    // A restart reads its id back instead of asking for a new one.
    let again = client(&addr, "127.0.0.1:30921");
    assert_eq!(again.join(&file_b, 3).await.unwrap(), 2);
    server.shutdown().await;
}
