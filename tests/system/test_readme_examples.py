"""Every fenced example of README.md runs as written, with the README's own set-up.

The README's examples take the name server from ``$NAMESRV_ADDR`` (RocketMQ's variable, which
``rocketpy admin`` reads too; the README says so above its first example) and the 5.x
endpoint from ``$ROCKETPY_GRPC_ENDPOINT``, with ``make run``'s addresses as defaults. So the
tests run them unchanged against servers of their own on free ports, setting only those
variables. A block needs what the README did before it (a topic the first example created,
the group the admin commands look at); the test that runs it does those earlier steps first.

Each block is named by the text above it. A block is run by a test below (:data:`RUN_BY`),
or listed with the reason it cannot run (:data:`NOT_RUN`); any other block — a new one — is
run by :func:`test_every_other_block_runs` when it is Python or ``rocketpy`` command lines,
and fails the test otherwise until it is given a test or a reason.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from examples import ROOT, Block, block_after, fenced_blocks, run_example, shell_commands
from servers import GRPC_LINE, ServerProcess, broker, namesrv

from rocketpy import Message, Producer
from rocketpy.cli import _overrides, parser
from rocketpy.errors import BrokerResponseError
from rocketpy.protocol import ResponseCode

README = ROOT / "README.md"
#: Where ``rocketpy`` and ``mqadmin`` are installed (the venv's bin): the shell blocks call them.
BIN = str(Path(sys.executable).parent)
#: The official 5.x Python client's venv (``make compat-py5``), as tests/compat finds it.
PY5_PYTHON = os.environ.get(
    "ROCKETPY_PY5_PYTHON", str(Path.home() / ".cache/rocketpy/py5-venv/bin/python")
)

#: Blocks the tests below run, by (the text above the block, its language): the test's name.
RUN_BY: dict[tuple[str, str], str] = {
    ("## Sending and consuming", "python"): "test_sending_and_consuming",
    ("## More of the client", "python"): "test_more_of_the_client",
    ("## RocketMQ 5.x clients (gRPC)", "python"): "test_5x_client_block",
    ("## Administration: `rocketpy admin`", "sh"): "test_admin_commands",
    ("## Security: ACL", "yaml"): "test_acl_example_end_to_end",
    ("## Security: ACL", "sh"): "test_acl_example_end_to_end",
    ("## Security: ACL", "python"): "test_acl_example_end_to_end",
}

#: Blocks no test runs, and why. Their ``rocketpy`` command lines are still parsed by the
#: CLI's own parser (:func:`test_listed_command_lines_parse`), so a renamed option fails.
NOT_RUN: dict[tuple[str, str], str] = {
    ("# rocketpy", "sh"): "`make run` and `make test` build and run everything; "
    "this suite is what `make test` runs",
    ("## Benchmark tool", "sh"): "benchmarks of 30 s and a million messages each; "
    "tests/system/test_bench_cli.py runs the same commands briefly",
    ("## Metrics (Prometheus)", "sh"): "servers and a curl on the fixed ports 5557/5558; "
    "tests/system/test_metrics.py starts the same servers with these keys on free ports",
    ("## Servers", "sh"): "a synopsis ([optional] arguments), not commands to paste",
    ("### Master and slave (replication)", "sh"): "two brokers on fixed ports beside a name "
    "server on 9876; tests/system/test_ha.py runs masters and slaves with these keys",
    ("### Controller mode (automatic failover)", "sh"): "the demo's servers on fixed ports, "
    "running until stopped; tests/system/test_dev_controller.py runs the demo on free ports",
    ("#### Three controllers", "sh"): "three controllers on fixed ports, running until "
    "stopped; tests/system/test_controller.py runs controllers and these admin commands on "
    "free ports",
    ("## Security: TLS", "properties"): "a broker.conf excerpt naming certificates under "
    "/etc/rocketmq; tests/system/test_tls.py runs these keys with generated certificates",
}


def the_block(marker: str, lang: str) -> Block:
    return block_after(README, marker, lang)


def run_block(block: Block, tmp_path: Path, env: dict[str, str], **kw: object) -> str:
    """Runs a Python block as a script (or a ``sh`` block with bash) in ``tmp_path``; fails
    the test with its output unless it exits 0; returns that output."""
    env = {"PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", **env}
    if block.lang == "python":
        done = run_example(block.text, cwd=tmp_path, env=env, **kw)  # type: ignore[arg-type]
    else:
        import subprocess

        done = subprocess.run(
            ["bash", "-e", "-c", block.text],
            cwd=tmp_path,
            env={**os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, f"{block.id} failed (exit {done.returncode}):\n{done.stdout}"
    return done.stdout


def ns_env(server: ServerProcess) -> dict[str, str]:
    return {"NAMESRV_ADDR": server.namesrv}


# -- the catalogue ------------------------------------------------------------------------------


def claimed() -> dict[int, str]:
    """Line of each block the catalogue names: the test that runs it, or why it is not run."""
    out: dict[int, str] = {}
    for (marker, lang), what in {**RUN_BY, **NOT_RUN}.items():
        block = the_block(marker, lang)  # a marker that no longer finds its block fails here
        assert block.line not in out, f"{block.id} is named twice: {out[block.line]!r}, {what!r}"
        out[block.line] = what
    return out


def test_every_block_is_run_or_listed() -> None:
    # Only what the catalogue names may be skipped: no block goes unnoticed.
    known = claimed()
    others = [b for b in fenced_blocks(README) if b.line not in known]
    unknown = [b.id for b in others if b.lang not in ("python", "sh")]
    assert not unknown, (
        f"blocks neither run nor listed: {unknown}; give each a test (RUN_BY) or a reason "
        "(NOT_RUN) in tests/system/test_readme_examples.py"
    )


def test_every_other_block_runs(dev_server: ServerProcess, tmp_path: Path) -> None:
    """Blocks no test names (the TLS client block; any new one) run as they are against a
    fresh dev server: Python as a script, ``sh`` with bash when all its lines are rocketpy's."""
    known = claimed()
    for block in fenced_blocks(README):
        if block.line in known or block.lang not in ("python", "sh"):
            continue
        if block.lang == "sh":
            commands = shell_commands(block)
            assert all(c[0] in ("rocketpy", "mqadmin", "export") for c in commands), (
                f"{block.id} runs other programs: give it a test or a reason in NOT_RUN"
            )
        run_block(block, tmp_path, ns_env(dev_server))


def test_listed_command_lines_parse() -> None:
    # A listed block is not run, but its rocketpy command lines must still be valid ones.
    for marker, lang in NOT_RUN:
        block = the_block(marker, lang)
        if lang != "sh":
            continue
        text = block.text.replace("[", "").replace("]", "")  # a synopsis' optional parts
        for words in shell_commands(Block(block.path, lang, text, block.line)):
            if words[0] != "rocketpy" or words[1] == "admin":
                continue
            try:
                parser().parse_args(words[1:])
            except SystemExit as e:
                pytest.fail(f"{block.id}: {' '.join(words)!r} does not parse ({e})")


# -- the runs ---------------------------------------------------------------------------------


def first_example(server: ServerProcess, tmp_path: Path) -> str:
    return run_block(the_block("## Sending and consuming", "python"), tmp_path, ns_env(server))


def test_sending_and_consuming(dev_server: ServerProcess, tmp_path: Path) -> None:
    out = first_example(dev_server, tmp_path)
    assert len(re.findall(r"^SendStatus\.SEND_OK ", out, re.M)) == 10, out
    # The listener prints from several threads: lines may interleave, each word stays whole.
    received = re.findall(r"b'hello (\d)'", out)
    assert sorted(received) == [str(i) for i in range(10)], out


def test_more_of_the_client(dev_server: ServerProcess, tmp_path: Path) -> None:
    out = run_block(the_block("## More of the client", "python"), tmp_path, ns_env(dev_server))
    assert re.fullmatch(r"[0-9A-F]{32}\n", out), out


def test_admin_commands(dev_server: ServerProcess, tmp_path: Path) -> None:
    # The README's steps before it made what it looks at: TopicTest and example-consumer
    # (the first example), the order keyed order-42 (the next block).
    first_example(dev_server, tmp_path)
    run_block(the_block("## More of the client", "python"), tmp_path, ns_env(dev_server))
    out = run_block(
        the_block("## Administration: `rocketpy admin`", "sh"), tmp_path, ns_env(dev_server)
    )
    assert "create topic to" in out and "success" in out, out
    assert re.search(r"^TopicTest\s+broker-a\s+\d", out, re.M), "example-consumer's progress"
    assert re.search(r"^[0-9A-F]{32}\s+\d+\s+0$", out, re.M), "order-42 found by its key"
    assert "DefaultCluster" in out, out


@pytest.fixture
def grpc_dev(dev_factory, tmp_path: Path) -> ServerProcess:  # type: ignore[no-untyped-def]
    server: ServerProcess = dev_factory(tmp_path / "store", "--grpc-port", "0").start()
    return server


def test_5x_client_block(grpc_dev: ServerProcess, tmp_path: Path) -> None:
    if not Path(PY5_PYTHON).exists():
        pytest.skip(f"{PY5_PYTHON} is missing: `make compat-py5` makes the 5.x client's venv")
    endpoint = grpc_dev.wait_for_line(GRPC_LINE)["grpc"]
    first_example(grpc_dev, tmp_path)  # the README runs it once TopicTest exists
    block = the_block("## RocketMQ 5.x clients (gRPC)", "python")
    env = {"ROCKETPY_GRPC_ENDPOINT": endpoint}
    out = run_block(block, tmp_path, env, python=PY5_PYTHON)
    assert re.fullmatch(r"[0-9A-F]{32,34}\n", out), out


# -- ACL ----------------------------------------------------------------------------------------


@pytest.fixture
def acl_servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServerProcess]:
    """The README's ACL set-up: its plain_acl.yml at the path its commands give
    (``conf/plain_acl.yml``, relative: the servers run in ``tmp_path``), and a name server
    and a broker with the keys of its command lines, on free ports of 127.0.0.1 instead of
    9876 and 10911."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf/plain_acl.yml").write_text(the_block("## Security: ACL", "yaml").text)
    commands = {
        c[1]: parser().parse_args(c[1:])
        for c in shell_commands(the_block("## Security: ACL", "sh"))
    }
    assert set(commands) == {"namesrv", "broker"}, commands
    ns = namesrv(0, _overrides(commands["namesrv"].set)).start()
    br = broker(ns.namesrv, 0, tmp_path / "store", _overrides(commands["broker"].set))
    try:
        br.start()
        yield ns
    finally:
        br.stop()
        ns.stop()


def test_acl_example_end_to_end(acl_servers: ServerProcess, tmp_path: Path) -> None:
    out = run_block(the_block("## Security: ACL", "python"), tmp_path, ns_env(acl_servers))
    assert out.splitlines() == ["SendStatus.SEND_OK", "received: True"], out
    # The servers do check: the same send without the account is refused.
    with (
        Producer("unsigned", acl_servers.namesrv) as p,
        pytest.raises(BrokerResponseError) as refused,
    ):
        p.send(Message("Orders", b"no account"))
    assert refused.value.code == ResponseCode.NO_PERMISSION, refused.value


def test_readme_names_the_5x_venv() -> None:
    # The 5.x block cannot run in the venv `make run` builds; the README says which one.
    text = README.read_text()
    start = text.index("## RocketMQ 5.x clients")
    section = text[start : text.index("```python", start)]
    assert "make compat-py5" in section and "ROCKETPY_PY5_PYTHON" in section
    assert "compat-py5:" in (ROOT / "Makefile").read_text()
