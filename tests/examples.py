"""Documented examples as tests: the fenced code blocks of a Markdown file, read exactly as a
user copies them, and the code examples of docstrings (reST literal blocks and doctests).

What must stay true: a block is run as written (no edits by the tests); what a block needs
from earlier steps (a running server, a created topic) is the documentation's own set-up,
done by the test that runs it and named in the block's test. A docstring example runs in its
module's context, as doctest runs one (:func:`run_example`).
"""

from __future__ import annotations

import ast
import inspect
import os
import re
import shlex
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    """One fenced block: its language tag, its text, and where it starts (1-based line)."""

    path: Path
    lang: str
    text: str
    line: int

    @property
    def id(self) -> str:
        """``README.md:23`` — a test id that says where the block is."""
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def fenced_blocks(path: Path, lang: str | None = None) -> list[Block]:
    """The fenced blocks of the Markdown file ``path`` (only those tagged ``lang`` if given)."""
    source = path.read_text(encoding="utf-8")
    blocks = []
    for m in _FENCE.finditer(source):
        if lang is not None and m.group(1) != lang:
            continue
        line = source.count("\n", 0, m.start()) + 1
        blocks.append(Block(path, m.group(1), m.group(2), line))
    return blocks


def block_after(path: Path, marker: str, lang: str | None = None) -> Block:
    """The first block (of ``lang``) that starts after the first line containing ``marker``:
    a test names the block it runs by the heading or sentence above it, not by a line number
    that moves with every edit."""
    source = path.read_text(encoding="utf-8")
    at = source.find(marker)
    if at < 0:
        raise LookupError(f"{marker!r} is not in {path}")
    marker_line = source.count("\n", 0, at) + 1
    for block in fenced_blocks(path, lang):
        if block.line > marker_line:
            return block
    raise LookupError(f"no {lang or ''} block after {marker!r} in {path}")


# -- shell blocks -----------------------------------------------------------------------------


def shell_commands(block: Block) -> list[list[str]]:
    """The command lines of a ``sh`` block as argument lists: continuation lines joined,
    comments and blank lines dropped (no variables expanded: these are the words as typed)."""
    joined = block.text.replace("\\\n", " ")
    commands = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            commands.append(words)
    return commands


# -- docstring examples -----------------------------------------------------------------------

#: A reST literal block: a line ending with ``::``, a blank line, then lines indented deeper.
_LITERAL = re.compile(r"::[ \t]*\n[ \t]*\n((?:[ \t]+\S[^\n]*\n|[ \t]*\n)+)")


@dataclass(frozen=True)
class DocExample:
    """A code example of a public docstring: the module it is documented in (its globals are
    the example's context, as doctest gives), the documented object, the code, and whether it
    is a doctest (``>>>`` lines, checked with their output) or a literal block (run)."""

    module: str
    qualname: str
    text: str
    doctest: bool

    @property
    def id(self) -> str:
        """``rocketpy.aio.AsyncConsumer`` (a second example of one object gets ``#2``)."""
        return f"{self.module}.{self.qualname}" if self.qualname else self.module


def docstring_examples(package: Path) -> list[DocExample]:
    """Every code example in the docstrings of the package directory ``package`` (modules,
    public classes and functions; names starting with ``_`` are not documentation): reST
    literal blocks (``Example::`` and the indented code after it) and doctests."""
    out: list[DocExample] = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        module = ".".join(parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for qualname, doc in _docstrings(tree):
            found = []
            if ">>>" in doc:
                found.append(DocExample(module, qualname, doc, True))
            for m in _LITERAL.finditer(doc + "\n"):
                found.append(DocExample(module, qualname, textwrap.dedent(m.group(1)), False))
            for i, ex in enumerate(found):
                name = qualname if i == 0 else f"{qualname}#{i + 1}"
                out.append(DocExample(ex.module, name, ex.text, ex.doctest))
    return out


def _docstrings(tree: ast.Module) -> list[tuple[str, str]]:
    """(qualified name, docstring) of the module and its public classes, functions and
    methods; the module's own name is ""."""
    found: list[tuple[str, str]] = []
    doc = ast.get_docstring(tree)
    if doc:
        found.append(("", doc))

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if not isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if node.name.startswith("_") and not node.name.startswith("__"):
                continue
            name = f"{prefix}{node.name}"
            doc = ast.get_docstring(node)
            if doc:
                found.append((name, doc))
            if isinstance(node, ast.ClassDef):
                walk(node.body, f"{name}.")

    walk(tree.body, "")
    return found


# -- running examples ------------------------------------------------------------------------


def run_example(
    code: str,
    *,
    module: str | None = None,
    setup: str = "",
    cwd: Path,
    env: dict[str, str] | None = None,
    python: str = sys.executable,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Runs ``code`` in a fresh interpreter (``python``), in ``cwd``, with ``env`` over this
    process's environment; its exit code and output (stderr merged) come back.

    Without ``module`` the code is a script, run as a user runs a file. With ``module`` it is
    a docstring example: it runs with that module's globals and rocketpy's public names, and
    may ``await`` at the top level (as in ``python -m asyncio``), since that is how such
    fragments are read. ``setup`` runs first in the same namespace: what the example leaves
    to the reader (a value it names), given by the test that names it."""
    script = [python, "-c", code]
    argv = script if module is None else [python, __file__, module, setup, code]
    return subprocess.run(
        argv,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        check=False,
    )


def _run_fragment(module: str, setup: str, code: str) -> None:
    """The child side of :func:`run_example` with a module."""
    import asyncio
    import importlib

    import rocketpy

    namespace: dict[str, object] = {n: getattr(rocketpy, n) for n in rocketpy.__all__}
    namespace.update(vars(importlib.import_module(module)))
    namespace["__name__"] = "__main__"
    for text in (setup, code):
        compiled = compile(
            text, f"<{module} example>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        )
        if compiled.co_flags & inspect.CO_COROUTINE:
            asyncio.run(eval(compiled, namespace))  # the documented example itself
        else:
            exec(compiled, namespace)


if __name__ == "__main__":
    _run_fragment(*sys.argv[1:4])
