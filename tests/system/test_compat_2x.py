"""``rocketpy.compat``: code written for the official 2.x Python client
(``rocketmq-client-python``) runs against a rocketpy server with only its import changed.

The snippets below are pasted as published: the producer and push-consumer blocks of the
README of https://github.com/apache/rocketmq-client-python (master, the 2.x ctypes client),
and its ``samples/producer.py`` and ``samples/consumer.py`` (the README has no transaction
block; the sample's ``send_transaction_message`` is the project's own transaction example),
licence headers left out. Each runs as a script in its own Python process, as a user runs
it; the test changes the import line and the name server address (the test server listens
on a free port, not 9876) and nothing else."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from servers import RETRY_IN_A_SECOND, ServerProcess, dev

from helpers import wait_until
from rocketpy.admin import Admin
from rocketpy.compat import (
    ConsumeStatus,
    Message,
    Producer,
    PushConsumer,
    SendStatus,
    TransactionMQProducer,
    TransactionStatus,
)

README_PRODUCER = """\
from rocketmq.client import Producer, Message

producer = Producer('PID-XXX')
producer.set_name_server_address('127.0.0.1:9876')
producer.start()

msg = Message('YOUR-TOPIC')
msg.set_keys('XXX')
msg.set_tags('XXX')
msg.set_body('XXXX')
ret = producer.send_sync(msg)
print(ret.status, ret.msg_id, ret.offset)
producer.shutdown()
"""

README_PUSH_CONSUMER = """\
import time

from rocketmq.client import PushConsumer, ConsumeStatus


def callback(msg):
    print(msg.id, msg.body)
    return ConsumeStatus.CONSUME_SUCCESS


consumer = PushConsumer('CID_XXX')
consumer.set_name_server_address('127.0.0.1:9876')
consumer.subscribe('YOUR-TOPIC', callback)
consumer.start()

while True:
    time.sleep(3600)

consumer.shutdown()
"""

SAMPLE_PRODUCER = """\
from rocketmq.client import Producer, Message, TransactionMQProducer, TransactionStatus

import time

topic = 'TopicTest'
gid = 'test'
name_srv = '127.0.0.1:9876'


def create_message():
    msg = Message(topic)
    msg.set_keys('XXX')
    msg.set_tags('XXX')
    msg.set_property('property', 'test')
    msg.set_body('message body')
    return msg


def send_message_sync(count):
    producer = Producer(gid)
    producer.set_name_server_address(name_srv)
    producer.start()
    for n in range(count):
        msg = create_message()
        ret = producer.send_sync(msg)
        print ('send message status: ' + str(ret.status) + ' msgId: ' + ret.msg_id)
    print ('send sync message done')
    producer.shutdown()


def send_orderly_with_sharding_key(count):
    producer = Producer(gid, True)
    producer.set_name_server_address(name_srv)
    producer.start()
    for n in range(count):
        msg = create_message()
        ret = producer.send_orderly_with_sharding_key(msg, 'orderId')
        print ('send message status: ' + str(ret.status) + ' msgId: ' + ret.msg_id)
    print ('send sync order message done')
    producer.shutdown()


def check_callback(msg):
    print ('check: ' + msg.body.decode('utf-8'))
    return TransactionStatus.COMMIT


def local_execute(msg, user_args):
    print ('local:   ' + msg.body.decode('utf-8'))
    return TransactionStatus.UNKNOWN


def send_transaction_message(count):
    producer = TransactionMQProducer(gid, check_callback)
    producer.set_name_server_address(name_srv)
    producer.start()
    for n in range(count):
        msg = create_message()
        ret = producer.send_message_in_transaction(msg, local_execute, None)
        print ('send message status: ' + str(ret.status) + ' msgId: ' + ret.msg_id)
    print ('send transaction message done')

    while True:
        time.sleep(3600)


if __name__ == '__main__':
    send_message_sync(10)
"""

SAMPLE_CONSUMER = """\
from rocketmq.client import PushConsumer, ConsumeStatus
import time

def callback(msg):
    print(msg.id, msg.body,  msg.get_property('property'))
    return ConsumeStatus.CONSUME_SUCCESS

def start_consume_message():
    consumer = PushConsumer('consumer_group')
    consumer.set_name_server_address('127.0.0.1:9876')
    consumer.subscribe('TopicTest', callback)
    print ('start consume message')
    consumer.start()

    while True:
        time.sleep(3600)

if __name__ == '__main__':
    start_consume_message()
"""

#: What the samples print for each message sent.
SENT = re.compile(r"send message status: (\S+) msgId: ([0-9A-F]{32})")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A dev server whose transaction checks come within a second or two (the sample's
    ``local_execute`` answers UNKNOWN: its messages commit through ``check_callback``), and
    whose retries come after a second."""
    store = tmp_path_factory.mktemp("compat2x") / "store"
    settings = {
        "transactionCheckInterval": "300",
        "transactionTimeOut": "1000",
        **RETRY_IN_A_SECOND,
    }
    proc = dev(store, settings=settings).start()
    yield proc
    assert proc.stop() == 0, proc.text()


def pasted(snippet: str, namesrv: str) -> str:
    """``snippet`` with its import changed to rocketpy.compat, pointed at ``namesrv``."""
    assert snippet.count("from rocketmq.client import") == 1
    assert snippet.count("127.0.0.1:9876") == 1
    text = snippet.replace("from rocketmq.client import", "from rocketpy.compat import")
    return text.replace("127.0.0.1:9876", namesrv)


class Script:
    """A snippet running as a script in its own process, its output collected line by
    line (the consumers run until stopped, as their snippets loop forever)."""

    def __init__(self, path: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-u", *args],
            cwd=path.parent,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def output(self) -> str:
        return "\n".join(self.lines)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(30)
        self._reader.join(10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def run(path: Path, *args: str) -> str:
    """Runs a script to its end; its output."""
    done = subprocess.run(
        [sys.executable, *args], cwd=path.parent, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_readme_producer_and_push_consumer(server: ServerProcess, tmp_path: Path) -> None:
    producer = tmp_path / "readme_producer.py"
    producer.write_text(pasted(README_PRODUCER, server.namesrv))
    consumer = tmp_path / "readme_consumer.py"
    consumer.write_text(pasted(README_PUSH_CONSUMER, server.namesrv))

    # print(ret.status, ret.msg_id, ret.offset): 2.x's IntEnum prints as its value.
    status, msg_id, offset = run(producer, producer.name).split()
    assert (status, offset) == (str(SendStatus.OK.value), "0")
    assert re.fullmatch(r"[0-9A-F]{32}", msg_id)

    script = Script(consumer, consumer.name)
    try:
        # print(msg.id, msg.body)
        assert wait_until(lambda: f"{msg_id} b'XXXX'" in script.lines, 60), script.output()
    finally:
        script.stop()


def test_samples_sync_orderly_and_transactions(server: ServerProcess, tmp_path: Path) -> None:
    sample = tmp_path / "sample_producer.py"
    sample.write_text(pasted(SAMPLE_PRODUCER, server.namesrv))
    consumer = tmp_path / "sample_consumer.py"
    consumer.write_text(pasted(SAMPLE_CONSUMER, server.namesrv))

    out = run(sample, "-c", "import sample_producer as s; s.send_message_sync(10)")
    out += run(sample, "-c", "import sample_producer as s; s.send_orderly_with_sharding_key(10)")
    sent = SENT.findall(out)
    assert len(sent) == 20 and {s for s, _ in sent} == {"0"}, out
    ids = {i for _, i in sent}

    transactions = Script(
        sample, "-c", "import sample_producer as s; s.send_transaction_message(3)"
    )
    script = Script(consumer, consumer.name)
    try:
        assert wait_until(lambda: "send transaction message done" in transactions.lines, 60), (
            transactions.output()
        )
        tx = {i for _, i in SENT.findall(transactions.output())}
        assert len(tx) == 3
        # local_execute ran and answered UNKNOWN: check_callback commits them later.
        assert transactions.lines.count("local:   message body") == 3

        def consumed() -> set[str]:
            # print(msg.id, msg.body,  msg.get_property('property')) from the consumer's
            # threads: print writes each value on its own, so lines may interleave.
            return set(re.findall(r"[0-9A-F]{32}", script.output()))

        assert wait_until(lambda: consumed() >= ids | tx, 60), script.output()
        # Each value is one write: msg.body and msg.get_property('property') as 2.x gives them.
        assert script.output().count("b'message body'") >= len(ids | tx)
        assert script.output().count("b'test'") >= len(ids | tx)
        assert "check: message body" in transactions.lines
    finally:
        script.stop()
        transactions.stop()


def test_sharding_key_keeps_one_queue(server: ServerProcess) -> None:
    producer = Producer("compat-orderly", True)
    producer.set_name_server_address(server.namesrv)
    producer.start()
    try:
        offsets = []
        for i in range(8):
            msg = Message("CompatOrderly")
            msg.set_body(f"step {i}")
            ret = producer.send_orderly_with_sharding_key(msg, "order-42")
            assert ret.status == SendStatus.OK
            offsets.append(ret.offset)
        # One queue: its offsets follow each other.
        assert offsets == list(range(offsets[0], offsets[0] + 8))
    finally:
        producer.shutdown()


def test_received_message_as_2x_gives_it(server: ServerProcess) -> None:
    got: list[object] = []
    answers = iter([None, ConsumeStatus.CONSUME_SUCCESS])

    def callback(msg: object) -> object:
        got.append(msg)
        return next(answers, ConsumeStatus.CONSUME_SUCCESS)  # None first: delivered again

    producer = Producer("compat-attrs")
    producer.set_name_server_address(server.namesrv)
    producer.start()
    msg = Message("CompatAttrs")
    msg.set_keys("k1 k2")
    msg.set_tags("TagA")
    msg.set_body(b"\x00bytes")
    msg.set_property("color", "red")
    ret = producer.send_sync(msg)
    producer.shutdown()

    with Admin(server.namesrv) as admin:
        # The retry topic exists before the consumer starts: its queues are assigned at
        # once, not at the next rebalance (20 s), so the message comes back within a second.
        admin.create_topic("%RETRY%compat-attrs-group", queues=1)
    consumer = PushConsumer("compat-attrs-group")
    consumer.set_name_server_address(server.namesrv)
    consumer.subscribe("CompatAttrs", callback, "TagA")
    consumer.start()
    try:
        assert wait_until(lambda: len(got) >= 2, 60)
    finally:
        consumer.shutdown()
    first, again = got[0], got[1]
    for m in (first, again):
        assert m.id == ret.msg_id  # type: ignore[attr-defined]
        assert m.topic == "CompatAttrs"  # type: ignore[attr-defined]
        assert (m.tags, m.keys, m.body) == (b"TagA", b"k1 k2", b"\x00bytes")  # type: ignore[attr-defined]
        assert m.get_property("color") == b"red" == m["color"]  # type: ignore[attr-defined,index]
        assert m.get_property("missing") == b""  # type: ignore[attr-defined]
    assert (first.reconsume_times, again.reconsume_times) == (0, 1)  # type: ignore[attr-defined]


def test_transaction_rollback_is_never_delivered(server: ServerProcess) -> None:
    seen: list[object] = []
    producer = TransactionMQProducer("compat-tx", lambda msg: TransactionStatus.ROLLBACK)
    producer.set_name_server_address(server.namesrv)
    producer.start()
    try:
        results = []
        for outcome in (TransactionStatus.ROLLBACK, TransactionStatus.COMMIT):
            msg = Message("CompatTx")
            msg.set_body(outcome.name)

            def local(m: object, args: object, outcome: TransactionStatus = outcome) -> object:
                seen.append((m.id, m.body, args))  # type: ignore[attr-defined]
                return outcome

            results.append(producer.send_message_in_transaction(msg, local, "arg"))
    finally:
        producer.shutdown()
    # local_execute saw the id send_message_in_transaction returned, and the user args.
    assert seen == [
        (r.msg_id, b, "arg") for r, b in zip(results, [b"ROLLBACK", b"COMMIT"], strict=True)
    ]
    bodies: list[bytes] = []
    consumer = PushConsumer("compat-tx-group")
    consumer.set_name_server_address(server.namesrv)
    consumer.subscribe("CompatTx", lambda m: bodies.append(m.body) or ConsumeStatus.CONSUME_SUCCESS)
    consumer.start()
    try:
        assert wait_until(lambda: b"COMMIT" in bodies, 60)
    finally:
        consumer.shutdown()
    assert bodies == [b"COMMIT"]


def test_what_rocketpy_cannot_do_is_refused() -> None:
    producer = Producer("compat-refused")
    with pytest.raises(NotImplementedError, match="set_name_server_address"):
        producer.set_name_server_domain("example.com")
    with pytest.raises(NotImplementedError, match=r"rocketpy\.metrics"):
        producer.set_message_trace(True)
    with pytest.raises(NotImplementedError, match="compress_msg_body_over_howmuch"):
        producer.set_compress_level(9)
    producer.set_compress_level(5)  # rocketpy's level: accepted
    consumer = PushConsumer("compat-refused")
    with pytest.raises(NotImplementedError, match="set_name_server_address"):
        consumer.set_name_server_domain("example.com")
    with pytest.raises(TypeError, match="not callable"):
        consumer.subscribe("T", "*")  # type: ignore[arg-type]
