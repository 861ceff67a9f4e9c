"""What every command module declares: its mqadmin name, help, options and action."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from rocketpy.admin import Admin
from rocketpy.protocol import Perm


@dataclass(frozen=True)
class Command:
    """One mqadmin sub-command."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[Admin, argparse.Namespace], None]


def cut(text: str, width: int) -> str:
    """RocketMQ's ``UtilAll.frontStringAtLeast``: at most ``width`` characters."""
    return text[:width]


def perm_text(perm: int) -> str:
    """RocketMQ's ``PermName.perm2String``: ``R``, ``W`` and ``X`` (inherit) or ``-``."""
    return (
        ("R" if perm & Perm.READ else "-")
        + ("W" if perm & Perm.WRITE else "-")
        + ("X" if perm & Perm.INHERIT else "-")
    )
