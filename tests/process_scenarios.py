"""Client programs for tests/system/test_client_process.py, run as ``python process_scenarios.py
SCENARIO NAMESRV [ARG]``: each is a whole process, so what it tests is how that process
behaves at exit, on Ctrl-C and across fork()."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import random
import signal
import sys
import threading
import time

from rocketpy import (
    ConsumeFromWhere,
    ConsumeStatus,
    ForkedProcessError,
    Message,
    Producer,
    PushConsumer,
)
from rocketpy._native import RemotingClient
from rocketpy.store import MessageStore


def say(text: str) -> None:
    print(text, flush=True)


def backlog(ns: str, topic: str) -> None:
    """Leaves with thousands of messages queued for a slow listener and no shutdown()."""
    with Producer("proc-backlog-p", ns) as p:
        for _ in range(2000):
            p.send(Message(topic, b"x" * 10))
    c = PushConsumer(
        "proc-backlog-c", ns, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    c.subscribe(topic, "*")
    consumed = []

    def slow(msgs: list) -> ConsumeStatus:
        time.sleep(0.2)
        consumed.extend(msgs)
        return ConsumeStatus.CONSUME_SUCCESS

    c.register_listener(slow)
    c.start()
    while not consumed:
        time.sleep(0.05)
    say("leaving")


def busy(ns: str, topic: str) -> None:
    """Leaves while threads send asynchronously, a consumer receives, and daemon threads wait
    in long native calls (their replies and callbacks arrive during interpreter exit)."""
    p = Producer("proc-busy-p", ns)
    p.start()

    def pump() -> None:
        while True:
            try:
                p.send_async(Message(topic, b"x" * 10), lambda r, e: None)
            except Exception:
                time.sleep(0.01)

    def waiting() -> None:
        client = RemotingClient()
        with contextlib.suppress(Exception):
            # GET_ROUTEINFO_BY_TOPIC to a port that accepts and never answers (sys.argv[4]).
            client.invoke(sys.argv[4], 105, dict(topic=topic), None, 60_000)

    for target in (pump, pump, waiting, waiting):
        threading.Thread(target=target, daemon=True).start()
    c = PushConsumer(
        "proc-busy-c", ns, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    c.subscribe(topic, "*")
    c.register_listener(lambda msgs: ConsumeStatus.CONSUME_SUCCESS)
    c.start()
    time.sleep(0.5 + random.random())
    say("leaving")


def blocked_invoke(ns: str, silent: str) -> None:
    """Waits in a request to a server that never answers until Ctrl-C."""
    client = RemotingClient()
    say("waiting")
    client.invoke(silent, 105, dict(topic="T"), None, 60_000)


def blocked_direct_invoke(ns: str, silent: str) -> None:
    """The same, waiting in this thread's own read (a direct connection, as sends use)."""
    client = RemotingClient()
    say("waiting")
    client.invoke(silent, 105, dict(topic="T"), None, 60_000, direct=True)


def consuming(ns: str, topic: str) -> None:
    """A consumer application's main loop, until Ctrl-C."""
    c = PushConsumer("proc-sigint-c", ns)
    c.subscribe(topic, "*")
    c.register_listener(lambda msgs: ConsumeStatus.CONSUME_SUCCESS)
    c.start()
    say("waiting")
    while True:
        time.sleep(1)


def child_sends(ns: str, topic: str) -> None:
    with Producer("proc-mp-child", ns) as p:
        p.send(Message(topic, b"from a multiprocessing child"))


def fork(ns: str, topic: str) -> None:
    """A parent with a running producer, consumer and store forks; the child cannot use them
    (a clear error, no hang), can create its own clients, and the parent is unaffected."""
    store = MessageStore(sys.argv[4], diskSpaceWarningLevelRatio=100)  # host disk: servers.py
    store.put(topic, b"stored")
    p = Producer("proc-fork-p", ns)
    p.start()
    p.send(Message(topic, b"parent before fork"))
    c = PushConsumer("proc-fork-c", ns)
    c.subscribe(topic, "*")
    c.register_listener(lambda msgs: ConsumeStatus.CONSUME_SUCCESS)
    c.start()
    say("forking")
    pid = os.fork()
    if pid == 0:
        code = 0
        for name, use in (
            ("producer", lambda: p.send(Message(topic, b"x"))),
            ("store", lambda: store.put(topic, b"x")),
        ):
            try:
                use()
                say(f"child: the parent's {name} worked?")
                code = 3
            except ForkedProcessError as e:
                say(f"child: {name}: {e}")
        with Producer("proc-fork-child", ns) as q:
            q.send(Message(topic, b"child"))
        c.shutdown()  # the parent's: forgotten, no network
        p.shutdown()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, status
    p.send(Message(topic, b"parent after fork"))
    proc = multiprocessing.get_context("fork").Process(target=child_sends, args=(ns, topic))
    proc.start()
    proc.join(60)
    assert proc.exitcode == 0, proc.exitcode
    c.shutdown()
    p.shutdown()
    store.close()
    say("fork ok")


if __name__ == "__main__":
    # Ctrl-C as an interactive program has it: a shell running the tests in the background
    # (nohup, `cmd &`) starts them with SIGINT ignored, which Python then keeps.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    scenario, namesrv, arg = sys.argv[1], sys.argv[2], sys.argv[3]
    globals()[scenario](namesrv, arg)
