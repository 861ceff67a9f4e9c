"""tests/fault is collected only when named (``pytest tests/fault``, or a path below it): a
bare ``pytest`` (``make py-test``, whose testpaths is ``tests``) leaves the fault loop out."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def named(config: pytest.Config) -> bool:
    """Whether a command-line argument is this directory or lies below it."""
    base = config.invocation_params.dir
    for arg in config.args:
        path = (base / arg.split("::")[0]).resolve()
        if path == HERE or HERE in path.parents:
            return True
    return False


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if collection_path.suffix == ".py" and not named(config):
        return True
    return None
