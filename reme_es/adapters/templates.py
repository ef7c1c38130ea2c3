"""Index bodies from `reme_es/index_templates/*.json`, rendered for one dialect and server.

The JSON files are the single source of truth for field names and types. Placeholders: `"$metadata"` (the
dialect's flat metadata type), `"$vector"` (the dialect's vector field, or removed when vectors are off).
Analyzers the server lacks (the Elasticsearch integ-test node has no analysis-common) fall back to
`standard`, and the choice is recorded in the index's `_meta` so a later diff can tell.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Protocol

from ..core.models import Capabilities
from ..core.options import IndexOptions

INDEX_KINDS = ("chunks", "files", "links")  # the workspace content of an index set
REGISTRY_KIND = "workspaces"  # one doc per workspace of the set: which folder writes it (`reme_es.store.workspaces`)
SET_KINDS = (*INDEX_KINDS, REGISTRY_KIND)


@cache
def _raw(name: str) -> str:
    return resources.files("reme_es").joinpath("index_templates", f"{name}.json").read_text()


def load_template(name: str) -> dict:
    """A fresh copy of one template file."""
    return json.loads(_raw(name))


class IndexDialect(Protocol):
    """What rendering an index needs from a dialect (`reme_es.adapters.dialect.Dialect` offers it)."""

    metadata_type: str

    def vector_mapping(self, dims: int, m: int, ef_construction: int) -> dict: ...

    def index_settings(self, with_vectors: bool, caps: Capabilities | None = None) -> dict: ...


def render_index(kind: str, dialect: IndexDialect, caps: Capabilities, options: IndexOptions) -> dict:
    """The create-index body of one kind (chunks, files, links) for this dialect and server."""
    body = load_template(kind)
    version = body.pop("version")
    settings = body["settings"]
    settings["index"].update(replica_settings(options))
    if kind != REGISTRY_KIND and options.shards is not None:  # the registry: one small doc per workspace, one shard
        settings["index"]["number_of_shards"] = options.shards
    props = body["mappings"]["properties"]
    for name, spec in list(props.items()):
        if spec == "$vector":
            if options.dims:
                props[name] = dialect.vector_mapping(options.dims, options.hnsw_m, options.hnsw_ef_construction)
            else:
                del props[name]
        elif isinstance(spec, dict) and spec.get("type") == "$metadata":
            props[name] = {"type": dialect.metadata_type}
    fallbacks = _fit_analysis(settings.get("analysis", {}), caps)
    extra = dialect.index_settings(bool(options.dims) and kind == "chunks", caps)
    for key, value in extra.get("index", {}).items():
        settings["index"][key] = value
    body["mappings"]["_meta"] = {"reme_es": {"kind": kind, "template_version": version, "analyzers": fallbacks}}
    return body


def template_shards() -> int:
    """The primary shards the templates give an index when the options name none."""
    return int(load_template("chunks")["settings"]["index"]["number_of_shards"])


def replica_settings(options: IndexOptions) -> dict:
    """The index settings of `options`' replicas: a fixed count, or one copy wherever a second node exists."""
    if options.replicas is None:
        return {"auto_expand_replicas": load_template("chunks")["settings"]["index"]["auto_expand_replicas"]}
    return {"number_of_replicas": options.replicas, "auto_expand_replicas": "false"}


def _fit_analysis(analysis: dict, caps: Capabilities) -> dict[str, str]:
    """Fit the template's analysis to the server in place; returns what changed, per analyzer.

    An analyzer type the server lacks (english, cjk: analysis-common) becomes `standard`. A custom analyzer keeps the
    filters the server has: the stemmers need analysis-common (probed as the english analyzer), `pattern_capture`
    its own probe (the Elasticsearch test node gets it from reme-es' test analysis plugin); `lowercase` and `stop`
    are core. A custom analyzer left with its link splitting but without its stemmers is the standard analyzer plus
    link splitting; one that loses the link splitting too becomes `standard`.
    """
    filters = analysis.get("filter", {})
    have = {"stemmer": caps.english_analyzer, "pattern_capture": caps.pattern_capture_filter}
    missing = {name for name, spec in filters.items() if not have.get(spec["type"], True)}
    analyzers = analysis.get("analyzer", {})
    fallbacks = {}
    for name, spec in analyzers.items():
        wanted = spec["type"]
        if wanted == "custom":
            lost = [f for f in spec.get("filter", []) if f in missing]
            if not lost:
                continue
            kept = [f for f in spec["filter"] if f not in missing]
            if any(filters.get(f, {}).get("type") == "pattern_capture" for f in kept):
                spec["filter"] = [f for f in kept if filters.get(f, {}).get("type") != "stop"]
                fallbacks[name] = "custom -> standard + link parts"
            else:
                analyzers[name] = {"type": "standard"}
                fallbacks[name] = "custom -> standard"
        elif not {"english": caps.english_analyzer, "cjk": caps.cjk_analyzer}.get(wanted, True):
            analyzers[name] = {"type": "standard"}
            fallbacks[name] = f"{wanted} -> standard"
    used = {f for spec in analyzers.values() for f in spec.get("filter", [])}
    for name in list(filters):
        if name not in used:
            del filters[name]
    if "filter" in analysis and not filters:
        del analysis["filter"]
    return fallbacks
