"""The cluster settings Python and TypeScript share, read from `engine_settings.json` (package data).

One file holds what both halves must agree on: the vector mapping of each engine, the HNSW defaults, the retry
policy (statuses, tries, backoff, deadline), the cluster check, the engine-detection signal, the k-NN candidate rule
and the index-prefix rule. `memorie/src/settings.ts` reads the
same file (copied into the npm package by its build), and both test suites check it against one golden file.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

SETTINGS: dict[str, Any] = json.loads(resources.files("reme_es").joinpath("engine_settings.json").read_text())

HNSW_M: int = SETTINGS["hnsw"]["m"]
HNSW_EF_CONSTRUCTION: int = SETTINGS["hnsw"]["ef_construction"]
RETRYABLE_STATUS: frozenset[int] = frozenset(SETTINGS["retry"]["statuses"])
REQUEST_TRY_TIMEOUT_S: float = float(SETTINGS["retry"]["request"]["try_timeout_s"])  # one request's try, by default
CLUSTER_CHECK: dict[str, Any] = SETTINGS["cluster_check"]
INDEX_PREFIX_RE: re.Pattern[str] = re.compile(SETTINGS["index_prefix"]["pattern"])
DEFAULT_ENGINE = "auto"  # ask the node (`adapters.engines.resolve_engine`), unless a registered dialect is named
CALIBRATION_BODIES: dict[str, Any] = SETTINGS["knn_calibration"]["bodies"]  # the dialects' calibration requests
REFRESH_AFTER_S: float = SETTINGS["refresh"]["after_ms"] / 1000  # the deferred refresh's delay, by default
OPTIMIZE_AFTER_LOAD: bool = SETTINGS["optimize_job"]["enabled"]  # the optimize job after a large load, by default


def knn_candidates(k: int) -> int:
    """How many candidates an HNSW search keeps per segment for the k nearest: factor x k, within [min, max]."""
    rule = SETTINGS["knn_candidates"]
    return min(rule["max"], max(rule["min"], rule["factor"] * k))


def vector_mapping(kind: str, dims: int, m: int = HNSW_M, ef_construction: int = HNSW_EF_CONSTRUCTION) -> dict:
    """The vector field mapping of one engine family (`opensearch`, `elasticsearch`) with its placeholders filled."""
    values = {"$dims": dims, "$m": m, "$ef_construction": ef_construction}

    def fill(node: Any) -> Any:
        if isinstance(node, dict):
            return {key: fill(value) for key, value in node.items()}
        if isinstance(node, list):
            return [fill(value) for value in node]
        return values.get(node, node) if isinstance(node, str) else node

    return fill(SETTINGS["vector_mapping"][kind])


def valid_prefix(prefix: object) -> bool:
    """Whether an index prefix follows the shared rule (1-200 of lowercase letters, digits, '-', '_')."""
    return isinstance(prefix, str) and INDEX_PREFIX_RE.fullmatch(prefix) is not None


def detected_engine(node: dict) -> str:
    """The engine family a `_nodes/_local` entry comes from, by the shared detection signal (`build_flavor`)."""
    rule = SETTINGS["engine_detection"]
    return rule["present"] if rule["field"] in node else rule["absent"]
