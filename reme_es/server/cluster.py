"""A local multi-node cluster on 127.0.0.1 built from managed nodes (`node.start` per member).

Every member gets a fixed HTTP and transport port, the same `cluster.name`, the members' transport addresses as
seed hosts and the member names as initial cluster managers. Members are started concurrently (the first one
cannot become healthy before a quorum has joined). A killed member is restarted with the same ports and its
node folder's data. Used by the reliability tests (node SIGKILL, re-election, full-cluster restart) and by
`reme-es server cluster start|stop|status`, whose clusters are recorded in `clusters/<name>.json` below the reme-es
home (members `<name>-1`, `<name>-2`, ...; a restart keeps their ports, folders and data).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import ServerError
from . import node, secure
from .flavours import DEFAULT_HEAP, get_flavour
from .install import reme_es_home
from .probe import _http_json


def _port() -> int:
    """A loopback port chosen by the OS (away from the 920x range other nodes use)."""
    return node._free_port()


@dataclass
class Cluster:
    """Members of one local cluster: names, ports and the settings each member is (re)started with."""

    flavour: str
    names: list[str]
    http_ports: dict[str, int]
    transport_ports: dict[str, int]
    cluster_name: str
    heap: str = DEFAULT_HEAP
    extra: dict = field(default_factory=dict)
    snapshot_repo: str | None = None  # shared path.repo of every member
    secure: bool = False  # TLS and an admin user (server/secure.py): one CA, certificate and password for all

    def url(self, name: str) -> str:
        """HTTP(S) address of one member."""
        return f"{'https' if self.secure else 'http'}://127.0.0.1:{self.http_ports[name]}"

    @property
    def urls(self) -> list[str]:
        """HTTP addresses of every member, in member order."""
        return [self.url(n) for n in self.names]

    def settings(self, name: str) -> dict:
        """The node settings of one member."""
        engine = get_flavour(self.flavour).engine
        managers = "cluster.initial_cluster_manager_nodes" if engine == "opensearch" else "cluster.initial_master_nodes"
        return {
            "discovery.type": None,
            "cluster.name": self.cluster_name,
            "node.name": name,
            "transport.port": self.transport_ports[name],
            "discovery.seed_hosts": [f"127.0.0.1:{self.transport_ports[n]}" for n in self.names],
            managers: list(self.names),
            "node.processors": 1,
            **self.extra,
        }

    # ------------------------------------------------------------------------------- lifecycle

    def start_member(self, name: str, timeout: float = node.START_TIMEOUT_S) -> node.NodeInfo:
        """Start (or restart, keeping its data) one member and wait until it answers with yellow health.

        Right after a SIGKILL the kernel may hold the member's ports for a while (sockets of the dead process
        still closing), so a restart first waits until both ports can be bound again.
        """
        current = node.read_node(name)
        if current is None or not node._alive(current.pid):
            deadline = time.monotonic() + timeout
            ports = (self.http_ports[name], self.transport_ports[name])
            while not all(node._port_free(p) for p in ports):
                if time.monotonic() > deadline:
                    raise ServerError(f"ports {ports} of member {name!r} stayed taken for {timeout:.0f}s")
                time.sleep(0.5)
        if self.secure:
            info = secure.start(
                self.flavour,
                name,
                self.http_ports[name],
                self.heap,
                snapshot_repo=self.snapshot_repo,
                settings=self.settings(name),
                timeout=timeout,
            )
        else:
            info = node.start(
                self.flavour,
                name=name,
                http_port=self.http_ports[name],
                heap=self.heap,
                timeout=timeout,
                settings=self.settings(name),
                snapshot_repo=self.snapshot_repo,
            )
        if info.http_port != self.http_ports[name]:
            raise ServerError(f"member {name!r} runs on port {info.http_port}, expected {self.http_ports[name]}")
        return info

    def start(self, names: list[str] | None = None, timeout: float = node.START_TIMEOUT_S) -> None:
        """Start members concurrently (all by default) and wait until they form one cluster."""
        names = names or self.names
        if self.secure:
            secure.share(self.flavour, self.names)  # one CA, certificate and admin password for every member
        with ThreadPoolExecutor(len(names)) as pool:
            futures = [pool.submit(self.start_member, n, timeout) for n in names]
            errors = [exc for exc in (f.exception() for f in futures) if exc is not None]
        if errors:
            raise errors[0]
        self.wait(nodes=len(self.names), status="yellow", timeout=timeout)

    def kill(self, name: str) -> None:
        """SIGKILL one member's process group (no shutdown, no flush) and reap it."""
        info = node.read_node(name)
        if info is None:
            raise ServerError(f"member {name!r} was never started")
        try:
            os.killpg(info.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and node._alive(info.pid):
            try:
                os.waitpid(info.pid, os.WNOHANG)
            except ChildProcessError:
                pass
            time.sleep(0.05)
        if node._alive(info.pid):
            raise ServerError(f"member {name!r} (pid {info.pid}) survived SIGKILL")

    def stop(self) -> None:
        """Stop every member (SIGTERM, SIGKILL after a timeout); members already gone are skipped."""
        with ThreadPoolExecutor(len(self.names)) as pool:
            list(pool.map(lambda n: node.stop(n, timeout=30), self.names))

    def wipe(self) -> None:
        """Delete the members' node folders (data included); refuses while a member runs."""
        for name in self.names:
            info = node.read_node(name)
            if info is not None and node._alive(info.pid):
                raise ServerError(f"member {name!r} is running (pid {info.pid}); stop it before wiping")
            shutil.rmtree(node.node_dir(name), ignore_errors=True)

    # ------------------------------------------------------------------------------ inspection

    def get(self, path: str, names: list[str] | None = None, timeout: float = 10.0) -> dict | list:
        """GET a path from the first member (of `names`, default all) that answers."""
        last: Exception | None = None
        security = secure.credentials(self.names[0]) if self.secure else None
        for name in names or self.names:
            try:
                return _http_json(self.url(name) + path, timeout=timeout, security=security)
            except (OSError, ValueError) as exc:
                last = exc
        raise ServerError(f"no member answered GET {path}: {last}")

    def manager(self, names: list[str] | None = None) -> str:
        """Name of the elected cluster manager, as a live member reports it."""
        rows = self.get("/_cat/cluster_manager?format=json", names)
        return rows[0]["node"]

    def wait(self, nodes: int, status: str = "green", timeout: float = 120.0, names: list[str] | None = None) -> dict:
        """Wait until the cluster reports `status` (or better) with exactly `nodes` nodes; returns the health."""
        deadline = time.monotonic() + timeout
        health: dict | list | None = None
        query = f"/_cluster/health?wait_for_status={status}&wait_for_nodes={nodes}&timeout=5s"
        while time.monotonic() < deadline:
            try:
                health = self.get(query, names)
                if isinstance(health, dict) and not health.get("timed_out") and health.get("number_of_nodes") == nodes:
                    return health
            except (ServerError, urllib.error.HTTPError):
                pass
            time.sleep(0.5)
        raise ServerError(f"cluster not {status} with {nodes} nodes within {timeout:.0f}s; last health: {health}")


def make_cluster(flavour: str, names: list[str], heap: str = DEFAULT_HEAP, extra: dict | None = None) -> Cluster:
    """A cluster description with fresh loopback ports (nothing started yet)."""
    ports: set[int] = set()

    def fresh() -> int:
        while (p := _port()) in ports:
            pass
        ports.add(p)
        return p

    return Cluster(
        flavour=flavour,
        names=list(names),
        http_ports={n: fresh() for n in names},
        transport_ports={n: fresh() for n in names},
        cluster_name=f"reme-es-{names[0]}",
        heap=heap,
        extra=dict(extra or {}),
    )


# ---------------------------------------------------------------------- recorded clusters (the CLI's)


def _record(name: str) -> Path:
    return reme_es_home() / "clusters" / f"{name}.json"


def load_cluster(name: str) -> Cluster | None:
    """The cluster recorded under `name` by `start_local`, or None."""
    path = _record(name)
    return Cluster(**json.loads(path.read_text())) if path.is_file() else None


def _free_run(start: int, count: int) -> int:
    """The first port from `start` with `count` consecutive free ports."""
    for first in range(start, start + 200):
        if all(node._port_free(p) for p in range(first, first + count)):
            return first
    raise ServerError(f"no {count} consecutive free ports from {start} on 127.0.0.1; choose a first port with --port")


def _local(
    name: str, flavour: str | None, nodes: int, heap: str | None, port: int | None, secured: bool = False
) -> Cluster:
    """The recorded cluster `name` (its ports kept unless `port` moves them), or a new one of `nodes` members
    (`secured`: of the secured flavour of `flavour`)."""
    cluster = load_cluster(name)
    if cluster is not None and secured and not cluster.secure:
        raise ServerError(
            f"cluster {name!r} was made without --secure and holds its data so; start a secured cluster under another "
            f"--name (or stop it and remove {_record(name)} and its members' folders to make a new one)"
        )
    if cluster is not None and len(cluster.names) != nodes:
        raise ServerError(
            f"cluster {name!r} has {len(cluster.names)} members; start it with --nodes {len(cluster.names)}, or stop "
            f"it and remove {_record(name)} and its members' folders to make a new one"
        )
    if cluster is None:
        names = [f"{name}-{i}" for i in range(1, nodes + 1)]
        chosen = secure.secured_flavour(flavour) if secured else node.flavour_of(names[0], flavour)
        cluster = make_cluster(chosen, names)
        cluster.cluster_name, cluster.secure = f"reme-es-{name}", secured
        port = port or _free_run(9200, nodes)
    if flavour and (secure.secured_flavour(flavour) if cluster.secure else flavour) != cluster.flavour:
        raise ServerError(f"cluster {name!r} runs {cluster.flavour}; start it as that, or another cluster with --name")
    if port is not None:
        cluster.http_ports = {n: port + i for i, n in enumerate(cluster.names)}
    cluster.heap = heap or cluster.heap
    return cluster


def start_local(
    name: str = "cluster",
    flavour: str | None = None,
    nodes: int = 3,
    heap: str | None = None,
    port: int | None = None,
    snapshot_repo: str | os.PathLike | None = None,
    timeout: float = 300.0,
    secured: bool = False,
) -> Cluster:
    """Start (or restart) the local cluster `name` on consecutive HTTP ports from `port`, wait until its members
    have joined (yellow health), and record it. Members share `snapshot_repo` (default: the last start's) as their
    `path.repo`. `secured` makes a new cluster secured (server/secure.py); a secured cluster stays so."""
    cluster = _local(name, flavour, nodes, heap, port, secured)
    taken = [p for n, p in cluster.http_ports.items() if not _member_running(n) and not node._port_free(p)]
    if taken:
        raise ServerError(f"ports {taken} on 127.0.0.1 are taken; choose another first port with --port")
    if snapshot_repo is not None:  # else the folder of the last start, if any (repositories registered there)
        cluster.snapshot_repo = str(node.prepare_snapshot_repo(snapshot_repo))
    _record(name).parent.mkdir(parents=True, exist_ok=True)
    _record(name).write_text(json.dumps(asdict(cluster), indent=2))
    try:
        cluster.start(timeout=timeout)
    except ServerError as exc:
        hint = f"members that started keep running: reme-es server cluster stop --name {name}"
        raise ServerError(f"{exc}\n({hint})") from exc
    return cluster


def _member_running(name: str) -> bool:
    info = node.read_node(name)
    return info is not None and node._alive(info.pid)


def local_status(name: str = "cluster") -> dict:
    """Each member's pid, port and URL (running or not), and the cluster health as a running member reports it."""
    cluster = load_cluster(name)
    if cluster is None:
        return {"name": name, "running": False, "reason": "never started here"}
    members: list[dict[str, Any]] = []
    for member in cluster.names:
        info = node.read_node(member)
        running = info is not None and node._alive(info.pid)
        members.append(
            {
                "name": member,
                "running": running,
                "pid": info.pid if info is not None and running else None,
                "http_port": cluster.http_ports[member],
                "url": cluster.url(member),
            }
        )
    up = [m["name"] for m in members if m["running"]]
    view = {
        "name": name,
        "flavour": cluster.flavour,
        "running": bool(up),
        "cluster_name": cluster.cluster_name,
        "snapshot_repo": cluster.snapshot_repo,
        "security": secure.describe(cluster.names[0]) if cluster.secure else None,
        "urls": cluster.urls,
        "nodes": members,
    }
    if up:
        try:
            view["health"] = cluster.get("/_cluster/health", up)
        except ServerError as exc:
            view["reason"] = str(exc)
    return view


def stop_local(name: str = "cluster") -> list[str]:
    """Stop every member of the recorded cluster `name` (data kept); the members that were running."""
    cluster = load_cluster(name)
    if cluster is None:
        raise ServerError(f"no cluster {name!r} was started here (reme-es server cluster start --name {name})")
    running = [n for n in cluster.names if _member_running(n)]
    cluster.stop()
    return running


def forget_local(name: str) -> None:
    """Delete a stopped recorded cluster: its members' folders (data included) and its record."""
    cluster = load_cluster(name)
    if cluster is not None:
        cluster.wipe()
    _record(name).unlink(missing_ok=True)


__all__ = ["Cluster", "forget_local", "load_cluster", "local_status", "make_cluster", "start_local", "stop_local"]
