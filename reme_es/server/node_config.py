"""A node's config folder: settings file, extra config files, JVM options, and its environment."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from ..core.runtime import runtime
from .flavours import Flavour
from .jvm import _absolute_jvm_paths


def search_slices(processors: int | None) -> int | None:
    """The slices an OpenSearch node cuts a shard's segments into for one search (concurrent segment search; in 3.x's
    default `auto` mode the k-NN plugin asks for it on k-NN queries). The engine's own default is half the node's
    processors, at most 4: one slice, so no concurrency, on a 2-core machine. A managed node gets at least 2 where it
    has 2 processors or more (bench/perf/concurrent_segments.py: a k-NN search over the segments a load leaves 1.2-1.6x
    faster); None (the engine's default) on one processor."""
    if not processors or processors < 2:
        return None
    return min(4, max(2, processors // 2))


def _node_settings(
    flavour: Flavour, folder: Path, http_port: int, transport_port: int, extra: dict | None = None
) -> str:
    settings = {
        "cluster.name": f"reme-es-{folder.name}",
        "node.name": folder.name,
        "path.data": str(folder / "data"),
        "path.logs": str(folder / "logs"),
        "network.host": "127.0.0.1",
        "http.port": http_port,
        "transport.port": transport_port,
        "discovery.type": "single-node",
        "cluster.routing.allocation.disk.threshold_enabled": False,
    }
    if flavour.engine == "elasticsearch":
        settings["xpack.security.enabled"] = False
    else:
        processors = (extra or {}).get("node.processors") or os.cpu_count()
        settings["search.concurrent.max_slice_count"] = search_slices(processors)
    for key, value in (extra or {}).items():
        settings[key] = value
    settings = {k: v for k, v in settings.items() if v is not None}  # e.g. a cluster node drops discovery.type
    return "".join(f"{k}: {json.dumps(v)}\n" for k, v in settings.items())


def _write_node_config(
    flavour: Flavour,
    folder: Path,
    home: Path,
    ports: tuple[int, int],
    settings: dict | None = None,
    config_files: dict[str, bytes] | None = None,
) -> None:
    """Fresh config/ from the install (settings, `config_files`, JVM options in the node folder); data/, logs/, tmp/."""
    http_port, transport_port = ports
    shutil.rmtree(folder / "config", ignore_errors=True)
    shutil.copytree(home / "config", folder / "config")
    for sub in ("data", "logs", "tmp"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    conf_name = "opensearch.yml" if flavour.engine == "opensearch" else "elasticsearch.yml"
    (folder / "config" / conf_name).write_text(_node_settings(flavour, folder, http_port, transport_port, settings))
    for rel, content in (config_files or {}).items():
        target = folder / "config" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    jvm_options = folder / "config" / "jvm.options"
    jvm_options.write_text(_absolute_jvm_paths(jvm_options.read_text(), folder, home))


def _node_env(flavour: Flavour, folder: Path, java_home: Path, heap: str) -> dict[str, str]:
    """The environment the start script runs with: this JDK, this config, this heap (then `REME_ES_JAVA_OPTS`, if
    set), tmp in the node folder."""
    prefix = "OPENSEARCH" if flavour.engine == "opensearch" else "ES"
    extra = runtime().java_opts
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(folder),
        "LANG": "C.UTF-8",
        f"{prefix}_JAVA_HOME": str(java_home),
        f"{prefix}_PATH_CONF": str(folder / "config"),
        f"{prefix}_JAVA_OPTS": f"-Xms{heap} -Xmx{heap}" + (f" {extra}" if extra else ""),
        f"{prefix}_TMPDIR": str(folder / "tmp"),
    }
