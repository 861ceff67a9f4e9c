"""Python's copies of the protocol's numbers are the native ones (``crates/protocol``), both
ways: no code, flag or permission bit exists on one side only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rocketpy import _native
from rocketpy.errors import ClientError
from rocketpy.protocol import (
    ControllerRequestCode,
    ControllerResponseCode,
    MessageSysFlag,
    Perm,
    PullSysFlag,
    RequestCode,
    ResponseCode,
)
from rocketpy.validate import check_group, check_topic


def constants(cls: type) -> dict[str, int]:
    return {k: v for k, v in vars(cls).items() if k.isupper()}


@pytest.mark.parametrize(
    ("python", "native"),
    [
        (RequestCode, _native.REQUEST_CODES),
        (ResponseCode, _native.RESPONSE_CODES),
        (Perm, _native.PERM),
        (PullSysFlag, _native.PULL_SYS_FLAG),
        (MessageSysFlag, _native.MESSAGE_SYS_FLAG),
    ],
)
def test_python_tables_equal_native(python: type, native: dict[str, int]):
    assert constants(python) == native


CODE_RS = Path(__file__).resolve().parents[2] / "crates" / "protocol" / "src" / "code.rs"


def rust_codes(module: str, table: str) -> dict[str, int]:
    """The ``codes!`` table ``table`` (``request``/``response``) inside ``pub mod <module>``
    of ``code.rs``: the controller codes, which the native module does not export."""
    text = CODE_RS.read_text()
    start = text.index(f"pub mod {module} {{")
    body = re.search(rf"\b{table}\s*\{{(.*?)\}}", text[start:], re.S)
    assert body, f"no {table} table in code::{module}"
    entries = re.findall(r"^\s*([A-Z][A-Z0-9_]*)\s*=\s*([0-9_]+)\s*,", body.group(1), re.M)
    return {name: int(value.replace("_", "")) for name, value in entries}


@pytest.mark.parametrize(
    ("python", "table"),
    [(ControllerRequestCode, "request"), (ControllerResponseCode, "response")],
)
def test_controller_codes_equal_rust(python: type, table: str):
    rust = rust_codes("controller", table)
    assert rust, f"code::controller::{table} parsed empty"
    assert constants(python) == rust
    # They stay out of the served tables (code.rs keeps them apart on purpose).
    assert not set(constants(python)) & set(constants(RequestCode) | constants(ResponseCode))


def test_one_topic_rule():
    check_topic("Topic_1|%-x")
    check_topic("a" * 127)
    for bad in ["", "a" * 128, "Topic\n", "a/b", "..", "a.b", "é", " T"]:
        with pytest.raises(ClientError):
            check_topic(bad)
        with pytest.raises(_native.InvalidArgumentError):
            _native.validate_topic(bad)
    check_group("g" * 120)
    with pytest.raises(ClientError):
        check_group("g" * 121)  # %RETRY% + group must be a valid topic, as the broker requires
