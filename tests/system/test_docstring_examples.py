"""Every code example in rocketpy's public docstrings runs as written.

An example is read as doctest reads one: in the context of its module (its globals, and
rocketpy's public names, which every example assumes), so ``Message`` needs no import line;
examples may ``await`` at the top level (``python -m asyncio``). The examples' clients take
their name servers from ``$NAMESRV_ADDR``, as RocketMQ's clients do when none is given: the
test serves them a ``rocketpy dev`` on free ports and sets that variable. Doctests (``>>>``)
are checked with their output.

What an example leaves to the reader (a value it names) is given by :data:`GIVEN`, what it
needs from before it (messages to read) by :data:`SETUP`, each with why; an example that
cannot run is listed in :data:`NOT_RUN` with the reason. Any other example — a new one —
runs as it is.
"""

from __future__ import annotations

import doctest
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from examples import ROOT, DocExample, docstring_examples, run_example
from servers import dev

PACKAGE = ROOT / "python" / "rocketpy"

#: Values an example names and leaves to the reader, by example id.
GIVEN = {
    # "arg=order_id": the application's order id, which the example does not make up.
    "rocketpy.producer._producer.Producer": "order_id = 'order-42'",
}

#: A sender feeding TopicTest while the example runs, for the examples that read it and stop
#: at their first message (a new group starts at the queues' ends).
_FEED = """
import threading as _threading

def _feed():
    with Producer("docstring-feed") as _p:
        while True:
            _p.send(Message("TopicTest", b"fed by the test"))
            _threading.Event().wait(0.2)

_threading.Thread(target=_feed, daemon=True).start()
"""

#: What an example needs from before it, by example id.
SETUP = {
    "rocketpy.aio.AsyncConsumer": _FEED,
    "rocketpy.consumer.lite_pull.LitePullConsumer": _FEED,
}

#: Examples no test runs, by id, and why.
NOT_RUN: dict[str, str] = {}

EXAMPLES = docstring_examples(PACKAGE)


@pytest.fixture(scope="module")
def namesrv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``rocketpy dev`` on free ports: its name server's address."""
    store = tmp_path_factory.mktemp("docstrings") / "store"
    server = dev(store).start()
    yield server.namesrv
    assert server.stop() == 0, server.text()


def test_the_catalogue_names_existing_examples() -> None:
    ids = {e.id for e in EXAMPLES}
    stale = (set(GIVEN) | set(SETUP) | set(NOT_RUN)) - ids
    assert not stale, f"no such docstring example (renamed or gone?): {sorted(stale)}"


@pytest.mark.parametrize("example", [e for e in EXAMPLES if e.doctest], ids=lambda e: e.id)
def test_doctest(example: DocExample) -> None:
    module = importlib.import_module(example.module)
    result = doctest.testmod(module, verbose=False, report=True)
    assert result.attempted > 0 and result.failed == 0, f"{example.id}: {result}"


@pytest.mark.parametrize("example", [e for e in EXAMPLES if not e.doctest], ids=lambda e: e.id)
def test_example_runs(example: DocExample, namesrv: str, tmp_path: Path) -> None:
    if example.id in NOT_RUN:
        pytest.skip(NOT_RUN[example.id])
    setup = GIVEN.get(example.id, "") + SETUP.get(example.id, "")
    done = run_example(
        example.text,
        module=example.module,
        setup=setup,
        cwd=tmp_path,
        env={"NAMESRV_ADDR": namesrv},
        timeout=30,
    )
    assert done.returncode == 0, f"{example.id} failed (exit {done.returncode}):\n{done.stdout}"
