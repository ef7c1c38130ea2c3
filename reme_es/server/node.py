"""Managed local node: install a flavour from the cache, configure one node on 127.0.0.1, start, stop.

Layout below the reme-es home (`REME_ES_HOME`; default `~/.cache/reme-es`, `/var/cache/reme-es` for root):

    artifacts/                       files fetched from Maven Central, one copy per version
    installs/<flavour>-<version>/    unpacked distribution + assembled modules + plugins (read-only use; an
                                     Elasticsearch install also gets reme-es' test analysis plugin, see es_plugin)
    nodes/<name>/                    one node: config/, data/, logs/, tmp/, node.json (pid, port, url)

Installs are shared and reused across runs; every node has its own config and data. OpenSearch and
Elasticsearch refuse to run as root, so as root the JVM runs as the unprivileged user `reme-es`.

The node's parts live beside this module: `install` (assemble a distribution into the cache), `jvm` (the JDK,
JVM options), `config` (node settings, environment), `process` (ports, run user, launch, liveness), `info`
(NodeInfo, node.json, logs), `health` (waiting for health, red-index report). Their public names and the
private ones other modules use (`cluster`, tests) are importable from here.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path

from ..core.errors import ServerError
from .es_plugin import ensure_analysis_plugin
from .flavours import DEFAULT_FLAVOUR, DEFAULT_HEAP, Flavour, get_flavour
from .info import NodeInfo, NodeSecurity, credentials, describe, is_secured, log_tail, node_dir, read_node, write_node
from .install import install, optional_extended, reme_es_home
from .jvm import _absolute_jvm_paths, find_java  # noqa: F401 - _absolute_jvm_paths: tests/unit/test_launcher.py
from .knn_guard import ensure_knn_guard
from .node_config import _node_env, _write_node_config
from .probe import RED_SETTLE_SECONDS, _http_json, _wait_healthy
from .process import RUN_USER, _alive, _free_port, _launch, _port_free, _reap
from .snapshot_repo import prepare_snapshot_repo, repo_settings

log = logging.getLogger(__name__)

START_TIMEOUT_S = 180.0  # how long a start waits for the node to be healthy


def flavour_of(name: str, requested: str | None = None) -> str:
    """The flavour to start node `name` as: the one asked for; else the one the node was created with (a node made
    before the default moved to opensearch-3 keeps running 2.19 on its data); else `DEFAULT_FLAVOUR`, or
    `opensearch-2.19` where no Java 21+ is installed (OpenSearch 3 needs it; 2.19 runs on 17)."""
    if requested:
        return requested
    current = read_node(name)
    if current is not None:
        return current.flavour
    try:
        find_java(get_flavour(DEFAULT_FLAVOUR).java_min)
    except ServerError:
        log.info("no Java %s+ found: the managed node runs opensearch-2.19", get_flavour(DEFAULT_FLAVOUR).java_min)
        return "opensearch-2.19"
    return DEFAULT_FLAVOUR


def _holds_data(name: str) -> bool:
    data = node_dir(name) / "data"
    return data.is_dir() and any(data.iterdir())


def _running_as(name: str, flavour: str) -> NodeInfo | None:
    """Node `name` if it runs `flavour` already; refuses one that runs, or holds the data of, another flavour."""
    current = read_node(name)
    if current and _alive(current.pid):
        if current.flavour != flavour:
            raise ServerError(f"node {name!r} already runs {current.flavour}; stop it first (reme-es server stop)")
        return current
    if current and current.flavour != flavour and _holds_data(name):
        raise ServerError(
            f"node {name!r} holds {current.flavour} data; start it as {current.flavour} (--flavour "
            f"{current.flavour}), start {flavour} under another --name, or remove {node_dir(name)} to start "
            f"afresh (its indices are lost: re-index with `reme-es sync` or ReMe's start-up scan)"
        )
    return None


def start(
    flavour_name: str,
    name: str = "default",
    http_port: int | None = None,
    heap: str = DEFAULT_HEAP,
    timeout: float = START_TIMEOUT_S,
    settings: dict | None = None,
    config_files: dict[str, bytes] | None = None,
    security: NodeSecurity | None = None,
    snapshot_repo: str | os.PathLike | None = None,
) -> NodeInfo:
    """Install if needed, configure and start a node, and wait until it reports yellow health.

    A node whose only problem is a red index (say, one that cannot be allocated or whose shards the k-NN guard
    fails) starts anyway once its health has settled: `NodeInfo.red_indices` names them and the log says how to
    remove them.

    `settings` are extra node settings (e.g. `thread_pool.write.queue_size`) written to the node's config; a None
    value removes a default (e.g. `discovery.type` for a cluster node). `config_files` are written into the node's
    config folder before start (certificates, users files). With `security` the node is reached over HTTPS with
    those credentials and start-up waits for an authenticated 200 (not an open port). With `snapshot_repo` that
    folder is created, made writable by the run user and set as the node's `path.repo` (where `fs` snapshot
    repositories may live); without it the node keeps the folder of its last start, if any (a repository registered
    there stays usable), and a node never given one has no `path.repo`.
    """
    flavour = get_flavour(flavour_name)
    if security is None and is_secured(name):  # secure.py's material
        raise ServerError(
            f"node {name!r} is a secured node: start it with `reme-es server start --name {name}` (it starts secured), "
            f"and reach it with the credentials `reme-es server env --name {name}` prints"
        )
    if running := _running_as(name, flavour.name):
        return _same_repo(running, snapshot_repo)
    settings = repo_settings(settings, _snapshot_repo(name, snapshot_repo))  # a bad path fails before anything else
    http_port = _http_port(name, http_port, read_node(name))
    java_home, home = _installed(flavour)
    transport_port = _free_port()
    folder = node_dir(name)
    _write_node_config(flavour, folder, home, (http_port, transport_port), settings, config_files)
    env = _node_env(flavour, folder, java_home, heap)
    proc = _launch([str(home / "bin" / flavour.engine)], folder, home, env)
    info = NodeInfo(
        name=name,
        flavour=flavour.name,
        engine=flavour.engine,
        version=flavour.version,
        pid=proc.pid,
        http_port=http_port,
        transport_port=transport_port,
        home=str(home),
        dir=str(folder),
        scheme="https" if security else "http",
        snapshot_repo=settings["path.repo"][0] if settings and "path.repo" in settings else None,
    )
    write_node(info)
    _wait_healthy(info, proc, timeout, security, stop)
    return info


def _installed(flavour: Flavour) -> tuple[Path, Path]:
    """The JDK to run `flavour` with and its install, with reme-es' plugins in place."""
    java_home, _ = find_java(flavour.java_min, flavour.java_max)
    home = install(flavour)
    if flavour.engine == "elasticsearch":
        ensure_analysis_plugin(home, java_home, flavour.version)  # the .security index needs it (API keys)
    if flavour.knn_guard:
        ensure_knn_guard(home, java_home, flavour.version)  # refuse faiss/nmslib: no native libraries here
    return java_home, home


def _snapshot_repo(name: str, asked: str | os.PathLike | None) -> str | os.PathLike | None:
    """The snapshot repository folder to start with: the one asked for, else the one of the node's last start."""
    if asked is not None:
        return asked
    current = read_node(name)
    return current.snapshot_repo if current is not None else None


def _same_repo(running: NodeInfo, snapshot_repo: str | os.PathLike | None) -> NodeInfo:
    """The running node, unless it was asked for a snapshot repository it was not started with."""
    if snapshot_repo is not None and str(Path(snapshot_repo).expanduser().resolve()) != running.snapshot_repo:
        has = f"path.repo {running.snapshot_repo}" if running.snapshot_repo else "no path.repo"
        raise ServerError(
            f"node {running.name!r} already runs with {has}; stop it (reme-es server stop --name {running.name}) "
            f"and start it again with --snapshot-repo {snapshot_repo}"
        )
    return running


def _http_port(name: str, asked: int | None, current: NodeInfo | None) -> int:
    """The port to start on: the one asked for; else the node's port of its last start, so clients that kept its
    URL reach it again, never another node that took the port meanwhile; else the first free one from 9200."""
    if asked is None and current is not None:
        if not _port_free(current.http_port):
            raise ServerError(
                f"node {name!r} keeps its port {current.http_port} across restarts (clients keep its URL "
                f"{current.url}), but something else listens there now (another node?); stop that, or move this node "
                "with --port (clients then need the new URL)"
            )
        return current.http_port
    if asked is not None and not _port_free(asked):
        raise ServerError(f"port {asked} on 127.0.0.1 is taken; choose another with --port or stop what uses it")
    return asked or _free_port(9200)


def stop(name: str = "default", timeout: float = 60.0) -> bool:
    """Stop a node (SIGTERM, then SIGKILL after `timeout`); False if it was not running."""
    info = read_node(name)
    if info is None or not _alive(info.pid):
        return False
    try:
        os.killpg(info.pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(info.pid):
            return True
        _reap(info.pid)
        time.sleep(0.2)
    os.killpg(info.pid, signal.SIGKILL)
    _reap(info.pid)
    return True


def status(name: str = "default") -> dict:
    """Version, modules, plugins and capability flags of a running node."""
    info = read_node(name)
    if info is None:
        return {"name": name, "running": False, "reason": "never started"}
    if not _alive(info.pid):
        return {"name": name, "running": False, "flavour": info.flavour, "reason": "process not running"}
    secured = describe(name)
    security = credentials(name) if secured else None
    try:
        nodes = _http_json(f"{info.url}/_nodes/_local/plugins", security=security)["nodes"]
        health = _http_json(f"{info.url}/_cluster/health", security=security)
    except (OSError, ValueError) as exc:
        view = {"name": name, "running": True, "url": info.url, "healthy": False, "reason": str(exc)}
        return {**view, "security": secured} if secured else view
    node = next(iter(nodes.values()))
    modules = sorted(m["name"] for m in node.get("modules", []))
    plugins = {p["name"]: p["version"] for p in node.get("plugins", [])}
    return {
        "name": name,
        "running": True,
        "url": info.url,
        "flavour": info.flavour,
        "engine": info.engine,
        "version": node["version"],
        "health": health["status"],
        "pid": info.pid,
        "snapshot_repo": info.snapshot_repo,
        "security": secured,  # None, or the admin's name, password file and CA file
        "modules": modules,
        "plugins": plugins,
        "capabilities": server_capabilities(
            info.engine,
            node["version"],
            modules,
            list(plugins),
            _license_type(info.url, security) if "rank-rrf" in modules else None,
        ),
    }


def server_capabilities(
    engine: str, version: str, modules: list[str], plugins: list[str], license_type: str | None = None
) -> dict[str, bool]:
    """What a node can do, computed by the engine's dialect from its modules, plugins and license (the one place
    capabilities are judged); analyzers count as present with analysis-common."""
    from ..adapters.engines import dialect_class

    dialect = dialect_class(engine)
    node = {"version": version, "modules": [{"name": m} for m in modules], "plugins": [{"name": p} for p in plugins]}
    analysis = "analysis-common" in set(modules) | set(plugins)
    caps = dialect.capabilities(node, {"english": analysis, "cjk": analysis}, license_type)
    if dialect.uses_search_pipeline:
        flags = {"english_analyzer": caps.english_analyzer, "hybrid_pipeline": caps.hybrid_query}
        return {"knn": caps.knn, **flags, "rrf_processor": caps.rrf_processor}
    return {"knn": caps.knn, "hybrid_pipeline": False, "rrf_retriever": caps.rrf_retriever}


def _license_type(url: str, security: NodeSecurity | None = None) -> str:
    """The node's license type ("basic" when it has no license API)."""
    try:
        return _http_json(f"{url}/_license", security=security)["license"]["type"]
    except (OSError, ValueError, KeyError):
        return "basic"


__all__ = [
    "RED_SETTLE_SECONDS",
    "RUN_USER",
    "NodeInfo",
    "NodeSecurity",
    "find_java",
    "install",
    "log_tail",
    "node_dir",
    "optional_extended",
    "prepare_snapshot_repo",
    "read_node",
    "reme_es_home",
    "server_capabilities",
    "start",
    "status",
    "stop",
]
