"""``TransactionProducer`` against a real broker: commit makes a message visible once,
rollback never, a local transaction that raises or answers UNKNOW is decided by the broker's
check, a producer process killed after its half message is answered for by another
producer of the same group, a broker killed and restarted between prepare and commit still
delivers the message once, and the asyncio producer takes coroutine listeners."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from servers import ServerProcess, dev

from helpers import Collector, fast_config, start_consumer, wait_until
from rocketpy import (
    ConsumeFromWhere,
    LocalTransactionState,
    Message,
    MessageExt,
    SendStatus,
    TransactionProducer,
)

COMMIT = LocalTransactionState.COMMIT_MESSAGE
ROLLBACK = LocalTransactionState.ROLLBACK_MESSAGE
UNKNOW = LocalTransactionState.UNKNOW


@pytest.fixture(scope="module")
def tx_dev(tmp_path_factory: pytest.TempPathFactory):
    """A ``rocketpy dev`` that checks open transactions every 200 ms after 500 ms."""
    store = tmp_path_factory.mktemp("tx") / "store"
    server = dev(
        store, settings={"transactionCheckInterval": "200", "transactionTimeOut": "500"}
    ).start()
    yield server
    assert server.stop() == 0, server.text()


class Ledger:
    """A local 'database': outcomes by key, decided by the test."""

    def __init__(self, decide: dict[str, Any]) -> None:
        self.decide = decide
        self.checked: list[str] = []
        self.check_threads: set[str] = set()
        self.lock = threading.Lock()

    def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        outcome = self.decide[arg]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        with self.lock:
            self.checked.append(msg.keys or "")
            self.check_threads.add(threading.current_thread().name)
        return COMMIT if msg.keys in ("raised", "unknown", "orphan") else ROLLBACK


def collect(namesrv: str, topic: str) -> Collector:
    got = Collector()
    consumer = start_consumer(
        f"c-{uuid.uuid4().hex[:6]}", "", topic, got,
        from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        client_config=fast_config(namesrv),
    )  # fmt: skip
    got.consumer = consumer  # type: ignore[attr-defined]
    return got


def test_outcomes_commit_once_roll_back_or_are_checked(tx_dev: ServerProcess):
    topic = f"Tx{uuid.uuid4().hex[:6]}"
    ledger = Ledger(
        {"commit": COMMIT, "rollback": ROLLBACK, "raised": RuntimeError("db down"),
         "unknown": UNKNOW}
    )  # fmt: skip
    config = fast_config(tx_dev.namesrv)
    with TransactionProducer("tx-p", listener=ledger, client_config=config) as producer:
        results = {
            key: producer.send_message_in_transaction(Message(topic, key, keys=key), key)
            for key in ("commit", "rollback", "raised", "unknown")
        }
        assert all(r.status == SendStatus.SEND_OK for r in results.values())
        assert results["commit"].local_transaction_state == COMMIT
        assert results["raised"].local_transaction_state == UNKNOW
        assert results["commit"].transaction_id == results["commit"].msg_id
        got = collect(tx_dev.namesrv, topic)
        try:
            # The check decides the two open ones: both commit.
            assert wait_until(lambda: set(ledger.checked) == {"raised", "unknown"}, 30)
            msgs = got.wait_for(3, 30)
            assert wait_until(lambda: len(got.messages) >= 3, 2) and not wait_until(
                lambda: len(got.messages) > 3, 2
            ), [m.body for m in got.messages]
        finally:
            got.consumer.shutdown()  # type: ignore[attr-defined]
    assert sorted(m.body for m in msgs) == [b"commit", b"raised", b"unknown"]
    by_body = {m.body: m for m in msgs}
    assert by_body[b"commit"].msg_id == results["commit"].msg_id, "the id the producer saw"
    assert by_body[b"commit"].get_property("TRAN_MSG") is None
    assert ledger.check_threads and all(
        t.startswith("rocketpy-tx-check") for t in ledger.check_threads
    )


def test_a_killed_producer_is_answered_for_by_another_of_its_group(
    tx_dev: ServerProcess, tmp_path: Path
):
    topic = f"TxKill{uuid.uuid4().hex[:6]}"
    script = textwrap.dedent(
        f"""
        import os
        from rocketpy import LocalTransactionState, Message, TransactionProducer

        class Hang:
            def execute_local_transaction(self, msg, arg):
                print("prepared", flush=True)
                os._exit(9)  # dies inside its local transaction

            def check_local_transaction(self, msg):
                return LocalTransactionState.UNKNOW

        p = TransactionProducer("tx-kill", {tx_dev.namesrv!r}, Hang(), instance_name="dying")
        p.start()
        p.send_message_in_transaction(Message({topic!r}, b"orphan", keys="orphan"))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 9 and "prepared" in out.stdout, out.stderr
    ledger = Ledger({})
    config = fast_config(tx_dev.namesrv)
    got = collect(tx_dev.namesrv, topic)
    try:
        with TransactionProducer("tx-kill", listener=ledger, client_config=config):
            assert wait_until(lambda: "orphan" in ledger.checked, 30), ledger.checked
            [msg] = got.wait_for(1, 30)
            assert msg.body == b"orphan"
    finally:
        got.consumer.shutdown()  # type: ignore[attr-defined]


def test_asyncio_producer_with_coroutine_listener(tx_dev: ServerProcess):
    import asyncio

    from rocketpy.aio import AsyncTransactionProducer

    topic = f"TxAio{uuid.uuid4().hex[:6]}"
    checked: list[str] = []

    class Orders:
        async def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
            await asyncio.sleep(0)
            return COMMIT if arg == "now" else UNKNOW

        async def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
            checked.append(msg.keys or "")
            return COMMIT

    async def main() -> list:
        config = fast_config(tx_dev.namesrv)
        async with AsyncTransactionProducer("tx-aio", listener=Orders(), client_config=config) as p:
            now = await p.send_message_in_transaction(Message(topic, b"a", keys="now"), "now")
            later = await p.send_message_in_transaction(Message(topic, b"b", keys="later"), "x")
            for _ in range(300):  # the check runs on this loop
                if checked:
                    break
                await asyncio.sleep(0.1)
            return [now, later]

    now, later = asyncio.run(main())
    assert now.local_transaction_state == COMMIT and later.local_transaction_state == UNKNOW
    assert "later" in checked
    got = collect(tx_dev.namesrv, topic)
    try:
        assert sorted(m.body for m in got.wait_for(2, 30)) == [b"a", b"b"]
    finally:
        got.consumer.shutdown()  # type: ignore[attr-defined]


def test_a_broker_restarted_between_prepare_and_commit(tmp_path: Path):
    from servers import broker, free_port, namesrv

    ns_port, port = free_port(), free_port()
    ns = namesrv(ns_port).start()
    settings = {"transactionCheckInterval": "200", "transactionTimeOut": "500"}
    b = broker(f"127.0.0.1:{ns_port}", port, tmp_path / "store", settings).start()
    topic = "TxRestart"

    class RestartsTheBroker(Ledger):
        def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
            b.kill()  # the broker dies holding the half message
            b.start()
            return COMMIT  # this END_TRANSACTION may be lost: the check decides then

    ledger = RestartsTheBroker({})
    try:
        config = fast_config(f"127.0.0.1:{ns_port}")
        with TransactionProducer("tx-restart", listener=ledger, client_config=config) as p:
            result = p.send_message_in_transaction(Message(topic, b"survives", keys="raised"))
            assert result.status == SendStatus.SEND_OK
            got = collect(f"127.0.0.1:{ns_port}", topic)
            try:
                [msg] = got.wait_for(1, 60)
                assert msg.body == b"survives"
                assert not wait_until(lambda: len(got.messages) > 1, 3), "once"
            finally:
                got.consumer.shutdown()  # type: ignore[attr-defined]
    finally:
        b.stop()
        ns.stop()
