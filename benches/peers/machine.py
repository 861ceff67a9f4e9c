"""What the numbers were measured on: the machine, and each server's and client's version."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import tempfile
from pathlib import Path

from benches.peers.servers import SERVERS

#: The Python distributions of the clients, by system.
CLIENT_PACKAGES = {
    "rocketpy": ("rocketpy-mq",),
    "nats": ("nats-py",),
    "redis": ("redis", "hiredis"),
}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return 0.0


def _file_system(path: str) -> str:
    """The type of the file system holding ``path`` (the longest mount point above it)."""
    best, kind = "", "unknown"
    try:
        for line in Path("/proc/mounts").read_text().splitlines():
            parts = line.split()
            mount = parts[1]
            inside = path == mount or path.startswith(mount.rstrip("/") + "/")
            if len(parts) > 2 and inside and len(mount) >= len(best):
                best, kind = mount, parts[2]
    except OSError:
        pass
    return kind


def machine() -> dict[str, object]:
    """The machine: cores, CPU model, kernel, memory, where the data directories are."""
    data = tempfile.gettempdir()
    return {
        "nproc": len(os.sched_getaffinity(0)),
        "cpu_model": _cpu_model(),
        "kernel": f"{platform.system()} {platform.release()}",
        "memory_gib": _memory_gib(),
        "python": platform.python_version(),
        "data_dir": data,
        "data_dir_fs": _file_system(os.path.realpath(data)),
    }


def _package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _commit() -> str:
    """This repository's commit (``+dirty`` with uncommitted changes), if git can tell."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty.stdout.strip() else "")


def versions(systems: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """Each system's server version and client library versions (and rocketpy's commit)."""
    out = {
        system: {
            "server": SERVERS[system].version(),
            **{pkg: _package_version(pkg) for pkg in CLIENT_PACKAGES[system]},
        }
        for system in systems
    }
    if "rocketpy" in out:
        out["rocketpy"]["commit"] = _commit()
    return out
