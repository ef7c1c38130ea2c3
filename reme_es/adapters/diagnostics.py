"""What `reme-es doctor` reads from a cluster, typed: the REST calls and answer layouts of the checks, in one place.

Above `adapters/` the doctor (`reme_es.store.doctor`) speaks in `ClusterFacts`, `IndexFacts` and `SnapshotFacts`;
no path or answer shape leaves this module. Every call is a read: the doctor changes nothing.

The indices looked at are those reme-es made, told by their `_meta.reme_es.kind` (ReMe's index sets: chunks, files,
links, workspaces; Memorie's: memorie-memories, memorie-vectors, memorie-relations), found with one mapping request
filtered to `_meta` (small on a large cluster).
"""

from __future__ import annotations

import datetime as dt
import urllib.parse
from dataclasses import dataclass, field

from ..core.errors import AuthError, ConfigError, RequestFailed
from . import lookups as q
from .documents import or_none
from .port import IndexPort
from .security_admin import SecurityAdmin

DEFAULT_MAX_SHARDS_PER_NODE = 1000  # both engines' default of `cluster.max_shards_per_node`


@dataclass
class IndexFacts:
    """One concrete index reme-es made: what its `_meta` records, its replicas and its documents."""

    name: str
    alias: str  # the alias in front of it ("" when none)
    kind: str  # `_meta.reme_es.kind`: chunks, files, links, workspaces, memorie-memories, ...
    template_version: int | None
    meta: dict  # the whole `_meta.reme_es`
    has_vectors: bool  # an `embedding` field is mapped
    replicas: int = 0
    auto_expand: str = "false"
    docs: int = 0
    deleted: int = 0
    segments: int = 0
    with_vectors: int | None = None  # documents with an embedding (chunks indices with vectors only)

    @property
    def memorie(self) -> bool:
        """Whether Memorie's TypeScript package made it."""
        return self.kind.startswith("memorie-")


@dataclass
class SnapshotFacts:
    """The last snapshot of a repository that holds one of the indices looked at."""

    repository: str
    name: str
    state: str
    start: dt.datetime | None
    indices: list[str] = field(default_factory=list)


@dataclass
class SecurityFacts:
    """Whether the cluster enforces document-level security, and why not when it does not."""

    enabled: bool
    dls: bool  # document-level security usable (Elasticsearch: a licence that has it)
    detail: str = ""


@dataclass
class ClusterFacts:
    """The cluster-wide facts of the checks."""

    engine: str
    status: str | None  # green, yellow, red; None where the service has no health API
    nodes: int
    data_nodes: int
    active_shards: int
    unassigned_shards: int
    max_shards_per_node: int
    unassigned: list[dict] = field(default_factory=list)  # index, shard, prirep, reason (of the indices looked at)


class Diagnostics:
    """The read-only calls of `reme-es doctor` over a port (every workspace: the port is used unscoped)."""

    def __init__(self, port: IndexPort):
        self.port = port.unscoped()
        self.transport = self.port.transport
        self.engine = port.dialect.engine

    async def cluster(self, pattern: str) -> ClusterFacts:
        """Health, shard counts, the shard limit per node, and the unassigned shards of indices matching `pattern`."""
        health = await self.port.cluster_health() or {}
        unassigned = await self.port.unassigned_shards(pattern) if health.get("unassigned_shards") else []
        return ClusterFacts(
            engine=self.engine,
            status=health.get("status"),
            nodes=int(health.get("number_of_nodes") or 1),
            data_nodes=int(health.get("number_of_data_nodes") or health.get("number_of_nodes") or 1),
            active_shards=int(health.get("active_shards") or 0),
            unassigned_shards=int(health.get("unassigned_shards") or 0),
            max_shards_per_node=await self._max_shards_per_node(),
            unassigned=[
                {
                    "index": r.get("index"),
                    "shard": r.get("shard"),
                    "prirep": r.get("prirep"),
                    "reason": r.get("unassigned.reason"),
                }
                for r in unassigned
            ],
        )

    async def _max_shards_per_node(self) -> int:
        params = {"include_defaults": "true", "flat_settings": "true", "filter_path": r"*.cluster\.max_shards_per_node"}
        try:
            answer = await self.transport.request("GET", "/_cluster/settings", params=params) or {}
        except RequestFailed:
            return DEFAULT_MAX_SHARDS_PER_NODE
        for scope in ("transient", "persistent", "defaults"):  # the order the cluster applies them in
            if (value := (answer.get(scope) or {}).get("cluster.max_shards_per_node")) is not None:
                return int(value)
        return DEFAULT_MAX_SHARDS_PER_NODE

    async def indices(self, pattern: str) -> list[IndexFacts]:
        """Every index matching `pattern` that reme-es made (a `_meta.reme_es.kind`), with replicas, docs, deleted
        docs and segments of its primaries; chunks indices with vectors count their chunks with an embedding."""
        params = {"filter_path": "*.mappings._meta,*.mappings.properties.embedding.type", "expand_wildcards": "open"}
        mappings = await or_none(self.transport.request("GET", f"/{_q(pattern)}/_mapping", params=params)) or {}
        found: dict[str, IndexFacts] = {}
        for name, body in mappings.items():
            mapping = body.get("mappings") or {}
            meta = (mapping.get("_meta") or {}).get("reme_es") or {}
            if not isinstance(meta, dict) or not meta.get("kind"):
                continue
            version = meta.get("template_version")
            has_vectors = "embedding" in (mapping.get("properties") or {})
            found[name] = IndexFacts(
                name, "", str(meta["kind"]), int(version) if isinstance(version, int) else None, meta, has_vectors
            )
        if found:
            await self._fill(found, pattern)
        return sorted(found.values(), key=lambda f: f.name)

    async def _fill(self, found: dict[str, IndexFacts], pattern: str) -> None:
        """Replicas, aliases and document counts of the indices found, read by `pattern` (a list of thousands of
        index names would not fit in a request line) and kept for those found."""
        names, params = _q(pattern), {"expand_wildcards": "open"}
        wanted = "*.settings.index.number_of_replicas,*.settings.index.auto_expand_replicas"
        settings = await self.transport.request("GET", f"/{names}/_settings", params={**params, "filter_path": wanted})
        for name, body in (settings or {}).items():
            if name not in found:
                continue
            index = (body.get("settings") or {}).get("index") or {}
            found[name].replicas = int(index.get("number_of_replicas", 0))
            found[name].auto_expand = str(index.get("auto_expand_replicas", "false")).lower()
        aliases = await self.transport.request("GET", f"/{names}/_alias", params=params) or {}
        for name, body in aliases.items():
            if name in found:
                found[name].alias = ",".join(sorted((body.get("aliases") or {}).keys()))
        wanted = "indices.*.primaries.docs,indices.*.primaries.segments.count"
        stats = await self.transport.request("GET", f"/{names}/_stats/docs,segments", params={"filter_path": wanted})
        for name, body in (stats.get("indices") or {}).items():
            if name not in found:
                continue
            primaries = body.get("primaries") or {}
            found[name].docs = int(primaries.get("docs", {}).get("count", 0))
            found[name].deleted = int(primaries.get("docs", {}).get("deleted", 0))
            found[name].segments = int(primaries.get("segments", {}).get("count", 0))
        vectored = [f for f in found.values() if f.kind == "chunks" and f.has_vectors]
        if vectored:
            counts = await self.port.counts([(f.name, q.with_field("embedding")) for f in vectored])
            for f, n in zip(vectored, counts, strict=True):
                f.with_vectors = n

    async def last_snapshots(self, indices: list[str]) -> tuple[list[str], list[SnapshotFacts]]:
        """The registered repositories, and per repository its last snapshot holding any of `indices`."""
        repos = sorted((await or_none(self.transport.request("GET", "/_snapshot")) or {}).keys())
        wanted, out = set(indices), []
        for repo in repos:
            try:
                answer = await self.transport.request("GET", f"/_snapshot/{_q(repo)}/_all")
            except RequestFailed:
                continue  # an unreadable repository: the check says there is no snapshot in it
            shots = [s for s in answer.get("snapshots") or [] if wanted & set(s.get("indices") or [])]
            if shots:
                last = max(shots, key=lambda s: s.get("start_time_in_millis") or 0)
                millis = last.get("start_time_in_millis")
                start = dt.datetime.fromtimestamp(millis / 1000, dt.UTC) if millis else None
                out.append(SnapshotFacts(repo, last["snapshot"], last.get("state", ""), start, last.get("indices")))
        return repos, out

    async def security(self) -> SecurityFacts:
        """Whether the cluster runs its security plugin (OpenSearch) or x-pack security with a licence that has
        document-level security (Elasticsearch)."""
        if self.engine == "elasticsearch":
            answer = await self.transport.request("GET", "/_xpack", params={"categories": "license"})
            licence = (answer.get("license") or {}).get("type", "?")
            enabled = await self._answers("/_security/_authenticate")
            dls = enabled and licence in ("platinum", "enterprise", "trial")
            return SecurityFacts(enabled, dls, f"x-pack security {'on' if enabled else 'off'}, licence {licence}")
        enabled = await self._answers("/_plugins/_security/health")
        return SecurityFacts(enabled, enabled, "security plugin" if enabled else "no security plugin")

    async def grants(self, prefixes: list[str]) -> dict[str, list[str]]:
        """Per index set (or Memorie prefix), the workspaces (tenants) some user or backend role was granted."""
        out: dict[str, list[str]] = {}
        for prefix in prefixes:
            try:
                listed = await SecurityAdmin(self.transport, self.engine, prefix).list()
            except ConfigError:  # a name no grant can have (validate_prefix): nothing granted
                continue
            out[prefix] = sorted(g.workspace or g.memorie_tenant or "" for g in listed)
        return out

    async def _answers(self, path: str) -> bool:
        """Whether the cluster has an API at `path` (one that refuses these credentials counts: it is there)."""
        try:
            await self.transport.request("GET", path)
        except AuthError:
            return True
        except RequestFailed as exc:
            if exc.status in (400, 404, 405):
                return False
            raise
        return True


def _q(name: str) -> str:
    return urllib.parse.quote(name, safe=",*")
