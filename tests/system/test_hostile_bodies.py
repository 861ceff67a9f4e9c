"""Bodies built to exhaust a parser, sent unauthenticated to a real broker and name server
(ACL off and on): fastjson object keys nested in object keys (once 162 bytes took a broker
past 1 GB, doubling per level), deep nesting, unclosed objects in key places (once a quadratic
search), and wide arrays. Each is refused; the server's peak memory (VmHWM) stays near where
it was, and it serves the next client."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from rmq_wire import Wire
from servers import ServerProcess, acl_settings, broker, free_port, namesrv

HEART_BEAT, LOCK_BATCH_MQ, UNLOCK_BATCH_MQ = 34, 41, 42
REGISTER_BROKER, QUERY_DATA_VERSION, GET_ROUTEINFO_BY_TOPIC = 103, 322, 105
BATCH_ACK_MESSAGE, GET_MAX_OFFSET = 200151, 30
SUCCESS, TOPIC_NOT_EXIST = 0, 17

#: More peak memory than this after the attack is a finding (the servers start near 30-60 MB).
MAX_GROWTH_KB = 200 * 1024

ACL = """
accounts:
  - accessKey: admin-account
    secretKey: admin-secret
    admin: true
"""


def nested_keys(levels: int) -> bytes:
    """``{{{…{}:1}…:1}:1}``: each level an object key holding the next."""
    return b"{" * levels + b"{}" + b":1}" * levels


def bodies() -> dict[str, bytes]:
    return {
        "nested object keys": nested_keys(40),
        "nested object keys in a field": b'{"consumerGroup":"g","mqSet":' + nested_keys(40) + b"}",
        "deep arrays": b"[" * 200_000 + b"]" * 200_000,
        "unclosed objects in key places": b"{" * (4 << 20),
        "key-place objects after commas": b'{"a":1' + b",{" * (2 << 20),
        "wide array": b"[" + b"0," * (6 << 20) + b"0]",
        "wide object": b"{" + b",".join(b'"%d":0' % i for i in range(1_200_000)) + b"}",
    }


def peak_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


@pytest.fixture(scope="module", params=["acl-off", "acl-on"])
def servers(
    request, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, ServerProcess]]:
    home = tmp_path_factory.mktemp(request.param)
    ns_settings: dict[str, str] = {}
    broker_settings: dict[str, str] = {}
    if request.param == "acl-on":
        (home / "plain_acl.yml").write_text(ACL)
        ns_settings = acl_settings(home / "plain_acl.yml")
        # The broker registers as the admin account when the name server checks signatures.
        broker_settings = acl_settings(
            home / "plain_acl.yml", signer=("admin-account", "admin-secret")
        )
    ns_port = free_port()
    ns = namesrv(ns_port, ns_settings).start()
    br = broker(f"127.0.0.1:{ns_port}", free_port(), home / "store", broker_settings)
    br.start()
    yield {"namesrv": ns, "broker": br}
    br.stop()
    ns.stop()


def send_hostile(address: str, code: int, body: bytes) -> None:
    """Sends one request and waits for its answer or the connection's end (a wide object is
    valid JSON, and a registration reads no field from it: it may be answered SUCCESS)."""
    with Wire(address, timeout=60) as w, contextlib.suppress(ConnectionError, OSError):
        w.call(code, {"brokerAddr": "127.0.0.1:1", "brokerName": "b", "clusterName": "c",
                      "brokerId": "0"}, body)  # fmt: skip


def served(proc: ServerProcess, is_broker: bool) -> None:
    with Wire(proc.address, timeout=30) as w:
        if is_broker:
            resp = w.call(GET_MAX_OFFSET, {"topic": "TBW102", "queueId": "0"})
        else:
            resp = w.call(GET_ROUTEINFO_BY_TOPIC, {"topic": "NoSuchTopic"})
        # Answered at all is what matters; with ACL on, unsigned requests get 16.
        assert resp.code in (SUCCESS, TOPIC_NOT_EXIST, 16), resp.remark


@pytest.mark.parametrize(
    ("server", "code"),
    [
        ("broker", HEART_BEAT),
        ("broker", LOCK_BATCH_MQ),
        ("broker", UNLOCK_BATCH_MQ),
        ("broker", BATCH_ACK_MESSAGE),
        ("namesrv", QUERY_DATA_VERSION),
        ("namesrv", REGISTER_BROKER),
    ],
)
def test_hostile_bodies_cost_bounded_memory(servers, server: str, code: int):
    proc = servers[server]
    before = peak_kb(proc.pid)
    for name, body in bodies().items():
        send_hostile(proc.address, code, body)
        served(proc, server == "broker")
        grown = peak_kb(proc.pid) - before
        assert grown < MAX_GROWTH_KB, f"{name} to code {code}: peak memory grew {grown} KiB"
    assert proc.running, proc.text()
