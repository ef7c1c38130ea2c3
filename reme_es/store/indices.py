"""The index set of one prefix: aliases over versioned indices, mapping checks, the vector dimension, the hybrid
search pipeline, refresh, drop, stats and optimize.

An index set holds many workspaces (`reme_es.adapters.scope`); this object reads and writes one of them.
Indices (each an alias over a concrete, versioned index so `reindex` can swap them):
    <prefix>-chunks       one doc per chunk
    <prefix>-files        one doc per file (id = workspace:path, hashed past 512 bytes)
    <prefix>-links        one doc per wikilink edge; REAL/VIRTUAL is decided at query time against -files
    <prefix>-workspaces   one doc per workspace: which folder writes it (`reme_es.store.workspaces`)
Every doc carries its workspace key and is routed by it. A set made before workspaces (no `workspace` field) holds
one workspace and is used as it was written (chunks routed by path, ids as they were): `reme-es migrate` moves it
into a set with workspaces.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import date

from ..adapters.dialect import Dialect, ensure_mapping_compatible
from ..adapters.port import Action, IndexPort
from ..adapters.scope import WORKSPACE_FIELD, Scope
from ..adapters.templates import INDEX_KINDS, REGISTRY_KIND, SET_KINDS, render_index
from ..core import telemetry
from ..core.checks import validate_hybrid, validate_prefix, validate_workspace_key
from ..core.errors import AuthError, CapabilityError, ConfigError, DimensionMismatch, MappingError
from ..core.models import Capabilities, SearchFilter
from ..core.options import IndexOptions, SearchOptions
from .calibration import Calibration
from .protocol import Indices

DEFAULT_WORKSPACE = "default"  # the workspace key of a store opened without one
# Chunk fields a later template added; a chunks index made before them gets them added to its mapping when opened.
GROWN_FIELDS = ("context", "speaker", "question", "words", "written")
PAGE = 1000

log = logging.getLogger(__name__)

PIPELINE_KINDS = ("minmax", "rrf", "zscore")  # the fusion: native where the server can, else client-side


class IndexSet:
    """The indices, pipeline and probed capabilities of one prefix; the search settings that name the pipeline."""

    def __init__(
        self,
        dialect: Dialect,
        port: IndexPort,
        prefix: str,
        options: IndexOptions,
        search: SearchOptions,
        workspace: str | None = None,
    ):
        if search.fusion is not None and search.fusion not in PIPELINE_KINDS:
            raise ConfigError(f"fusion must be one of {', '.join(PIPELINE_KINDS)}, got {search.fusion!r}")
        self.dialect, self.port = dialect, port
        self.prefix = validate_prefix(prefix)
        self.workspace = validate_workspace_key(workspace or DEFAULT_WORKSPACE)
        self.legacy = False  # True: the set predates workspaces (found at connect)
        self.port.scope = Scope(self.workspace)
        self.options = options
        # the search options that shape requests: hybrid mode, the fusion (it names the pipeline), vector weight,
        # and the client-side fusion's proximity boost, feedback depth and collapse of repeated texts
        self.hybrid = validate_hybrid(search.hybrid)
        self.pipeline_kind = search.fusion
        self.vector_weight = search.vector_weight
        self.relation_vector_weight = search.relation_vector_weight  # client fusion's, for "Kwame's stepsister"
        self.proximity = search.proximity
        self.feedback = search.feedback
        self.collapse = search.collapse
        self.date_boost = search.date_boost  # boost of the fused head's notes dated where the question points (0: none)
        self.context_boost = search.context_boost  # weight of a BM25 match on a chunk's neighbours' text (0: none)
        self.speaker_boost = search.speaker_boost  # lift of the turns of the one speaker a question names (0: none)
        self.note_boost = search.note_boost  # boost of hits whose note holds much of the fused head (0: none)
        self.question_factor = search.question_factor  # the score share of a hit that is itself a question (1: all)
        self.turn_length = search.turn_length  # lift of a dialog turn by its length against the head's median (0: none)
        self.today: date | None = None  # what "last June" counts from (None: the current date)
        self.caps: Capabilities | None = None
        self.dims: int | None = options.dims
        self.knn_calibration: Calibration | None = None  # the k-NN width measured on the chunks index (its _meta)
        self.ix = Indices(*(self.index(k) for k in INDEX_KINDS))

    def index(self, kind: str) -> str:
        """Alias name of one index kind."""
        return f"{self.prefix}-{kind}"

    def filter(self, search_filter: SearchFilter | dict | None) -> SearchFilter:
        """A caller's search filter, parsed and narrowed to this workspace (inside every clause the dialect builds)."""
        return SearchFilter.parse(search_filter).model_copy(update={"workspace": self.port.scope.workspace})

    def connected(self) -> Capabilities:
        """The probed capabilities; refuses to go on before `connect`."""
        if self.caps is None:
            raise ConfigError("the store is not connected: call `await store.connect()` first")
        return self.caps

    async def connect(self, create: bool = True) -> Capabilities:
        """Record the cluster's UUID, probe the server, create (or check) the indices and the hybrid pipeline, and
        refresh them once."""
        await self.port.identity.record(f"{self.prefix}-*")
        self.caps = await self.dialect.probe()
        if self.options.dims and not self.caps.knn:
            raise CapabilityError(
                f"{self.caps.engine} {self.caps.version} has no k-NN support; install the k-NN plugin or disable "
                "embeddings"
            )
        if create:
            await self.ensure_indices()
        else:
            await self._load_dims()
        # A writer that died (SIGKILL, lost connection) never issued its closing refresh; make what the cluster
        # acknowledged visible now, or this session's scans (files to delete, orphan chunks) would miss it.
        await self.refresh()
        if self.pipeline_kind is None:
            only_minmax = self.caps.normalization_processor and not self.caps.rrf_processor
            self.pipeline_kind = "minmax" if only_minmax else "rrf"
        if self.keeps_pipeline():
            await self.ensure_pipeline()
        return self.caps

    async def ensure_indices(self, suffix: str = "1") -> None:
        """Create missing indices behind their aliases; report an existing incompatible one. A set whose chunks
        index has no `workspace` field predates workspaces: it is used as it was written (`legacy`)."""
        caps = self.connected()
        for kind in SET_KINDS:
            alias = self.index(kind)
            existing = await self.port.mapping(alias)
            if existing is None:
                body = render_index(kind, self.dialect, caps, self.options)
                body["aliases"] = {alias: {}}
                await self.port.create_index(f"{alias}-{suffix}", body)  # False: another writer made it first
                continue
            expected = render_index(kind, self.dialect, caps, IndexOptions())["mappings"]
            if kind == "chunks":
                self._set_layout(existing)
                existing = await self._add_missing(alias, existing, expected, GROWN_FIELDS)
            if self.legacy and kind != REGISTRY_KIND:
                expected["properties"].pop(WORKSPACE_FIELD, None)
            ensure_mapping_compatible(alias, existing, expected)
            if kind == "chunks":
                self._adopt_dims(alias, existing)

    async def _add_missing(self, alias: str, existing: dict, expected: dict, fields: tuple[str, ...]) -> dict:
        """The mapping with `fields` added where an index made by an earlier template lacks them (their documents
        get them when they are written again: `reme-es reindex` or the next change of their file)."""
        have = existing.get("properties", {})
        missing = {name: expected["properties"][name] for name in fields if name not in have}
        if not missing:
            return existing
        log.info("adding %s to the mapping of %s", ", ".join(missing), alias)
        await self.port.add_fields(alias, missing)
        return {**existing, "properties": {**have, **missing}}

    def _set_layout(self, chunks_mapping: dict) -> None:
        """Read the set's layout from its chunks mapping: with workspaces, or from before them (legacy)."""
        self.legacy = WORKSPACE_FIELD not in chunks_mapping.get("properties", {})
        self.port.scope = Scope(None if self.legacy else self.workspace)

    async def _load_dims(self) -> None:
        existing = await self.port.mapping(self.ix.chunks)
        if existing is None:
            raise MappingError(f"index {self.ix.chunks} does not exist; run `reme-es sync` first")
        self._set_layout(existing)
        self._adopt_dims(self.ix.chunks, existing)

    def _adopt_dims(self, alias: str, mapping: dict) -> None:
        vector = mapping.get("properties", {}).get("embedding")
        have = self.dialect.vector_dims(vector) if vector else None
        if self.options.dims and have and have != self.options.dims:
            raise DimensionMismatch(
                f"index {alias} holds {have}-d vectors but the embedding model gives {self.options.dims}-d; "
                "run `reme-es reindex` to rebuild it for the new model"
            )
        if self.options.dims and not have:
            raise MappingError(
                f"index {alias} was created without vectors; run `reme-es reindex` to add a {self.options.dims}-d "
                "embedding field"
            )
        self.dims = have
        self.knn_calibration = Calibration.from_meta((mapping.get("_meta") or {}).get("reme_es"))

    # --- the hybrid pipeline ------------------------------------------------------------------
    def keeps_pipeline(self) -> bool:
        """Whether this store keeps a search pipeline: the dialect fuses through one, the server has the hybrid
        query, the index has vectors, and hybrid is not `client`. (`native_hybrid` also asks whether the server's
        pipeline can fuse the configured kind.)"""
        return bool(
            self.hybrid != "client"
            and self.dialect.uses_search_pipeline
            and self.caps
            and self.caps.hybrid_query
            and self.dims
            and self.dialect.native_hybrid(self.caps, self.pipeline_kind)
        )

    def native_hybrid(self) -> bool:
        """Whether one-request hybrid search can be used with the current server and configuration."""
        if self.hybrid == "client" or not self.caps or not self.dims:
            return False
        return self.dialect.native_hybrid(self.caps, self.pipeline_kind)

    def pipeline_name(self) -> str:
        """Name of this store's search pipeline (kind, weight and template version in the name)."""
        weighted = self.dialect.pipeline_weighted(self.caps, self.pipeline_kind)
        weight = f"-w{round(self.vector_weight * 100)}" if weighted else ""
        return f"{self.prefix}-hybrid-{self.pipeline_kind}{weight}-v1"

    async def ensure_pipeline(self) -> None:
        """Create or update the hybrid search pipeline where it is missing or differs. A grantee (`reme-es access`:
        no cluster write of any kind) puts nothing: it searches through the pipeline the admin put, and where it
        cannot read one, fuses in the client."""
        kind, name = self.pipeline_kind or "minmax", self.pipeline_name()
        body = self.dialect.pipeline_body(kind, self.vector_weight, bool(self.caps and self.caps.rrf_weights))
        try:
            stored = await self.port.get_pipeline(name)
        except AuthError:
            stored = None
        if stored == body:
            return
        try:
            await self.port.put_pipeline(name, body)
        except AuthError as exc:
            if stored is not None:
                return  # the admin's pipeline, as it is
            log.warning("no search pipeline %s and no right to put one (%s): hybrid fuses in the client", name, exc)
            self.hybrid = "client"

    # --- upkeep -----------------------------------------------------------------------------
    async def refresh(self) -> None:
        """Make every finished write visible to searches (engines that refresh on their own are left to it)."""
        if self.dialect.refreshes_itself:
            return
        await self.port.refresh([self.index(k) for k in INDEX_KINDS])
        telemetry.record("reme_es.refreshes", 1)

    async def drop(self) -> None:
        """Delete this prefix's indices (every workspace of the set) and pipeline."""
        for kind in SET_KINDS:
            for concrete in await self.port.concrete(self.index(kind)):
                await self.port.delete_index(concrete)
        if self.caps and self.caps.hybrid_query:
            await self.port.delete_pipeline(self.pipeline_name())

    async def delete_workspace(self) -> int:
        """Delete every document of this workspace from the set's content indices (paged, no 10,000-hit cap) and
        refresh; other workspaces are untouched. Returns the documents deleted."""
        if self.legacy:
            raise ConfigError(
                f"index set {self.prefix} predates workspaces and holds one workspace: drop the whole set "
                "(`reme-es drop --set`), or move it into a shared set first (`reme-es migrate`)"
            )
        raw, deleted = self.port.unscoped(), 0
        for kind in INDEX_KINDS:
            async for page in self.port.scroll(self.index(kind), PAGE, with_vectors=False):
                actions = [Action("delete", self.index(kind), d.id, routing=d.routing) for d in page]
                (await raw.bulk(actions)).raise_for_failures()
                deleted += len(actions)
        await self.refresh()
        return deleted

    async def expunge(self, timeout: float = 120.0) -> dict:
        """Force-merge away the deleted documents of the set's indices, the workspace registry's included (a dropped
        workspace's record names its folder), so deleted text leaves the disk. A shard keeps recently deleted docs for
        replica recovery until its retention lease moves on (about 30 s on a quiet shard), so this merges again every
        few seconds until none is left or `timeout` passes. Returns the indices checked and merged, the seconds it
        took and the deleted docs left."""
        merged: set[str]
        started, merged, checked = time.monotonic(), set(), [self.index(k) for k in SET_KINDS]
        while True:
            if not self.dialect.refreshes_itself:
                await self.port.refresh(checked)  # the registry's delete too: `Registry.release` does not refresh
            left = {kind: s["deleted"] for kind, s in (await self.stats(SET_KINDS)).items() if s["deleted"]}
            if not left or time.monotonic() - started > timeout:
                return {
                    "checked": checked,
                    "merged": sorted(merged),
                    "seconds": round(time.monotonic() - started, 1),
                    "left": left,
                }
            for kind in left:
                if kind not in merged:  # else segments under 10% deleted (one workspace of many) are never merged
                    await self.port.put_settings(self.index(kind), {"index.merge.policy.expunge_deletes_allowed": 0})
                await self.port.forcemerge(self.index(kind), None)
                merged.add(kind)
            await asyncio.sleep(5.0)

    async def stats(self, kinds: tuple[str, ...] = INDEX_KINDS) -> dict[str, dict]:
        """Per index kind (the content indices unless `kinds` names others): docs, deleted docs, segments, size."""
        if self.dialect.merges_itself:
            raise CapabilityError(f"{self.dialect.engine} has no index stats or force-merge API; it merges on its own")
        return {kind: await self.port.stats(self.index(kind)) for kind in kinds}

    async def optimize(self, deleted_ratio: float, max_segments: int | None) -> dict:
        """Force-merge: expunge deletes in indices whose deleted-docs ratio passes the threshold."""
        before = await self.stats()
        merged = []
        for kind, s in before.items():
            total = s["docs"] + s["deleted"]
            if max_segments is None and not (total and s["deleted"] / total >= deleted_ratio):
                continue
            await self.port.forcemerge(self.index(kind), max_segments)
            merged.append(kind)
        if merged:
            await self.refresh()
        return {"merged": merged, "before": before, "after": await self.stats()}
