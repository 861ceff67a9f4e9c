"""The fault loop's cluster: 3 controllers, a name server and 3 brokers of group broker-a in
controller mode, and the client namespace's load and agent, each process in its own namespace
(:mod:`netns`), started as ``ip netns exec rpf-<node> <venv>/bin/rocketpy ...``, its output in
``<work>/logs/<node>.log`` (a restart appends)."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from netns import Network

# tests/ holds the servers' shared settings (the loop runs as a script from tests/fault).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from servers import HOST_DISK_SETTINGS

BIN = Path(sys.executable).parent
ROCKETPY = str(BIN / "rocketpy")
CLIENT = str(Path(__file__).resolve().parent / "client.py")
TOPIC, QUEUES = "FaultTopic", 4
CONTROLLERS = {"c0": 11, "c1": 12, "c2": 13}
BROKERS = {"b0": 21, "b1": 22, "b2": 23}
NAMESRV, CLIENT_NODE = ("ns", 2), ("cli", 100)
CONTROLLER_PORT, NAMESRV_PORT, BROKER_PORT, HA_PORT = 9878, 9876, 10911, 10912

#: Controller mode with SYNC acks from the whole SyncStateSet, small store files, the host
#: disk's fullness ignored. Every period and timeout — heartbeats, their timeout, replica-info
#: polls, SyncStateSet checks, the controllers' scans — keeps rocketpy's default unless the
#: loop is given others (`--broker-set`, `--controller-set`): the failover times it measures
#: are those of a default set-up.
BROKER_KEYS = {
    "brokerClusterName": "rpf",
    "brokerName": "broker-a",
    "brokerRole": "SLAVE",
    "brokerId": "-1",
    "enableControllerMode": "true",
    "allAckInSyncStateSet": "true",
    **HOST_DISK_SETTINGS,
    "mapedFileSizeCommitLog": str(4 << 20),
    "mapedFileSizeConsumeQueue": "60000",
    "maxHashSlotNum": "10000",
    "maxIndexNum": "40000",
}
CONTROLLER_KEYS = {
    "controllerDLegerGroup": "rpf",
    "electionWarmUpMillis": "3000",
}


class Proc:
    """One server process in a namespace: started, killed, paused, restarted."""

    def __init__(self, net: Network, node: str, argv: list[str], logs: Path) -> None:
        self.net, self.node, self.argv = net, node, argv
        self.log_path = logs / f"{node}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.paused = False

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            log.write(f"==== start {time.strftime('%H:%M:%S')} {' '.join(self.argv)}\n".encode())
            log.flush()
            env = {**os.environ, "PYTHONUNBUFFERED": "1"}
            self.proc = subprocess.Popen(
                self.net.argv(self.node, *self.argv), stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env=env, start_new_session=True,
            )  # fmt: skip
        self.paused = False

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        if self.alive:
            assert self.proc is not None
            os.kill(self.proc.pid, sig)  # `ip netns exec` execs: this is rocketpy's pid
            self.paused = sig == signal.SIGSTOP or (self.paused and sig != signal.SIGCONT)

    def kill(self) -> None:
        """kill -9 (continued first if stopped), and reaped."""
        if self.proc is None:
            return
        if self.alive:
            os.kill(self.proc.pid, signal.SIGCONT)
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self.paused = False
        self._note(f"killed (exit {self.proc.returncode})")

    def stop(self) -> None:
        """SIGTERM, and SIGKILL after 10 s."""
        if not self.alive:
            return
        assert self.proc is not None
        self.signal(signal.SIGCONT)
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.kill()

    def _note(self, text: str) -> None:
        with open(self.log_path, "a") as log:
            log.write(f"==== {time.strftime('%H:%M:%S')} {text}\n")

    def wait_log(self, needle: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.log_path.read_text(errors="replace").split("==== start")[-1]:
            if not self.alive:
                raise RuntimeError(f"{self.node} exited: {self.tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.node}: no {needle!r} in {timeout} s: {self.tail()}")
            time.sleep(0.05)

    def tail(self, lines: int = 40) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


class Agent:
    """The client namespace's agent (``client.py agent``): one request, one answer, each
    bounded by a timeout (a hung agent is killed and started again)."""

    def __init__(self, net: Network, namesrv: str, logs: Path) -> None:
        self.argv = net.argv(
            "cli", sys.executable, CLIENT, "agent", "--namesrv", namesrv
        )  # fmt: skip
        self.stderr: TextIO = open(logs / "agent.log", "a")  # noqa: SIM115
        self.proc: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
            text=True, bufsize=1, start_new_session=True,
        )  # fmt: skip
        self.proc = proc
        self._read(30)
        return proc

    def _read(self, timeout: float) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.close()
            raise TimeoutError(f"the agent gave no answer in {timeout} s")
        return dict(json.loads(line))

    def ask(self, op: str, timeout: float = 15, **req: Any) -> dict[str, Any]:
        proc = self.proc if self.proc is not None and self.proc.poll() is None else self._start()
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"op": op, **req}) + "\n")
        proc.stdin.flush()
        return self._read(timeout)

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)
            self.proc = None


class Cluster:
    """The topology and its processes, under ``work``."""

    def __init__(self, work: Path, broker_keys: dict[str, str], controller_keys: dict[str, str]):
        self.work, self.logs = work, work / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.net = Network()
        self.ips: dict[str, str] = {}
        try:
            for node, host in [*CONTROLLERS.items(), *BROKERS.items(), NAMESRV, CLIENT_NODE]:
                self.ips[node] = self.net.add(node, host)
        except BaseException:
            self.net.close()
            raise
        self.controller_addrs = [f"{self.ips[c]}:{CONTROLLER_PORT}" for c in CONTROLLERS]
        self.namesrv = f"{self.ips['ns']}:{NAMESRV_PORT}"
        self.procs: dict[str, Proc] = {}
        peers = ";".join(f"n{c[1]}-{self.ips[c]}:{CONTROLLER_PORT}" for c in CONTROLLERS)
        for c in CONTROLLERS:
            keys = {**CONTROLLER_KEYS, **controller_keys, "controllerDLegerPeers": peers,
                    "controllerDLegerSelfId": f"n{c[1]}",
                    "controllerStorePath": str(work / c / "controller")}  # fmt: skip
            self.procs[c] = Proc(self.net, c, [ROCKETPY, "controller", "-c", self._conf(c, keys)],
                                 self.logs)  # fmt: skip
        ns_argv = [ROCKETPY, "namesrv", "--host", self.ips["ns"], "--port", str(NAMESRV_PORT)]
        self.procs["ns"] = Proc(self.net, "ns", ns_argv, self.logs)
        for b in BROKERS:
            ip = self.ips[b]
            keys = {**BROKER_KEYS, **broker_keys, "brokerIP1": ip, "bindAddress": ip,
                    "namesrvAddr": self.namesrv, "listenPort": str(BROKER_PORT),
                    "haListenPort": str(HA_PORT), "storePathRootDir": str(self.store(b)),
                    "controllerAddr": ";".join(self.controller_addrs)}  # fmt: skip
            self.procs[b] = Proc(self.net, b, [ROCKETPY, "broker", "-c", self._conf(b, keys)],
                                 self.logs)  # fmt: skip
        self.broker_of = {f"{self.ips[b]}:{BROKER_PORT}": b for b in BROKERS}
        self.controller_of = {a: c for a, c in zip(self.controller_addrs, CONTROLLERS, strict=True)}
        self.agent = Agent(self.net, self.namesrv, self.logs)
        self.load: Proc | None = None

    def _conf(self, node: str, keys: dict[str, str]) -> str:
        path = self.work / node / f"{node}.conf"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{k}={v}\n" for k, v in keys.items()))
        return str(path)

    def store(self, broker: str) -> Path:
        return self.work / broker / "store"

    def start(self, node: str) -> None:
        proc = self.procs[node]
        proc.start()
        ready = {"ns": "name server listening"}.get(node, "listening on")
        proc.wait_log(ready, 30)

    def start_all(self) -> None:
        for node in [*CONTROLLERS, "ns", *BROKERS]:
            self.procs[node].start()
        for node in [*CONTROLLERS, "ns", *BROKERS]:
            self.procs[node].wait_log("listening on", 30)

    def start_load(self, run: str, interval: float) -> None:
        argv = [sys.executable, CLIENT, "load", "--namesrv", self.namesrv, "--topic", TOPIC,
                "--run", run, "--out", str(self.work), "--interval", str(interval)]  # fmt: skip
        self.load = Proc(self.net, "cli", argv, self.logs)
        self.load.start()
        self.load.wait_log("load started", 30)

    def stop_load(self) -> None:
        if self.load is not None:
            self.load.stop()

    def state(self) -> dict[str, Any]:
        """The agent's ``state``; ``{}`` when it could not answer in time."""
        try:
            return self.agent.ask("state", controllers=self.controller_addrs, topic=TOPIC)
        except TimeoutError:
            return {}

    def controller_leader(self) -> str | None:
        """The controller leader's node, as ``rocketpy admin getControllerMetaData`` run in the
        client namespace prints it (asking each live controller in turn)."""
        for addr in self.controller_addrs:
            try:
                out = subprocess.run(
                    self.net.argv("cli", ROCKETPY, "admin", "getControllerMetaData", "-a", addr),
                    capture_output=True, text=True, timeout=15,
                ).stdout  # fmt: skip
            except subprocess.TimeoutExpired:
                continue
            for line in out.splitlines():
                if line.startswith("#ControllerLeaderAddress\t") and line.split("\t")[1]:
                    return self.controller_of.get(line.split("\t")[1].strip())
        return None

    def logs_text(self, lines: int = 60) -> str:
        parts = []
        for path in sorted(self.logs.glob("*.log")):
            text = path.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"---- {path.name} (last {lines} lines)\n" + "\n".join(text))
        return "\n".join(parts)

    def close(self) -> None:
        self.stop_load()
        self.agent.close()
        for proc in self.procs.values():
            try:
                proc.stop()
            except Exception as e:  # teardown goes on: the namespaces go, with what is left
                print(f"stopping {proc.node}: {e}", file=sys.stderr)
        self.agent.stderr.close()
        self.net.close()
