"""ACL with clients this project did not write: the C++ client (``set_session_credentials``)
and rocketmq-client-rust (``AclClientRPCHook``) sign their requests their own way (the C++
client adds its ``OnsChannel`` field); a broker with ``aclEnable=true`` lets them send and
consume with the right secret key and refuses them with a wrong one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from peerlib import Cluster, Peer, start_peer
from rocketpy import SessionCredentials
from rocketpy.admin import Admin

ACL = """
accounts:
  - accessKey: admin-account
    secretKey: admin-secret
    admin: true
  - accessKey: app-account
    secretKey: app-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: ["PeerAcl-cpp=PUB|SUB", "PeerAcl-rust=PUB|SUB"]
    groupPerms: ["peer-acl-cpp=SUB", "peer-acl-rust=SUB"]
"""
ADMIN = SessionCredentials("admin-account", "admin-secret")


@pytest.fixture(scope="module")
def acl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    home = tmp_path_factory.mktemp("peer-acl")
    (home / "plain_acl.yml").write_text(ACL)
    c = Cluster(
        home / "store",
        "--set", "aclEnable=true", "--set", f"aclFile={home / 'plain_acl.yml'}",
    )  # fmt: skip
    with Admin(c.namesrv, credentials=ADMIN) as admin:
        for client in ("cpp", "rust"):
            admin.create_topic(f"PeerAcl-{client}", queues=2, broker_addrs=[c.broker])
    yield c
    c.stop()


@pytest.mark.features("ACL: signed requests accepted, wrong secret refused")
@pytest.mark.parametrize("client", ["cpp", "rust"])
def test_signed_clients_send_and_consume_and_a_wrong_secret_is_refused(
    client: str, acl_cluster: Cluster, peers: list[Peer], tmp_path: Path
):
    creds = dict(access_key="app-account", secret_key="app-secret")
    c = start_peer(
        client, peers, tmp_path, action="consume", namesrv=acl_cluster.namesrv,
        group=f"peer-acl-{client}", topic=f"PeerAcl-{client}", from_where="first", timeout=120, **creds,
    )  # fmt: skip
    assert c.wait_for("ready")
    p = start_peer(
        client, peers, tmp_path, action="produce", namesrv=acl_cluster.namesrv,
        topic=f"PeerAcl-{client}", count=5, prefix=client, mode="sync", **creds,
    )  # fmt: skip
    sent = [e for e in p.finish() if e["event"] == "sent"]
    assert len(sent) == 5
    received = c.wait_for("received", 5, timeout=90)
    c.finish()
    assert sorted(e["body"] for e in received) == sorted(f"{client}-{i}" for i in range(5))

    wrong = start_peer(
        client, peers, tmp_path, action="produce", namesrv=acl_cluster.namesrv,
        topic=f"PeerAcl-{client}", count=1, prefix=f"{client}-wrong", mode="sync",
        access_key="app-account", secret_key="not-the-secret",
    )  # fmt: skip
    wrong.proc.wait(120)
    events = wrong.events
    assert not [e for e in events if e["event"] == "sent" and e.get("status") == "SEND_OK"]
    assert [e for e in events if e["event"] == "error"], events
