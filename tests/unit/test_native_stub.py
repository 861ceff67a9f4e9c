"""``rocketpy/_native.pyi`` names exactly what the compiled module exports."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import rocketpy
from rocketpy import _native

STUB = Path(rocketpy.__file__).with_name("_native.pyi")


def stub_names() -> dict[str, set[str]]:
    tree = ast.parse(STUB.read_text())
    out: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            out[node.name] = {
                n.name
                for n in node.body
                if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")
            }
        elif isinstance(node, ast.FunctionDef):
            out[node.name] = set()
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = set()
    return out


def test_stub_matches_module():
    stub = stub_names()
    module = {n for n in dir(_native) if not n.startswith("_") or n == "__version__"}
    assert set(stub) == module
    for name, members in stub.items():
        obj = getattr(_native, name)
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            public = {m for m in vars(obj) if not m.startswith("_")}
            assert members == public, name


def test_exception_tree():
    assert issubclass(rocketpy.RemotingTimeoutError, rocketpy.RemotingError)
    assert issubclass(rocketpy.RemotingError, rocketpy.RocketpyError)
    assert issubclass(rocketpy.StoreLockedError, rocketpy.StoreError)
    assert issubclass(rocketpy.ClientError, rocketpy.RocketpyError)
    assert issubclass(rocketpy.BrokerResponseError, rocketpy.RocketpyError)
    assert not issubclass(rocketpy.RocketpyError, RuntimeError)
