"""ACL with clients this project did not write: the C++ client (``set_session_credentials``)
and rocketmq-client-rust (``AclClientRPCHook``) sign their requests their own way (the C++
client adds its ``OnsChannel`` field); a broker with ``aclEnable=true`` lets them send and
consume with the right secret key and refuses them with a wrong one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from servers import Cluster, acl_settings

from peerlib import Peer, compat_cluster, py5, start_peer
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
    topicPerms: ["PeerAcl-cpp=PUB|SUB", "PeerAcl-rust=PUB|SUB", "PeerAcl-py5=PUB|SUB"]
    groupPerms: ["peer-acl-cpp=SUB", "peer-acl-rust=SUB", "peer-acl-py5=SUB"]
"""
ADMIN = SessionCredentials("admin-account", "admin-secret")


def cluster_with_acl(home: Path, topics: list[str], grpc: bool = False) -> Cluster:
    """A cluster whose broker checks plain_acl.yml (above), with ``topics`` created."""
    (home / "plain_acl.yml").write_text(ACL)
    c = compat_cluster(home / "store", acl_settings(home / "plain_acl.yml"), grpc=grpc)
    with Admin(c.namesrv, credentials=ADMIN) as admin:
        for topic in topics:
            admin.create_topic(topic, queues=2, broker_addrs=[c.broker])
    return c


@pytest.fixture(scope="module")
def acl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = cluster_with_acl(tmp_path_factory.mktemp("peer-acl"), ["PeerAcl-cpp", "PeerAcl-rust"])
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


@pytest.fixture(scope="module")
def acl_cluster5(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    home = tmp_path_factory.mktemp("peer-acl5")
    c = cluster_with_acl(home, ["PeerAcl-py5", "PeerAcl-adminonly"], grpc=True)
    yield c
    c.stop()


@pytest.mark.features("ACL: signed requests accepted, wrong secret refused", clients=["py5"])
def test_5x_clients_are_decided_by_their_own_account(
    acl_cluster5: Cluster, peers: list[Peer], tmp_path: Path
):
    """The gRPC endpoint checks each 5.x call's ``authorization`` against plain_acl.yml: the
    right account sends and receives; a wrong secret, no credentials, or a topic the account
    has no right on are refused (the proxy's own account does not stand in for the client)."""
    app = dict(access_key="app-account", secret_key="app-secret")
    spec = dict(endpoint=acl_cluster5.grpc, topic="PeerAcl-py5")
    p = py5(peers, tmp_path, action="produce", count=3, prefix="acl5", **spec, **app)
    assert len([e for e in p.finish() if e["event"] == "sent"]) == 3
    c = py5(
        peers, tmp_path, action="simple_consume", group="peer-acl-py5", count=3, timeout=60,
        **spec, **app,
    )  # fmt: skip
    got = [e["body"] for e in c.finish() if e["event"] == "received"]
    assert sorted(got) == ["acl5-0", "acl5-1", "acl5-2"]

    refused = {
        "wrong secret": dict(**spec, access_key="app-account", secret_key="not-the-secret"),
        "no credentials": dict(**spec),
        "no right on the topic": dict(endpoint=acl_cluster5.grpc, topic="PeerAcl-adminonly", **app),
    }
    for what, s in refused.items():
        route = py5(peers, tmp_path, action="stub_query_route", **s).finish()
        answered = [e for e in route if e["event"] == "answered"]
        assert answered and answered[0]["grpc"] == "PERMISSION_DENIED", (what, route)
        wrong = py5(peers, tmp_path, action="produce", count=1, prefix="nope", **s)
        wrong.proc.wait(120)
        events = wrong.events
        assert not [e for e in events if e["event"] == "sent"], (what, events)
        assert [e for e in events if e["event"] == "error"], (what, events)
    ok = py5(peers, tmp_path, action="stub_query_route", **spec, **app).finish()
    assert [e["grpc"] for e in ok if e["event"] == "answered"] == ["OK"], ok
    reader = py5(
        peers, tmp_path, action="simple_consume", group="peer-acl-py5",
        endpoint=acl_cluster5.grpc, topic="PeerAcl-adminonly", count=1, timeout=30, **app,
    )  # fmt: skip
    reader.proc.wait(120)
    assert not [e for e in reader.events if e["event"] == "received"]
    assert [e for e in reader.events if e["event"] == "error"], reader.events
    with Admin(acl_cluster5.namesrv, credentials=ADMIN) as admin:
        for topic, stored in (("PeerAcl-adminonly", 0), ("PeerAcl-py5", 3)):
            stats = admin.topic_stats(topic)
            assert sum(o.max_offset for o in stats.values()) == stored, topic
