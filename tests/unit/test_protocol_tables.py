"""Python's copies of the protocol's numbers are the native ones (``crates/protocol``), both
ways: no code, flag or permission bit exists on one side only."""

from __future__ import annotations

import pytest

from rocketpy import _native
from rocketpy.errors import ClientError
from rocketpy.protocol import MessageSysFlag, Perm, PullSysFlag, RequestCode, ResponseCode
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
