"""``rocketpy admin`` (also installed as ``mqadmin``): RocketMQ's mqadmin commands with its
names, flags and output columns, so existing scripts and runbooks work — against rocketpy or
any RocketMQ 4.x/5.x cluster, since each command makes the requests mqadmin makes.

Every command takes ``-n/--namesrvAddr`` (default: ``$NAMESRV_ADDR``, as mqadmin); controller
mode's commands that are given only controller addresses (``-a``) run without one. Listing
commands take ``--json``. With ACL on the servers, requests are signed with the account of
``--accessKey``/``--secretKey``, else of ``$ROCKETMQ_ACCESS_KEY``/``$ROCKETMQ_SECRET_KEY``,
else of ``$ROCKETMQ_HOME/conf/tools.yml`` as RocketMQ's mqadmin reads it. ``--tls`` (with
``--tlsCaFile``) connects with TLS. Errors print one line on stderr and exit 1 (2 for bad usage)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from rocketpy.admin import Admin
from rocketpy.credentials import SessionCredentials, credentials_of, read_tools_yml
from rocketpy.errors import RocketpyError
from rocketpy.mqadmin import cluster, controller, group, message, queue, topic
from rocketpy.mqadmin.command import Command

COMMANDS: list[Command] = (
    topic.COMMANDS
    + cluster.COMMANDS
    + group.COMMANDS
    + message.COMMANDS
    + queue.COMMANDS
    + controller.COMMANDS
)


class _Parser(argparse.ArgumentParser):
    """Bad usage is one line on stderr (mqadmin prints its usage; scripts want the reason)."""

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message}", file=sys.stderr)
        raise SystemExit(2)


def parser(prog: str = "mqadmin") -> argparse.ArgumentParser:
    """The argument parser of every command."""
    p = _Parser(prog=prog, description="RocketMQ admin commands (mqadmin-compatible).")
    sub = p.add_subparsers(dest="command", metavar="command", parser_class=_Parser)
    sub.required = True
    for cmd in COMMANDS:
        sp = sub.add_parser(cmd.name, help=cmd.help, description=cmd.help)
        sp.add_argument(
            "-n",
            "--namesrvAddr",
            default=os.environ.get("NAMESRV_ADDR"),
            help="name servers, host:port;host:port (default: $NAMESRV_ADDR)",
        )
        sp.add_argument("--timeout", type=int, default=5000, help="per request, ms")
        sp.add_argument(
            "--accessKey",
            default=os.environ.get("ROCKETMQ_ACCESS_KEY"),
            help="ACL account (default: $ROCKETMQ_ACCESS_KEY, else $ROCKETMQ_HOME/conf/tools.yml)",
        )
        sp.add_argument(
            "--tls",
            action="store_true",
            help="connect with TLS (servers with tls.server.mode permissive or enforcing)",
        )
        sp.add_argument("--tlsCaFile", help="CAs of the servers' certificates (PEM; --tls)")
        sp.add_argument(
            "--secretKey",
            default=os.environ.get("ROCKETMQ_SECRET_KEY"),
            help="its secret key (default: $ROCKETMQ_SECRET_KEY)",
        )
        cmd.add_arguments(sp)
        sp.set_defaults(run=cmd.run, needs_namesrv=cmd.namesrv)
    return p


def main(argv: Sequence[str] | None = None, prog: str = "mqadmin") -> None:
    """Runs one command; exits non-zero with a one-line reason on failure."""
    args = parser(prog).parse_args(argv)
    if not args.namesrvAddr and args.needs_namesrv:
        print(f"{prog}: no name server: give -n host:port or set NAMESRV_ADDR", file=sys.stderr)
        raise SystemExit(2)
    try:
        credentials = _credentials(args)
        with Admin(
            args.namesrvAddr or None,
            timeout_ms=args.timeout,
            credentials=credentials,
            tls=args.tls or args.tlsCaFile is not None,
            tls_ca_file=args.tlsCaFile,
        ) as admin:
            args.run(admin, args)
    except (RocketpyError, OSError, ValueError) as e:
        print(f"{prog} {args.command}: {e}", file=sys.stderr)
        raise SystemExit(1) from None
    except BrokenPipeError:  # output piped into head
        raise SystemExit(0) from None


def _credentials(args: argparse.Namespace) -> SessionCredentials | None:
    """The flags' (or environment's) account, else tools.yml's as RocketMQ's mqadmin reads it (its absence is no
    error: servers without ACL need no account)."""
    if args.accessKey is not None or args.secretKey is not None:
        return credentials_of(None, args.accessKey, args.secretKey)
    home = os.environ.get("ROCKETMQ_HOME")
    return read_tools_yml(os.path.join(home, "conf", "tools.yml")) if home else None
