"""Waiting for a started node's health, and the report of its red indices."""

from __future__ import annotations

import json
import logging
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from ..core.errors import ServerError
from .info import NodeInfo, NodeSecurity, log_tail, write_node

log = logging.getLogger("reme_es.server.node")  # the managed node's one logger

RED_SETTLE_SECONDS = 5.0  # red, with nothing initialising and no pending tasks, for this long: start-up is over

Stop = Callable[[str], Any]  # stops the node of that name (node.stop)


def _http_json(url: str, timeout: float = 5.0, security: NodeSecurity | None = None) -> dict:
    if security is None:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return json.loads(resp.read())
    import base64

    token = base64.b64encode(f"{security.username}:{security.password}".encode()).decode()
    request = urllib.request.Request(url, headers={"Authorization": f"Basic {token}"})
    context = ssl.create_default_context(cafile=security.ca_certs)
    with urllib.request.urlopen(request, timeout=timeout, context=context) as resp:
        return json.loads(resp.read())


def _cluster_health(url: str, security: NodeSecurity | None) -> dict:
    """The cluster health at `url` (a 408, not yellow within the wait, still carries the health)."""
    try:
        return _http_json(url, timeout=5, security=security)
    except urllib.error.HTTPError as exc:
        if exc.code != 408:  # 408: not yellow within the wait; the body is the health all the same
            raise
        return json.loads(exc.read())


def _settled_red(health: dict) -> bool:
    """Red with no shard initialising, none delayed and no pending task: nothing will change it."""
    return (
        health.get("status") == "red"
        and not health.get("initializing_shards")
        and not health.get("delayed_unassigned_shards")
        and not health.get("number_of_pending_tasks")
    )


def _wait_healthy(
    info: NodeInfo, proc: subprocess.Popen, timeout: float, security: NodeSecurity | None, stop: Stop
) -> None:
    deadline = time.monotonic() + timeout
    last_error = "no answer"
    url = f"{info.url}/_cluster/health?wait_for_status=yellow&timeout=2s"
    red_since: float | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerError(
                f"{info.flavour} node {info.name!r} exited with code {proc.returncode} during start-up. "
                f"Last log lines:\n{log_tail(info.name)}"
            )
        try:
            health = _cluster_health(url, security)
            if health.get("status") in ("yellow", "green"):
                _check_node_name(info, security, stop)
                return
            red_since = (red_since or time.monotonic()) if _settled_red(health) else None
            if red_since is not None and time.monotonic() - red_since >= RED_SETTLE_SECONDS:
                _check_node_name(info, security, stop)
                _record_red_indices(info, security)
                return
        except (OSError, ValueError, KeyError, urllib.error.HTTPError) as exc:
            last_error = f"{type(exc).__name__}: {exc}"
        time.sleep(0.5)
    stop(info.name)
    raise ServerError(
        f"{info.flavour} node {info.name!r} did not become healthy within {timeout:.0f}s ({last_error}). "
        f"Last log lines:\n{log_tail(info.name)}"
    )


def _record_red_indices(info: NodeInfo, security: NodeSecurity | None) -> None:
    """Record the node's red indices in node.json and log how to remove each."""
    info.red_indices = _red_indices(info, security)
    write_node(info)
    for line in info.red_index_advice():
        log.warning("%s node %r: %s", info.flavour, info.name, line)


def _check_node_name(info: NodeInfo, security: NodeSecurity | None, stop: Stop) -> None:
    nodes = _http_json(f"{info.url}/_nodes/_local", timeout=5, security=security)["nodes"]
    if next(iter(nodes.values()))["name"] != info.name:
        stop(info.name)
        raise ServerError(
            f"port {info.http_port} is answered by another node than {info.name!r}; "
            "stop it or choose another port with --port"
        )


def _red_indices(info: NodeInfo, security: NodeSecurity | None) -> dict[str, str]:
    """The node's red indices, each with the reason its first unassigned primary gives."""
    health = _http_json(f"{info.url}/_cluster/health?level=indices", timeout=5, security=security)
    red = sorted(name for name, h in health.get("indices", {}).items() if h.get("status") == "red")
    return {index: _unassigned_reason(info, index, security) for index in red}


def _unassigned_reason(info: NodeInfo, index: str, security: NodeSecurity | None) -> str:
    """Why `index`'s first unassigned primary is unassigned (allocation explain, else the shard's reason)."""
    reason = "a primary shard is unassigned"
    try:
        shards = _http_json(
            f"{info.url}/_cat/shards/{index}?format=json&h=shard,prirep,state,unassigned.reason",
            timeout=5,
            security=security,
        )
        shard = next((s for s in shards if s.get("prirep") == "p" and s.get("state") == "UNASSIGNED"), None)
        if shard is not None:
            explain = _post_json(
                f"{info.url}/_cluster/allocation/explain",
                {"index": index, "shard": int(shard["shard"]), "primary": True},
                security,
            )
            details = explain.get("unassigned_info", {}).get("details")
            if not details:  # e.g. an allocation filter no node matches: the deciders say which
                deciders = [d for n in explain.get("node_allocation_decisions", []) for d in n.get("deciders", [])]
                said = [explain.get("allocate_explanation"), *(d.get("explanation") for d in deciders[:1])]
                details = ": ".join(x for x in said if x)
            reason = " ".join(str(details or shard.get("unassigned.reason") or reason).split())[:1000]
    except (OSError, ValueError, KeyError, urllib.error.HTTPError):
        pass
    return reason


def _post_json(url: str, body: dict, security: NodeSecurity | None) -> dict:
    headers = {"Content-Type": "application/json"}
    context = None
    if security is not None:
        import base64

        token = base64.b64encode(f"{security.username}:{security.password}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
        context = ssl.create_default_context(cafile=security.ca_certs)
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=5, context=context) as resp:
        return json.loads(resp.read())
