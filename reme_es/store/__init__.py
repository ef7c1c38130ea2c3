"""MemoryStore: files, chunks and links kept consistent as one unit, on any dialect.

The store is the one door into an index set: the CLI, `reme-es sync`, the ReMe plugin, the UI and the contract suite
call `MemoryStore`, never its parts. Searches and writes are its own methods; the rest is grouped in namespaces, each
a part or its bound methods (no signature restated): `store.links` (files and links), `store.vectors` (stored
vectors), `store.admin` (upkeep: admin.py), `store.inspect` (reads for status, doctor and the UI: inspect.py).
Each part is a module a reader can open on its own:

    indices.py   IndexSet: aliases over versioned indices, mapping checks, dims, the hybrid pipeline, upkeep
    protocol.py  the write protocol as pure functions (its docstring is the protocol's description)
    writer.py    Writer: runs the protocol's rounds through the port (upsert, delete)
    search.py    SearchStore: keyword (BM25) and hybrid search, native or fused client-side
    shown.py     what a search answer shows beside its hits (chunks, links, neighbour files), in one _msearch
    vectors.py   VectorStore: k-NN search, reading back, backfilling and setting vectors
    links.py     LinkGraph: files, outlinks, inlinks, expansion and traversal over the links index
    workspaces.py Registry: which folder writes each workspace of the set (a sync never deletes another's files)
    fusion.py    pure: RRF and convex fusion, feedback's Rocchio step, collapse of repeated texts, proximity
    feedback.py  pure: the feedback's top-hit searches sent with the candidates, and their answers read back
    dates.py     pure: the date window a question names, and the date boost
    connect.py   open_store: a connected MemoryStore from client settings; lifecycle.py: reindex, migrate, diff
    sources.py   pure conversions between the models and stored sources, with the checks before writing

One store reads and writes one workspace of an index set that may hold thousands (`reme_es.adapters.scope`: every
doc carries its workspace key, is routed by it and has a namespaced id; every read is filtered by it).

Read consistency: the indices are created with `refresh_interval: -1`, so searches see only what existed at
the last refresh of the indices, and a store refreshes only after a write call has finished all its bulk
requests. In a set that one workspace writes, a file's old and new chunks are therefore never visible together.
In a set shared by several workspaces a refresh is the shard's, not the workspace's: another workspace's refresh
makes searchable what this store's unfinished write call has acknowledged so far: a file's new chunks beside its
stale ones until that call ends. The searches still never return both: the file doc, written last, lists its
version's chunk ids, and every search that returns chunks (`keyword_search`, `vector_search`, `search`, `shown`)
keeps of each file with two or more hits only those its file doc lists (the searches replace the others with the
next hits; `shown` leaves them out to its caller) (`reme_es.store.one_version`; docs/GUARANTEES.md says exactly
what a reader sees). `ranked` (ids and scores, no text) and the counts (`count`, `health_counts`) are not filtered:
they may include both versions meanwhile. (A `wait_for` refresh policy would let a scheduled refresh expose a
half-applied upsert in any set, which is why the store refreshes explicitly.) `connect` refreshes once too, so what
a crashed writer had acknowledged is seen by the next session's scans.
Writes run in up to four rounds (placeholder, chunks, commit with take-backs, repair after a lost
conditional write; see `reme_es.store.protocol`), so a failed item never loses what was stored before.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Iterable
from typing import Self

from ..adapters.dialect import Dialect, keyword_body
from ..adapters.port import IndexPort
from ..adapters.transport import BulkOutcome
from ..core.checks import HYBRID_MODES, validate_hybrid, validate_prefix
from ..core.errors import AuthError, BulkError, RequestFailed
from ..core.models import Capabilities, Chunk, FileDoc, Hit, SearchFilter, SearchResult
from ..core.options import IndexOptions, SearchOptions
from ..core.telemetry import memory_operation, stage
from .admin import Admin, Vectors
from .fusion import candidate_depth
from .indices import IndexSet
from .inspect import Inspect
from .links import LinkGraph
from .one_version import depths, enough, filled, hit_key, keyed, one_version
from .search import SearchStore
from .shown import Shown, fetch_shown
from .sources import HitBuilder, chunk_source, hit_from_source, stored_chunk_source
from .vectors import VectorStore
from .workspaces import Registry
from .writer import Writer

# Candidates per branch for each result wanted, ReMe's `candidate_multiplier` (its search step's default): the depth
# of a search is min(200, limit x this). Written here once; the store's parts require it, ReMe's step reads it.
CANDIDATE_MULTIPLIER = 5


class MemoryStore:
    """Files, chunks and links of one workspace of an index set on one cluster."""

    def __init__(
        self,
        dialect: Dialect,
        prefix: str,
        options: IndexOptions | None = None,
        search: SearchOptions | None = None,
        workspace: str | None = None,
    ):
        """One workspace (`workspace`; None: `default`) of the index set `prefix`; `options` shape the indices it
        creates, `search` how it ranks (the defaults of `reme_es.core.options`)."""
        search = search or SearchOptions()
        self.dialect = dialect
        self.port = IndexPort(dialect)
        self.indices = IndexSet(dialect, self.port, prefix, options or IndexOptions(), search, workspace)
        self._vectors = VectorStore(self.indices)
        self.searches = SearchStore(self.indices, self._vectors, search.keyword_fields)
        self.writer = Writer(self.port, self.indices.ix, lambda: self.indices.dims, self.indices.refresh)
        self.registry = Registry(self.port, self.indices.index("workspaces"), prefix)
        # The door's namespaces (as opensearch-py's `client.indices`), each a part or its bound methods: reads of
        # files and links; the stored vectors; upkeep of the set; what status, doctor and the UI read.
        self.links = LinkGraph(self.port, self.indices.ix)  # files, outlinks, inlinks, expand, traverse
        self.vectors = Vectors(self._vectors)  # read back, plan, backfill, set (store/admin.py)
        self.admin = Admin(self, self._vectors)  # reindex, migrate, drop plans, diff, optimize, stats, calibration
        self.inspect = Inspect(self.indices, self.port, self.registry)  # counts, health, workspaces, the UI's reads
        # The door's own calls that one part does: bound, not restated.
        self.connect = self.indices.connect  # probe, create (or check) the indices and the pipeline, refresh once
        self.index = self.indices.index  # alias name of one index kind
        self.refresh = self.indices.refresh  # make every finished write visible to searches
        self.pipeline_name = self.indices.pipeline_name
        self.ensure_pipeline = self.indices.ensure_pipeline
        self.native_pipeline_wanted = self.indices.keeps_pipeline  # whether this store keeps a search pipeline
        self.native_hybrid_available = self.indices.native_hybrid  # whether one-request hybrid search can be used

    # --------------------------------------------------------------------- settings and state
    prefix = property(lambda self: self.indices.prefix, doc="The index prefix (the index set's name).")
    legacy = property(lambda self: self.indices.legacy, doc="The set predates workspaces (it holds one, unnamed).")
    hosts = property(lambda self: self.port.hosts, doc="The hosts the store sends to.")

    @property
    def workspace(self) -> str | None:
        """The workspace key this store reads and writes (None: a set from before workspaces)."""
        return None if self.indices.legacy else self.indices.workspace

    options = property(lambda self: self.indices.options, doc="The index options the store creates indices with.")

    @property
    def caps(self) -> Capabilities | None:
        """The server's capabilities, probed at connect."""
        return self.indices.caps

    @caps.setter
    def caps(self, value: Capabilities | None) -> None:
        self.indices.caps = value

    @property
    def dims(self) -> int | None:
        """The dimension of the index's vectors (None: no embedding field)."""
        return self.indices.dims

    @dims.setter
    def dims(self, value: int | None) -> None:
        self.indices.dims = value

    @property
    def hybrid(self) -> str:
        """Hybrid mode: auto, native or client."""
        return self.indices.hybrid

    @hybrid.setter
    def hybrid(self, value: str) -> None:
        self.indices.hybrid = validate_hybrid(value)

    @property
    def pipeline_kind(self) -> str | None:
        """The native fusion: minmax or rrf (chosen at connect when not given)."""
        return self.indices.pipeline_kind

    @pipeline_kind.setter
    def pipeline_kind(self, value: str | None) -> None:
        self.indices.pipeline_kind = value

    @property
    def vector_weight(self) -> float:
        """Weight of the vector branch in fusion (it also names the pipeline: set it before connecting)."""
        return self.indices.vector_weight

    @property
    def keyword_fields(self) -> tuple[str, ...] | None:
        """Fields keyword search runs over (None: chosen per query)."""
        return self.searches.keyword_fields

    @keyword_fields.setter
    def keyword_fields(self, value: tuple[str, ...] | None) -> None:
        self.searches.keyword_fields = value

    async def close(self) -> None:
        """Close the client."""
        await self.port.close()

    async def __aenter__(self) -> Self:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def store_id(self) -> str:
        """`gen_ai.memory.store.id` of this store's spans: `<index set>/<workspace>`."""
        return f"{self.prefix}/{self.workspace or 'default'}"

    async def ensure_indices(self, suffix: str = "1") -> None:
        """Create missing indices behind their aliases; report an existing incompatible one."""
        with memory_operation("create_memory_store", self.store_id):
            await self.indices.ensure_indices(suffix)

    async def drop(self) -> None:
        """Delete this prefix's indices and pipeline (tests and `clear`)."""
        with memory_operation("delete_memory_store", self.store_id):
            await self.indices.drop()

    # ----------------------------------------------------------------------------------- writes
    async def upsert(
        self, files: list[tuple[FileDoc, list[Chunk]]], refresh: bool = True, unchanged: set[str] | None = None
    ) -> BulkOutcome:
        """Store files with their chunks and links; each file's chunks replace the ones stored for its path.
        `unchanged`: chunk ids stored exactly as given, vector included (`vector_ids`), not to be written again."""
        with memory_operation("update_memory", self.store_id, records=len(files)):
            return await self.writer.upsert(files, refresh, unchanged)

    async def delete(self, paths: str | Iterable[str], refresh: bool = True) -> int:
        """Delete files with their chunks and outgoing links; unknown paths are skipped. Returns files deleted."""
        with memory_operation("delete_memory", self.store_id) as span:
            deleted = await self.writer.delete(paths, refresh)
            span.set_attribute("gen_ai.memory.record.count", deleted)
            return deleted

    async def clear(self) -> None:
        """Delete every file, chunk and link of this workspace (other workspaces of the set are untouched; a set from
        before workspaces is recreated empty)."""
        with memory_operation("delete_memory", self.store_id):  # no record id: every record of the store
            if not self.legacy:
                await self.indices.delete_workspace()
                return
            await self.drop()
            await self.ensure_indices()
            if self.native_pipeline_wanted():
                await self.ensure_pipeline()

    async def drop_workspace(self, expunge: bool = False, expunge_timeout: float = 120.0) -> dict:
        """Forget this workspace: delete its files, chunks and links and its record; other workspaces are untouched.
        `expunge`: then force-merge the set's indices until no deleted doc is left (`IndexSet.expunge`), so the
        deleted text leaves the disk: it rewrites the segments that hold deleted docs, and waits for the shards'
        retention leases (about 30 s), up to `expunge_timeout` seconds."""
        with memory_operation("delete_memory", self.store_id):
            deleted = await self.indices.delete_workspace()
            await self.registry.release(self.workspace)
        out: dict = {"workspace": self.workspace, "deleted": deleted}
        if expunge:
            out["expunged"] = await self.indices.expunge(expunge_timeout)
        return out

    async def claim(self, folder: str, take_over: bool = False, blind: bool = False) -> dict:
        """Record that `folder` (on this host) writes this workspace; refuse another folder's sync (WorkspaceConflict)
        unless `take_over`. Call before the first write of a session."""
        try:
            return await self.registry.claim(self.workspace, folder, take_over, blind)
        except (AuthError, BulkError, RequestFailed) as exc:  # a grant that may not write: said in one line
            raise await self.explained(exc) from None

    async def explained(self, error: AuthError | BulkError | RequestFailed) -> Exception:
        """`error`, or for a write the cluster refused for good (403, `security_exception`) one line naming the
        caller's grant of this workspace ("ana has read-only access to workspace X of index set S")."""
        from ..adapters.security import Workspace
        from ..adapters.security_admin import explain_refusal

        target = Workspace(self.prefix, self.workspace) if self.workspace else None
        explained = target and await explain_refusal(self.port.transport, self.dialect.engine, target, error)
        return explained or error

    # ----------------------------------------------------------------------------------- search
    async def keyword_search(
        self,
        query: str,
        limit: int,
        search_filter: SearchFilter | dict | None = None,
        build: HitBuilder = hit_from_source,
    ) -> list:
        """BM25 over chunk text, filtered server-side; empty query or limit <= 0 gives []. Hits are `Hit`s, or what
        `build(branch, score, stored source)` makes of each (the ReMe file store builds its FileChunks directly).
        Each file's hits are of one version (`one_version`), as for every search below.

        ReMe calls this on every agent turn: it builds the body and sends it through the port itself, with
        `one_version.filled`'s loop written out, so its request is three frames below it
        (`IndexPort.ranked_sources`, the transport, the engine's send; docs/ARCHITECTURE.md,
        tests/unit/test_keyword_frames.py)."""
        f = self.indices.filter(search_filter)
        if not query or not query.strip() or limit <= 0:
            return []
        chunks, pair, answer = self.indices.ix.chunks, keyed(build), []
        with memory_operation("search_memory", self.store_id, query) as span:
            for depth in depths(limit):
                body = keyword_body(query, depth, f, self.searches.keyword_fields)
                found = [pair("keyword", score, src) for score, src in await self.port.ranked_sources(chunks, body)]
                answer = await one_version(self.port, self.indices.ix.files, found, lambda p: p[0])
                if enough(found, answer, limit, depth):
                    break
            span.set_attribute("gen_ai.memory.record.count", min(limit, len(answer)))
        return [hit for _, hit in answer[:limit]]

    async def vector_search(
        self,
        vector: list[float] | None,
        limit: int,
        search_filter: SearchFilter | dict | None = None,
        k: int = 0,
        build: HitBuilder = hit_from_source,
    ) -> list:
        """k-NN over chunk embeddings with the filter inside the k-NN clause; the top `limit` of the `k` nearest
        (scores cosine similarity; `build` as for `keyword_search`)."""
        with memory_operation("search_memory", self.store_id) as span:
            found = await self._one_version(
                lambda n: self._vectors.search(vector, n, search_filter, k, keyed(build)), limit
            )
            span.set_attribute("gen_ai.memory.record.count", len(found))
            return found

    async def search(
        self,
        query: str,
        vector: list[float] | None = None,
        limit: int = 10,
        search_filter: SearchFilter | dict | None = None,
        mode: str = "hybrid",
        candidate_multiplier: int = CANDIDATE_MULTIPLIER,
        min_score: float = 0.0,
        candidates: int | None = None,
    ) -> SearchResult:
        """Keyword, vector or hybrid search as ReMe does it: candidates per branch, fusion, min_score, limit
        (`candidates` sets the depth per branch instead of limit x candidate_multiplier)."""
        results: list[SearchResult] = []

        async def hits(n: int) -> list[Hit]:  # deeper than `limit` only to replace hits of another version
            depth = candidates if n == limit else max(n, candidates or candidate_depth(limit, candidate_multiplier))
            result = await self.searches.search(
                query, vector, n, search_filter, mode, candidate_multiplier, min_score, depth
            )
            results.append(result)
            return result.hits

        with memory_operation("search_memory", self.store_id, query) as span:
            shown = await filled(hits, lambda f: one_version(self.port, self.indices.ix.files, f, hit_key), limit)
            _ranking(results[-1], len(shown))
            span.set_attribute("gen_ai.memory.record.count", len(shown))
        return results[-1].model_copy(update={"hits": shown})

    async def ranked(
        self,
        query: str,
        vector: list[float] | None,
        candidates: int,
        search_filter: SearchFilter | dict | None = None,
        limit: int | None = None,
    ) -> SearchResult:
        """Up to `candidates` fused hits ranked from ids and scores alone (no texts), in one round trip (with
        `collapse`, deeper when repeated texts leave fewer than `limit`). They may hold chunks of two versions of a
        file (`one_version`); `shown` leaves out those of another version than the file doc's."""
        with memory_operation("search_memory", self.store_id, query):
            result = await self.searches.ranked(query, vector, candidates, search_filter, limit)
            _ranking(result, len(result.hits))
            return result

    async def shown(self, hits: list[Hit], paths: list[str]) -> Shown:
        """Ranked hits with their chunks, and the REAL outlinks and inlinks of `paths`, in one `_msearch`. Of a file
        with two or more hits, the hits its file doc does not list are left out (`one_version`; the file docs of `paths`
        come in the same `_msearch`, the others' in one `_mget`): the caller asks for the next ones."""
        with memory_operation("search_memory", self.store_id) as span:
            shown = await fetch_shown(self.port, self.indices.ix, hits, paths)
            listed: dict[str, Collection[str] | None] = {
                p: (f.chunk_ids if (f := shown.files.get(p)) else None) for p in paths
            }
            shown.hits = await one_version(self.port, self.indices.ix.files, shown.hits, hit_key, listed)
            span.set_attribute("gen_ai.memory.record.count", len(shown.hits))
        return shown

    async def _one_version(self, search: Callable[[int], Awaitable[list]], limit: int) -> list:
        """The first `limit` hits of one version per file of `search(depth)`, which gives ((chunk id, path), hit) pairs
        (`keyed`), searching deeper where hits were left out (`one_version.filled`)."""

        async def keep(found: list) -> list:
            return await one_version(self.port, self.indices.ix.files, found, lambda pair: pair[0])

        return [hit for _, hit in await filled(search, keep, limit)]


def _ranking(result: SearchResult, shown: int) -> None:
    """The ranking stages of a search on its memory operation's span: candidates per branch, fusion, the count kept."""
    stage(
        "ranking",
        {
            "reme_es.candidates.keyword": result.keyword_hits,
            "reme_es.candidates.vector": result.vector_hits,
            "reme_es.fusion": result.fusion,
            "reme_es.fused": len(result.hits),
            "reme_es.shown": shown,
        },
    )


__all__ = [
    "CANDIDATE_MULTIPLIER",
    "HYBRID_MODES",
    "MemoryStore",
    "chunk_source",
    "stored_chunk_source",
    "validate_hybrid",
    "validate_prefix",
]
