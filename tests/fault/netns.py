"""The fault loop's network: one network namespace per process, each with one veth pair whose
other end is a port of a private bridge living in a namespace of its own. Nothing is created in
the root namespace: no bridge, no interface, no address, no route. Every name starts with
:data:`PREFIX`, so a run that crashed leaves nothing a later run cannot find and remove.

Partitions are routes: ``blackhole`` routes to the peers' addresses, added in both namespaces
of each cut pair (a packet is dropped on its way out, and nothing arrives that would need an
answer), or the bridge side of a namespace's veth set down (cut from everyone)."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

PREFIX = "rpf-"
BRIDGE_NS = f"{PREFIX}br"
SUBNET = "10.213.0"
#: Held while a run owns the ``rpf-`` names (two runs at once would tear each other down).
LOCK_FILE = Path("/tmp/rocketpy-fault-loop.lock")


def run(*argv: str, check: bool = True, timeout: float = 10) -> subprocess.CompletedProcess[str]:
    """An ``ip`` command (or any), its output captured, bounded by ``timeout``."""
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr.strip()}")
    return proc


def unusable() -> str | None:
    """Why this machine cannot build the topology (None: it can)."""
    if os.geteuid() != 0:
        return "network namespaces need root (the fault loop makes its own with `ip netns`)"
    if shutil.which("ip") is None:
        return "no `ip` command (iproute2)"
    probe = f"{PREFIX}probe-{os.getpid()}"
    try:
        run("ip", "netns", "add", probe)
        run("ip", "-n", probe, "link", "add", "b0", "type", "bridge")
        run("ip", "-n", probe, "link", "add", "v0", "type", "veth", "peer", "name", "v1")
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        return f"`ip netns` is not usable here: {e}"
    finally:
        run("ip", "netns", "del", probe, check=False)
    return None


def namespaces() -> list[str]:
    """Every namespace with the prefix."""
    out = run("ip", "netns", "list").stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(PREFIX)]


def kill_namespace_processes(ns: str) -> list[int]:
    """SIGKILL to every process inside ``ns`` (by pid, from ``ip netns pids``); their pids."""
    pids = [int(p) for p in run("ip", "netns", "pids", ns, check=False).stdout.split()]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGCONT)  # a stopped process dies only once continued
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return pids


def remove_all() -> list[str]:
    """Removes every prefixed namespace, after killing what runs inside; their names."""
    found = namespaces()
    for ns in found:
        kill_namespace_processes(ns)
    deadline = time.monotonic() + 10
    for ns in found:
        while run("ip", "netns", "pids", ns, check=False).stdout.strip():
            if time.monotonic() > deadline:
                raise RuntimeError(f"processes in {ns} outlived SIGKILL")
            time.sleep(0.05)
        run("ip", "netns", "del", ns, check=False)
    return found


class Lock:
    """The run's hold on the prefix (an exclusive flock; waits up to ``timeout``)."""

    def __init__(self, timeout: float = 120) -> None:
        self._fd = os.open(LOCK_FILE, os.O_CREAT | os.O_RDWR, 0o600)
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(self._fd)
                    raise TimeoutError(f"another fault loop holds {LOCK_FILE}") from None
                time.sleep(0.5)

    def release(self) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)


class Network:
    """The bridge namespace and one namespace per node (``add``), all removed by ``close``."""

    def __init__(self) -> None:
        self._lock: Lock | None = Lock()
        stale = remove_all()
        if stale:
            print(f"removed stale namespaces of an earlier run: {' '.join(stale)}", flush=True)
        self.ips: dict[str, str] = {}  # node -> address
        self._cut: set[tuple[str, str]] = set()
        try:
            self._new_ns(BRIDGE_NS)
            run("ip", "-n", BRIDGE_NS, "link", "add", "br0", "type", "bridge")
            run("ip", "-n", BRIDGE_NS, "link", "set", "br0", "up")
        except BaseException:
            self.close()
            raise

    @staticmethod
    def ns(node: str) -> str:
        return f"{PREFIX}{node}"

    @staticmethod
    def _new_ns(ns: str) -> None:
        run("ip", "netns", "add", ns)
        run("ip", "-n", ns, "link", "set", "lo", "up")
        for key in ("all", "default"):  # no IPv6 link-local addresses, no DAD
            run("ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{key}.disable_ipv6=1")

    def add(self, node: str, host: int) -> str:
        """Namespace ``rpf-<node>`` with ``eth0`` at ``10.213.0.<host>/24``; its address."""
        ns, port = self.ns(node), f"{PREFIX}{node}"
        assert len(port) <= 15, port
        self._new_ns(ns)
        run("ip", "-n", BRIDGE_NS, "link", "add", port, "type", "veth", "peer", "name", "eth0",
            "netns", ns)  # fmt: skip
        run("ip", "-n", BRIDGE_NS, "link", "set", port, "master", "br0")
        run("ip", "-n", BRIDGE_NS, "link", "set", port, "up")
        ip = f"{SUBNET}.{host}"
        run("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", "eth0")
        run("ip", "-n", ns, "link", "set", "eth0", "up")
        self.ips[node] = ip
        return ip

    def argv(self, node: str, *argv: str) -> list[str]:
        """``argv`` run inside ``node``'s namespace."""
        return ["ip", "netns", "exec", self.ns(node), *argv]

    # -- faults -------------------------------------------------------------------------------

    def cut(self, node: str, others: Iterable[str]) -> None:
        """Drops every packet between ``node`` and each of ``others`` (both ways)."""
        for other in others:
            if (node, other) in self._cut or (other, node) in self._cut:
                continue
            for a, b in ((node, other), (other, node)):
                run("ip", "-n", self.ns(a), "route", "add", "blackhole", f"{self.ips[b]}/32")
            self._cut.add((node, other))

    def heal(self) -> None:
        """Removes every cut and brings every bridge port up."""
        for node, other in sorted(self._cut):
            for a, b in ((node, other), (other, node)):
                run("ip", "-n", self.ns(a), "route", "del", "blackhole", f"{self.ips[b]}/32",
                    check=False)  # fmt: skip
        self._cut.clear()
        for node in self.ips:
            run("ip", "-n", BRIDGE_NS, "link", "set", f"{PREFIX}{node}", "up", check=False)

    def isolate(self, node: str) -> None:
        """Sets the bridge side of ``node``'s veth down: cut from every other namespace."""
        run("ip", "-n", BRIDGE_NS, "link", "set", f"{PREFIX}{node}", "down")

    def close(self) -> None:
        """Removes every namespace (killing what runs inside) and lets another run go."""
        try:
            remove_all()
        finally:
            if self._lock is not None:
                self._lock.release()
                self._lock = None

    def root_is_clean(self) -> list[str]:
        """Interfaces of the root namespace with a prefixed name or an address of the subnet
        (empty: the test left nothing there)."""
        out = run("ip", "-o", "addr").stdout + run("ip", "-o", "link").stdout
        return [line for line in out.splitlines() if PREFIX in line or f"{SUBNET}." in line]
