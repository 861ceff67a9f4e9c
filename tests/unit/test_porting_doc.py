"""``docs/porting.md`` names only what exists: every code span of the rocketpy column of its
tables is a Python expression whose rocketpy names (``Producer.send``,
``MessageExt.msg_id``, ``select_by_hash``) resolve, and whose keyword arguments the callee
takes; the 2.x names it lists are in ``rocketpy.compat``."""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rocketpy
import rocketpy.admin
import rocketpy.aio
import rocketpy.compat

DOC = Path(__file__).resolve().parents[2] / "docs" / "porting.md"

#: Where the doc's rocketpy names come from: the package and its documented modules.
NAMESPACE: dict[str, Any] = {
    **{n: getattr(m, n) for m in (rocketpy.aio, rocketpy.admin) for n in dir(m) if n[0] != "_"},
    **{n: getattr(rocketpy, n) for n in rocketpy.__all__},
}

CODE = re.compile(r"`([^`]+)`")


def rows() -> Iterator[tuple[int, str]]:
    """(line number, rocketpy cell) of each table row (header and rule rows left out)."""
    lines = DOC.read_text().splitlines()
    for i, line in enumerate(lines, 1):
        if not line.startswith("|") or set(line) <= set("|- "):
            continue
        if i < len(lines) and set(lines[i]) <= set("|- "):
            continue  # a header: the next line is the rule
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert len(cells) == 2, f"line {i}: a row has two cells (theirs | rocketpy's)"
        yield i, cells[1]


def chain(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; None for anything else."""
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(names)]


def resolve(names: list[str], where: str) -> Any:
    """The object ``names`` names, or None for a placeholder (a lower-case value such as
    ``msg`` or ``group`` that is no rocketpy name)."""
    root = names[0]
    if root not in NAMESPACE:
        assert not root[0].isupper(), f"{where}: {root} is not a rocketpy name"
        return None
    obj = NAMESPACE[root]
    for i, attr in enumerate(names[1:], 1):
        assert hasattr(obj, attr), f"{where}: {'.'.join(names[: i + 1])} does not exist"
        obj = getattr(obj, attr)
    return obj


def keywords(obj: Any) -> set[str] | None:
    """The keyword arguments ``obj`` takes (a class: its constructors' along the MRO while
    they pass ``**kwargs`` on); None when anything goes."""
    targets = [obj]
    if inspect.isclass(obj):
        inits = [c.__init__ for c in inspect.getmro(obj) if "__init__" in vars(c)]
        if any(inspect.isfunction(t) for t in inits):
            targets = inits  # else a native class: its text signature
    names: set[str] = set()
    for target in targets:
        try:
            params = inspect.signature(target).parameters.values()
        except (TypeError, ValueError):
            return None
        names |= {p.name for p in params if p.kind is not p.VAR_KEYWORD}
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            return names
    return None


def check(span: str, where: str) -> int:
    """Checks one code span; the number of rocketpy names it resolved."""
    try:
        tree = ast.parse(span, mode="eval")
    except SyntaxError:
        pytest.fail(f"{where}: `{span}` is not a Python expression")
    found = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute | ast.Name) and (names := chain(node)) is not None:
            found += resolve(names, where) is not None
        if isinstance(node, ast.Call) and (names := chain(node.func)) is not None:
            callee = resolve(names, where)
            allowed = keywords(callee) if callee is not None else None
            for kw in node.keywords:
                assert allowed is None or kw.arg in allowed, (
                    f"{where}: {'.'.join(names)} takes no {kw.arg}="
                )
    return found


def test_the_tables_name_rocketpy_as_it_is() -> None:
    checked = 0
    for line, cell in rows():
        spans = CODE.findall(cell)
        found = sum(check(span, f"porting.md:{line}") for span in spans)
        assert found, f"porting.md:{line}: no rocketpy name in {cell!r}"
        checked += 1
    assert checked > 60  # the three tables were read


def test_the_2x_names_listed_are_in_compat() -> None:
    text = DOC.read_text()
    section = text[text.index("### In one line") : text.index("### To rocketpy's own API")]
    listed = {"Producer", "TransactionMQProducer", "PushConsumer", "Message", "SendStatus"}
    listed |= {"ConsumeStatus", "TransactionStatus", "MessageModel", "MessageProperty"}
    for name in listed:
        assert f"`{name}`" in section
        assert name in rocketpy.compat.__all__


def test_a_wrong_name_is_caught() -> None:
    """The checks above can fail: a misspelt method, keyword or class."""
    with pytest.raises(AssertionError, match="does not exist"):
        check("Producer.send_sync(msg)", "here")
    with pytest.raises(AssertionError, match="takes no"):
        check("Producer(group, namesrv_addr, timeout=3)", "here")
    with pytest.raises(AssertionError, match="takes no"):
        check("Message(topic, body, delay=3)", "here")
    with pytest.raises(AssertionError, match="not a rocketpy name"):
        check("KafkaProducer(servers)", "here")
