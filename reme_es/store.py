"""MemoryStore: files, chunks and links kept consistent as one unit, on any dialect.

Indices (each an alias over a concrete, versioned index so `reindex` can swap them):
    <prefix>-chunks   one doc per chunk, routed by path
    <prefix>-files    one doc per file (id = path, hashed past 512 bytes)
    <prefix>-links    one doc per wikilink edge; REAL/VIRTUAL is decided at query time against -files

Read consistency: the indices are created with `refresh_interval: -1`, so searches see only what existed at
the last refresh reme-es issued, and reme-es refreshes only after a write call has finished all its bulk
requests. A file's old and new chunks are therefore never visible together. (A `wait_for` refresh policy
would let a scheduled refresh expose a half-applied upsert, which is why the store refreshes explicitly.)
`connect` refreshes once too, so what a crashed writer had acknowledged is seen by the next session's scans.
Writes are two-phase: new chunks first; only for files whose chunks were all stored are stale chunks deleted
and the file doc and links written, so a failed item never loses what was stored before.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from .adapters import lookups as q
from .adapters.base import (
    SOURCE_EXCLUDES,
    BulkOutcome,
    Dialect,
    candidates_only,
    cosine_from_score,
    ensure_mapping_compatible,
)
from .adapters.base import keyword_body as build_keyword_body
from .errors import (
    BulkItemFailure,
    CapabilityError,
    ConfigError,
    DimensionMismatch,
    InvalidInput,
    MappingError,
    RequestFailed,
)
from .fusion import apply_min_score, candidate_depth, weighted_rrf
from .models import (
    Capabilities,
    Chunk,
    FileDoc,
    Hit,
    Link,
    LinkScope,
    Neighbour,
    SearchFilter,
    SearchResult,
    date_from_path,
    doc_id,
)
from .templates import INDEX_KINDS, IndexOptions, render_index

log = logging.getLogger(__name__)

MAX_TEXT_BYTES = 8 << 20
STREAM_MIN_ACTIONS = 250  # below this many chunk writes per stream, one bulk request
_PREFIX_RE = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,199}$")
HYBRID_MODES = ("auto", "native", "client")


def validate_prefix(prefix: str) -> str:
    """Refuse index prefixes that could address other indices (`*`, `_all`, commas, `..`, uppercase)."""
    if not isinstance(prefix, str) or not _PREFIX_RE.match(prefix) or ".." in prefix:
        raise ConfigError(
            f"index prefix {prefix!r} is not allowed: use 1-200 characters of lowercase letters, digits, '-' "
            "and '_', starting with a letter or digit"
        )
    return prefix


def chunk_source(chunk: Chunk) -> dict:
    """The `_source` of a chunk doc as the chunks template maps it (pure; the store validates before writing)."""
    src: dict[str, Any] = {
        "chunk_id": chunk.id,
        "path": chunk.path,
        "date": date_from_path(chunk.path),
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "hash": chunk.hash,
        "text": chunk.text,
        "metadata": chunk.metadata,
    }
    if chunk.embedding is not None:
        src["embedding"] = chunk.embedding
    return src


def stored_chunk_source(chunk: Chunk) -> dict:
    """A chunk's `_source` as the index hands it back without its vector (to tell an unchanged chunk)."""
    src = chunk_source(chunk)
    src.pop("embedding", None)
    return _as_stored(src)


def _chunk_from_source(src: dict) -> Chunk:
    return Chunk(
        id=src["chunk_id"],
        path=src["path"],
        start_line=src.get("start_line", 0),
        end_line=src.get("end_line", 0),
        text=src.get("text", ""),
        hash=src.get("hash", ""),
        metadata=src.get("metadata") or {},
    )


def _scored(hit: dict, branch: str, chunk: Chunk) -> Hit:
    """A search hit of one branch; k-NN scores become cosine similarity."""
    raw = float(hit["_score"])
    score = cosine_from_score(raw) if branch == "vector" else raw
    return Hit(chunk=chunk, scores={branch: score, "score": score})


def _file_from_source(src: dict) -> FileDoc:
    path = src["path"]
    return FileDoc(
        path=path,
        st_mtime=src.get("st_mtime", 0.0),
        chunk_ids=src.get("chunk_ids") or [],
        front_matter=src.get("front_matter") or {},
        links=[Link(source=path, target=x["target"], anchor=x.get("anchor", "")) for x in src.get("links") or []],
        size=src.get("size", 0),
        hash=src.get("hash", ""),
    )


@dataclass
class _Stored:
    """What the index holds for some paths: chunk ids, link ids, and the version of each path's file doc."""

    chunks: dict[str, set[str]]
    links: dict[str, set[str]]
    versions: dict[str, tuple[int, int]]  # path -> (_seq_no, _primary_term); only paths with a file doc


def _forgive_conflicts(outcome: BulkOutcome, conditional: list[dict]) -> None:
    """Drop the 409s of conditional take-backs: another writer rewrote that doc since, so it is not ours to undo."""
    ids = {a["_id"] for a in conditional}
    kept = [f for f in outcome.failures if not (f.status == 409 and f.id in ids)]
    outcome.succeeded += len(outcome.failures) - len(kept)
    outcome.failures = kept


def _as_stored(source: dict) -> dict:
    """A source as the server hands it back (JSON round trip: tuples become lists, dates strings)."""
    return orjson.loads(orjson.dumps(source))


def _check_serialisable(what: str, value: Any) -> None:
    try:
        orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise InvalidInput(f"{what} cannot be stored: {exc}. Decode it as UTF-8 text and pass plain JSON values.")


class MemoryStore:
    """Files, chunks and links of one workspace on one cluster."""

    def __init__(
        self,
        dialect: Dialect,
        prefix: str,
        options: IndexOptions | None = None,
        hybrid: str = "auto",
        pipeline: str | None = None,
        vector_weight: float = 0.7,
        keyword_fields: tuple[str, ...] | None = None,
    ):
        if hybrid not in HYBRID_MODES:
            raise ConfigError(f"hybrid must be one of {', '.join(HYBRID_MODES)}, got {hybrid!r}")
        if not 0.0 <= vector_weight <= 1.0:
            raise ConfigError(f"vector_weight must be between 0 and 1, got {vector_weight}")
        self.dialect = dialect
        self.prefix = validate_prefix(prefix)
        self.options = options or IndexOptions()
        self.hybrid = hybrid
        self.pipeline_kind = pipeline
        self.vector_weight = vector_weight
        self.keyword_fields = keyword_fields
        self.caps: Capabilities | None = None
        self.dims: int | None = self.options.dims

    # ------------------------------------------------------------------------------- lifecycle

    def index(self, kind: str) -> str:
        """Alias name of one index kind."""
        return f"{self.prefix}-{kind}"

    async def connect(self, create: bool = True) -> Capabilities:
        """Probe the server, create (or check) the indices and the hybrid pipeline, and refresh them once."""
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
            self.pipeline_kind = "minmax" if self.caps.normalization_processor and not self.caps.rrf_processor else "rrf"
        if self.native_pipeline_wanted():
            await self.ensure_pipeline()
        return self.caps

    def native_pipeline_wanted(self) -> bool:
        """Whether this store keeps a search pipeline (OpenSearch with neural-search, vectors, hybrid not client)."""
        return bool(
            self.hybrid != "client" and self.dialect.uses_search_pipeline and self.caps and self.caps.hybrid_query
            and self.dims
        )

    async def close(self) -> None:
        """Close the client."""
        await self.dialect.close()

    async def __aenter__(self) -> MemoryStore:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def ensure_indices(self, suffix: str = "1") -> None:
        """Create missing indices behind their aliases; report an existing incompatible one."""
        assert self.caps is not None
        for kind in INDEX_KINDS:
            alias = self.index(kind)
            existing = await self._mapping(alias)
            if existing is None:
                body = render_index(kind, self.dialect, self.caps, self.options)
                body["aliases"] = {alias: {}}
                try:
                    await self.dialect.request("PUT", f"/{alias}-{suffix}", body)
                except RequestFailed as exc:
                    if "resource_already_exists" not in (exc.reason or "") and "already exists" not in str(exc):
                        raise
                continue
            expected = render_index(kind, self.dialect, self.caps, IndexOptions())["mappings"]
            ensure_mapping_compatible(alias, existing, expected)
            if kind == "chunks":
                self._adopt_dims(alias, existing)

    async def _load_dims(self) -> None:
        existing = await self._mapping(self.index("chunks"))
        if existing is None:
            raise MappingError(f"index {self.index('chunks')} does not exist; run `reme-es sync` first")
        self._adopt_dims(self.index("chunks"), existing)

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

    async def _mapping(self, alias: str) -> dict | None:
        try:
            resp = await self.dialect.request("GET", f"/{alias}/_mapping")
        except RequestFailed as exc:
            if exc.status == 404:
                return None
            raise
        return next(iter(resp.values()))["mappings"]

    def pipeline_name(self) -> str:
        """Name of this store's search pipeline (kind, weight and template version in the name)."""
        weight = "" if self.pipeline_kind == "rrf" and not getattr(self.dialect, "rrf_weights", True) else (
            f"-w{round(self.vector_weight * 100)}"
        )
        return f"{self.prefix}-hybrid-{self.pipeline_kind}{weight}-v1"

    async def ensure_pipeline(self) -> None:
        """Create or update the hybrid search pipeline (PUT is idempotent)."""
        body = self.dialect.pipeline_body(self.pipeline_kind or "minmax", self.vector_weight)
        await self.dialect.request("PUT", f"/_search/pipeline/{self.pipeline_name()}", body)

    async def refresh(self) -> None:
        """Make every finished write visible to searches."""
        names = ",".join(self.index(k) for k in INDEX_KINDS)
        await self.dialect.request("POST", f"/{names}/_refresh")

    async def drop(self) -> None:
        """Delete this prefix's indices and pipeline (tests and `clear`)."""
        for kind in INDEX_KINDS:
            for concrete in await self._concrete(self.index(kind)):
                await self.dialect.request("DELETE", f"/{concrete}")
        if self.caps and self.caps.hybrid_query:
            try:
                await self.dialect.request("DELETE", f"/_search/pipeline/{self.pipeline_name()}")
            except RequestFailed as exc:
                if exc.status != 404:
                    raise

    async def _concrete(self, alias: str) -> list[str]:
        try:
            resp = await self.dialect.request("GET", f"/_alias/{alias}")
        except RequestFailed as exc:
            if exc.status == 404:
                return []
            raise
        return sorted(resp)

    # ----------------------------------------------------------------------------------- writes

    def _check_vector(self, vector: list[float] | None, what: str) -> None:
        if vector is None:
            return
        if not self.dims:
            raise DimensionMismatch(f"{what} carries a vector but the index has no embedding field")
        if len(vector) != self.dims:
            raise DimensionMismatch(f"{what} has a {len(vector)}-d vector; the index expects {self.dims}-d")

    def _chunk_source(self, chunk: Chunk) -> dict:
        if len(chunk.text.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES:
            raise InvalidInput(
                f"chunk {chunk.id} of {chunk.path} has more than {MAX_TEXT_BYTES >> 20} MiB of text; split it"
            )
        self._check_vector(chunk.embedding, f"chunk {chunk.id} of {chunk.path}")
        src = chunk_source(chunk)
        _check_serialisable(f"chunk {chunk.id} of {chunk.path}", src)
        return src

    @staticmethod
    def _file_source(file: FileDoc) -> dict:
        src = {
            "path": file.path,
            "st_mtime": file.st_mtime,
            "size": file.size,
            "hash": file.hash,
            "chunk_ids": file.chunk_ids,
            "front_matter": file.front_matter,
            "links": [{"target": link.target, "anchor": link.anchor} for link in file.links],
        }
        _check_serialisable(f"file {file.path}", src)
        return src

    async def upsert(
        self, files: list[tuple[FileDoc, list[Chunk]]], refresh: bool = True, unchanged: set[str] | None = None
    ) -> BulkOutcome:
        """Store files with their chunks and links; each file's chunks replace the ones stored for its path.

        `unchanged`: ids of chunks the caller found stored exactly as given, vector included (`vector_ids`); they
        are not written again (no vector to send, no HNSW insert). One that is no longer stored when the write
        starts (another writer removed it) is written as given."""
        if not files:
            return BulkOutcome()
        by_path: dict[str, tuple[FileDoc, list[Chunk]]] = {}
        for file, chunks in files:
            for chunk in chunks:
                if chunk.path != file.path:
                    raise InvalidInput(f"chunk {chunk.id} has path {chunk.path!r} but belongs to file {file.path!r}")
            by_path[file.path] = (file, chunks)  # a path given twice: the last one wins
        chunk_index, files_index, links_index = (self.index(k) for k in INDEX_KINDS)
        sources = {path: [self._chunk_source(c) for c in chunks] for path, (_, chunks) in by_path.items()}
        file_sources = {path: self._file_source(file) for path, (file, _) in by_path.items()}
        stored = await self._stored(list(by_path))

        # Phase 0: files not stored before get a placeholder file doc (st_mtime -1, no links) first, so chunks that
        # a crash between the phases leaves behind still belong to a file doc: the next sync sees its mtime differ
        # and re-indexes the file, or deletes all its chunks if the file is gone. `create` lets only one of two
        # writers adding the same file go on.
        placeholders = {p: {**file_sources[p], "st_mtime": -1.0, "links": []} for p in by_path if p not in stored.versions}
        zero = await self.dialect.bulk(
            [{"_op_type": "create", "_index": files_index, "_id": doc_id(p), "_source": s} for p, s in placeholders.items()]
        )
        await self._settle_file_conflicts(zero, placeholders, file_sources)
        versions = {**stored.versions, **self._file_versions(zero, placeholders)}
        for path in [p for p in placeholders if p not in versions]:  # failed, lost, or already stored by another
            del by_path[path], sources[path]

        # Phase 1: the new chunks (not those stored exactly as given already).
        keep = {doc_id(c) for c in unchanged or ()}
        phase1 = [
            {"_op_type": "index", "_index": chunk_index, "_id": doc_id(src["chunk_id"]), "_routing": path, "_source": src}
            for path, srcs in sources.items()
            for src in srcs
            if doc_id(src["chunk_id"]) not in keep or doc_id(src["chunk_id"]) not in stored.chunks[path]
        ]
        first = await self._bulk_streams(phase1)
        failed_ids = {f.id for f in first.failures}
        failed_paths = {a["_routing"] for a in phase1 if a["_id"] in failed_ids}

        # Phase 2, per file whose chunks were all stored: stale chunks and links go, new links come, and last the
        # file doc, written only if it is still the version this writer read (`if_seq_no`/`if_primary_term`).
        # For the other files the new chunks that landed are taken back (unless stored before), and so is the
        # placeholder of a new file. Take-backs are conditional on this writer's own write: a 409 there means
        # another writer has rewritten the doc since, and it is left alone.
        phase2: list[dict] = []
        takeback: list[dict] = []
        stale: dict[str, tuple[set[str], set[str]]] = {}
        for path, (file, chunks) in by_path.items():
            new_ids = {doc_id(c.id) for c in chunks}
            if path in failed_paths:
                takeback += self._takebacks(chunk_index, sorted(new_ids - failed_ids - stored.chunks[path]), first, path)
                if path in placeholders:
                    takeback += self._takebacks(files_index, [doc_id(path)], zero)
                continue
            new_links = {link.id: (pos, link) for pos, link in enumerate(file.links) if link.source == path}
            stale[path] = (stored.chunks[path] - new_ids, stored.links[path] - set(new_links))
            phase2 += [
                {"_op_type": "delete", "_index": chunk_index, "_id": i, "_routing": path} for i in sorted(stale[path][0])
            ]
            phase2 += [{"_op_type": "delete", "_index": links_index, "_id": i} for i in sorted(stale[path][1])]
            phase2 += [
                {
                    "_op_type": "index",
                    "_index": links_index,
                    "_id": link_id,
                    "_source": {"source": path, "target": link.target, "anchor": link.anchor, "position": pos},
                }
                for link_id, (pos, link) in new_links.items()
            ]
            seq_no, term = versions[path]
            phase2.append(
                {
                    "_op_type": "index",
                    "_index": files_index,
                    "_id": doc_id(path),
                    "_source": file_sources[path],
                    "if_seq_no": seq_no,
                    "if_primary_term": term,
                }
            )
        second = await self.dialect.bulk(phase2 + takeback)
        _forgive_conflicts(second, takeback)
        lost, _ = await self._settle_file_conflicts(second, {p: file_sources[p] for p in stale})
        third = await self._clean_up_lost(lost, by_path, stale, first, second) if lost else BulkOutcome()
        if refresh:
            await self.refresh()
        outcome = BulkOutcome(
            first.succeeded + second.succeeded,
            zero.failures + first.failures + second.failures + third.failures,
            {**first.versions, **second.versions},
        )
        outcome.raise_for_failures()
        return outcome

    async def _bulk_streams(self, actions: list[dict], streams: int = 2) -> BulkOutcome:
        """A large bulk as `streams` concurrent requests. The node indexes one bulk request on one write thread and
        HNSW insertion is CPU-bound, so one stream leaves the other cores idle; two keep two cores busy."""
        if len(actions) < streams * STREAM_MIN_ACTIONS:
            return await self.dialect.bulk(actions)
        step = -(-len(actions) // streams)
        parts = await asyncio.gather(*(self.dialect.bulk(actions[i : i + step]) for i in range(0, len(actions), step)))
        return BulkOutcome(
            sum(p.succeeded for p in parts),
            [f for p in parts for f in p.failures],
            {key: v for p in parts for key, v in p.versions.items()},
        )

    @staticmethod
    def _takebacks(index: str, ids: list[str], written: BulkOutcome, routing: str | None = None) -> list[dict]:
        """Deletes of docs this writer wrote, each only if nobody has rewritten it since (its seq_no/term)."""
        actions = []
        for i in ids:
            if (index, i) not in written.versions:  # this writer's write of it failed: nothing to take back
                continue
            seq_no, term = written.versions[(index, i)]
            action = {"_op_type": "delete", "_index": index, "_id": i, "if_seq_no": seq_no, "if_primary_term": term}
            if routing is not None:
                action["_routing"] = routing
            actions.append(action)
        return actions

    def _file_versions(self, outcome: BulkOutcome, written: dict[str, dict]) -> dict[str, tuple[int, int]]:
        """path -> (seq_no, primary_term) of the file docs this bulk wrote."""
        index = self.index("files")
        return {p: outcome.versions[(index, doc_id(p))] for p in written if (index, doc_id(p)) in outcome.versions}

    async def _settle_file_conflicts(
        self, outcome: BulkOutcome, written: dict[str, dict], final: dict[str, dict] | None = None
    ) -> tuple[dict[str, dict | None], set[str]]:
        """Sort out the file docs of `written` that came back 409 (another writer changed them after this one read).

        A doc whose stored source is exactly what this writer sent is its own write, acknowledged before a retry
        (a dropped connection): it counts as written. A doc equal to this writer's `final` source (another writer
        stored the same version first) counts as done, and its path is returned in the second value. The others
        are lost to another writer: their failures get a reason that says so, and they are returned as path -> the
        stored doc (None if it is gone)."""
        index = self.index("files")
        by_id = {doc_id(p): p for p in written}
        conflicted = [by_id[f.id] for f in outcome.failures if f.status == 409 and f.id in by_id]
        if not conflicted:
            return {}, set()
        current = {d["_id"]: d for d in await self._mget_file_docs(conflicted)}
        lost: dict[str, dict | None] = {}
        done: set[str] = set()
        for path in conflicted:
            doc = current.get(doc_id(path))
            stored = doc["_source"] if doc is not None else None
            if stored is not None and stored == _as_stored(written[path]):
                outcome.versions[(index, doc_id(path))] = (doc["_seq_no"], doc["_primary_term"])
                outcome.succeeded += 1
            elif stored is not None and final is not None and stored == _as_stored(final[path]):
                done.add(path)
                outcome.succeeded += 1
            else:
                lost[path] = doc
        reason = (
            "another writer changed this file in the index after this writer read it (version conflict); the other "
            "writer's version was kept. Run the sync again to store the file as it is now"
        )
        settled = {doc_id(p) for p in conflicted}
        outcome.failures = [f for f in outcome.failures if f.id not in settled or f.status != 409] + [
            BulkItemFailure(index, doc_id(p), 409, f"{p}: {reason}") for p in lost
        ]
        return lost, done

    async def _clean_up_lost(
        self,
        lost: dict[str, dict | None],
        by_path: dict[str, tuple[FileDoc, list[Chunk]]],
        stale: dict[str, tuple[set[str], set[str]]],
        first: BulkOutcome,
        second: BulkOutcome,
    ) -> BulkOutcome:
        """Undo what a writer that lost a file to another writer did to it in phases 1 and 2.

        Its new chunks and links that the winner's file doc does not list are taken back (each only if still this
        writer's write). If it deleted a chunk or link the winner lists, or rewrote a link at another position, the
        winner's file doc is marked stale (st_mtime -1, only if unchanged since), so the next sync re-indexes it."""
        chunk_index, files_index, links_index = (self.index(k) for k in INDEX_KINDS)
        actions: list[dict] = []
        for path, current in lost.items():
            src = current["_source"] if current else {}
            keep_chunks = {doc_id(c) for c in src.get("chunk_ids") or []}
            keep_links = {
                Link(source=path, target=x["target"], anchor=x.get("anchor", "")).id: pos
                for pos, x in enumerate(src.get("links") or [])
            }
            file, chunks = by_path[path]
            mine = {doc_id(c.id) for c in chunks}
            actions += self._takebacks(chunk_index, sorted(mine - keep_chunks), first, path)
            my_links = {link.id: pos for pos, link in enumerate(file.links) if link.source == path}
            actions += self._takebacks(links_index, sorted(set(my_links) - set(keep_links)), second)
            stale_chunks, stale_links = stale[path]
            harmed = (
                bool(stale_chunks & keep_chunks)
                or bool(stale_links & set(keep_links))
                or any(keep_links.get(i, pos) != pos for i, pos in my_links.items())
            )
            if current is not None and harmed:
                actions.append(
                    {
                        "_op_type": "index",
                        "_index": files_index,
                        "_id": doc_id(path),
                        "_source": {**src, "st_mtime": -1.0},
                        "if_seq_no": current["_seq_no"],
                        "if_primary_term": current["_primary_term"],
                    }
                )
        outcome = await self.dialect.bulk(actions)
        _forgive_conflicts(outcome, actions)
        return outcome

    async def _stored(self, paths: list[str]) -> _Stored:
        """What is stored for these paths: chunk and link ids from the file docs (real-time) and a search (orphans),
        and the version of each file doc."""
        stored = _Stored({p: set() for p in paths}, {p: set() for p in paths}, {})
        for doc in await self._mget_file_docs(paths):
            file = _file_from_source(doc["_source"])
            stored.versions[file.path] = (doc["_seq_no"], doc["_primary_term"])
            stored.chunks[file.path].update(doc_id(c) for c in file.chunk_ids)
            stored.links[file.path].update(link.id for link in file.links)
        async for s in self._scan(self.index("chunks"), q.any_of("path", paths), ["chunk_id", "path"], ["chunk_id"]):
            stored.chunks[s["path"]].add(doc_id(s["chunk_id"]))
        link_fields = ["source", "target", "anchor"]
        async for s in self._scan(self.index("links"), q.any_of("source", paths), link_fields, link_fields):
            stored.links[s["source"]].add(Link(source=s["source"], target=s["target"], anchor=s.get("anchor", "")).id)
        return stored

    async def _scan(self, index: str, query: dict, source: list[str] | bool, sort: list[str]):
        """Yield the `_source` of every matching doc, sorted, without a 10,000-hit window."""
        after = None
        while True:
            body = q.scan_body(query, source, sort, after)
            hits = (await self.dialect.request("POST", f"/{index}/_search", body))["hits"]["hits"]
            for hit in hits:
                yield hit["_source"]
            if len(hits) < q.SCAN_PAGE:
                return
            after = hits[-1]["sort"]

    async def delete(self, paths: str | Iterable[str], refresh: bool = True) -> int:
        """Delete files with their chunks and outgoing links; unknown paths are skipped. Returns files deleted."""
        paths = [paths] if isinstance(paths, str) else list(dict.fromkeys(paths))
        if not paths:
            return 0
        stored = await self._stored(paths)
        old_chunks, old_links, existing = stored.chunks, stored.links, set(stored.versions)
        # Chunks and links first, file docs after: a crash in between leaves a file doc whose chunks are partly
        # gone (the next sync deletes it again), never chunks without a file doc that nothing would find.
        parts: list[dict] = []
        for path in paths:
            parts += [
                {"_op_type": "delete", "_index": self.index("chunks"), "_id": i, "_routing": path}
                for i in sorted(old_chunks[path])
            ]
            parts += [{"_op_type": "delete", "_index": self.index("links"), "_id": i} for i in sorted(old_links[path])]
        outcome = await self.dialect.bulk(parts) if parts else BulkOutcome()
        failed = {f.id for f in outcome.failures}
        untouched = {a["_routing"] for a in parts if a["_id"] in failed and "_routing" in a}
        files = [
            {"_op_type": "delete", "_index": self.index("files"), "_id": doc_id(path)}
            for path in paths
            if path in existing and path not in untouched
        ]
        second = await self.dialect.bulk(files) if files else BulkOutcome()
        outcome = BulkOutcome(outcome.succeeded + second.succeeded, outcome.failures + second.failures)
        if refresh:
            await self.refresh()
        outcome.raise_for_failures()
        return len(existing)

    async def clear(self) -> None:
        """Drop every file, chunk and link of this prefix (the indices are recreated empty)."""
        await self.drop()
        await self.ensure_indices()
        if self.native_pipeline_wanted():
            await self.ensure_pipeline()

    # ------------------------------------------------------------------------------------ files

    async def _mget_file_docs(self, paths: list[str]) -> list[dict]:
        """The stored file docs of these paths (real-time), with `_source`, `_seq_no` and `_primary_term`."""
        if not paths:
            return []
        resp = await self.dialect.request("POST", f"/{self.index('files')}/_mget", q.mget_ids([doc_id(p) for p in paths]))
        return [d for d in resp["docs"] if d.get("found")]

    async def _mget_files(self, paths: list[str]) -> list[FileDoc]:
        return [_file_from_source(d["_source"]) for d in await self._mget_file_docs(paths)]

    async def get_files(self, paths: list[str] | None = None) -> list[FileDoc]:
        """File docs by path (missing ones skipped, input order kept); None = every file, sorted by path."""
        if paths is None:
            return [_file_from_source(s) async for s in self._scan(self.index("files"), q.match_all(), True, ["path"])]
        found = {f.path: f for f in await self._mget_files(list(dict.fromkeys(paths)))}
        return [found[p] for p in dict.fromkeys(paths) if p in found]

    async def indexed(self, paths: Iterable[str]) -> set[str]:
        """Which of these paths are indexed files (one mget)."""
        paths = list(dict.fromkeys(paths))
        if not paths:
            return set()
        resp = await self.dialect.request(
            "POST", f"/{self.index('files')}/_mget", q.mget_ids([doc_id(p) for p in paths]), {"_source": "false"}
        )
        by_id = {doc_id(p): p for p in paths}
        return {by_id[d["_id"]] for d in resp["docs"] if d.get("found")}

    # ------------------------------------------------------------------------------------ links

    async def get_outlinks(self, path: str, scope: LinkScope = LinkScope.REAL) -> list[Link]:
        """Links written in `path`, in order; REAL when the target is an indexed file, VIRTUAL otherwise."""
        files = await self._mget_files([path])
        if not files:
            return []
        links = files[0].links
        if scope == LinkScope.ALL or not links:
            return links
        real = await self.indexed(link.target for link in links)
        return [link for link in links if (link.target in real) == (scope == LinkScope.REAL)]

    async def get_inlinks(self, path: str, scope: LinkScope = LinkScope.REAL) -> list[Link]:
        """Links from every indexed file to `path`, sorted by source; REAL when `path` itself is indexed."""
        if scope != LinkScope.ALL:
            is_real = bool(await self.indexed([path]))
            if is_real != (scope == LinkScope.REAL):
                return []
        return [
            Link(source=s["source"], target=s["target"], anchor=s.get("anchor", ""))
            async for s in self._scan(self.index("links"), q.equals("target", path), True, ["source", "position"])
        ]

    async def expand(self, paths: list[str], max_per_direction: int = 5) -> dict[str, list[Neighbour]]:
        """Outlinks and inlinks of several files with each neighbour's name/description: two requests in all."""
        paths = list(dict.fromkeys(paths))
        if not paths or max_per_direction <= 0:
            return {}
        body = q.link_expansion_msearch(self.index("links"), paths, max_per_direction)
        responses = (await self.dialect.request("POST", "/_msearch", body))["responses"]
        edges: dict[str, list[tuple[str, Link]]] = {p: [] for p in paths}
        for i, resp in enumerate(responses):
            if "error" in resp:
                raise RequestFailed(f"link expansion failed: {resp['error']}")
            direction, path = ("out", paths[i]) if i < len(paths) else ("in", paths[i - len(paths)])
            for hit in resp["hits"]["hits"]:
                s = hit["_source"]
                edges[path].append((direction, Link(source=s["source"], target=s["target"], anchor=s.get("anchor", ""))))
        neighbours = {link.target if d == "out" else link.source for items in edges.values() for d, link in items}
        files = {f.path: f for f in await self._mget_files(sorted(neighbours))}
        out: dict[str, list[Neighbour]] = {}
        for path, items in edges.items():
            rendered = []
            for direction, link in items:
                other = link.target if direction == "out" else link.source
                fm = files[other].front_matter if other in files else {}
                rendered.append(
                    Neighbour(
                        direction=direction,
                        path=other,
                        anchor=link.anchor,
                        real=other in files,
                        name=str(fm.get("name") or ""),
                        description=str(fm.get("description") or ""),
                    )
                )
            out[path] = rendered
        return out

    async def traverse(self, path: str, depth: int = 2, max_nodes: int = 1000) -> dict[str, int]:
        """Files reachable from `path` over links in either direction, with their distance (one search per level)."""
        seen = {path: 0}
        frontier = [path]
        for level in range(1, depth + 1):
            if not frontier or len(seen) >= max_nodes:
                break
            nxt = []
            async for s in self._scan(self.index("links"), q.links_touching(frontier), ["source", "target"], ["source", "target", "anchor"]):
                for other in (s["source"], s["target"]):
                    if other not in seen and len(seen) < max_nodes:
                        seen[other] = level
                        nxt.append(other)
            frontier = nxt
        return seen

    # ----------------------------------------------------------------------------------- search

    async def _candidates(self, body: dict, branch: str, params: dict | None = None) -> list[Hit]:
        """Run a search for scores, chunk ids and paths only; the hits' chunks carry no text until `_with_chunks`."""
        resp = await self.dialect.request("POST", f"/{self.index('chunks')}/_search", candidates_only(body), params)
        return [
            _scored(h, branch, Chunk(id=h["fields"]["chunk_id"][0], path=h["fields"]["path"][0], text=""))
            for h in resp["hits"]["hits"]
        ]

    async def _with_chunks(self, hits: list[Hit]) -> list[Hit]:
        """The hits with their stored chunks, from one `_mget` at the searched refresh point (`realtime=false`)."""
        if not hits:
            return []
        body = q.mget_routed([(doc_id(h.chunk.id), h.chunk.path) for h in hits])
        params = {"realtime": "false", "_source_excludes": ",".join(SOURCE_EXCLUDES)}
        resp = await self.dialect.request("POST", f"/{self.index('chunks')}/_mget", body, params)
        out = []
        for hit, doc in zip(hits, resp["docs"], strict=True):
            if doc.get("found"):
                out.append(hit.model_copy(update={"chunk": _chunk_from_source(doc["_source"])}))
            else:  # only if the chunk went between the search and the fetch (a refresh in between)
                log.info("search hit %s of %s is gone from the index; left out", hit.chunk.id, hit.chunk.path)
        return out

    async def _search_hits(self, body: dict, branch: str) -> list[Hit]:
        """Run a search whose hits carry their sources (one branch: only the hits to return are asked for)."""
        resp = await self.dialect.request("POST", f"/{self.index('chunks')}/_search", body)
        return [_scored(h, branch, _chunk_from_source(h["_source"])) for h in resp["hits"]["hits"]]

    def _knn_body(self, vector: list[float], k: int, f: SearchFilter, size: int | None = None) -> dict:
        if not self.dims:
            raise CapabilityError(f"index {self.index('chunks')} has no embedding field; enable embeddings and reindex")
        self._check_vector(vector, "the query")
        return self.dialect.knn_body(vector, k, f, size=size)

    async def keyword_search(self, query: str, limit: int, search_filter: SearchFilter | dict | None = None) -> list[Hit]:
        """BM25 over chunk text, filtered server-side; empty query or limit <= 0 gives []."""
        f = SearchFilter.parse(search_filter)
        if not query or not query.strip() or limit <= 0:
            return []
        return await self._search_hits(build_keyword_body(query, limit, f, self.keyword_fields), "keyword")

    async def vector_search(
        self, vector: list[float] | None, limit: int, search_filter: SearchFilter | dict | None = None, k: int = 0
    ) -> list[Hit]:
        """k-NN over chunk embeddings with the filter inside the k-NN clause; scores are cosine similarity.
        The top `limit` of the `k` nearest (k defaults to limit) come back."""
        f = SearchFilter.parse(search_filter)
        if not vector or limit <= 0:
            return []
        return await self._search_hits(self._knn_body(vector, max(k, limit), f, size=limit), "vector")

    def native_hybrid_available(self) -> bool:
        """Whether one-request hybrid search can be used with the current server and configuration."""
        if self.hybrid == "client" or not self.caps or not self.dims:
            return False
        return self.dialect.native_hybrid(self.caps, self.pipeline_kind)

    async def search(
        self,
        query: str,
        vector: list[float] | None = None,
        limit: int = 10,
        search_filter: SearchFilter | dict | None = None,
        mode: str = "hybrid",
        candidate_multiplier: int = 5,
        min_score: float = 0.0,
    ) -> SearchResult:
        """Keyword, vector or hybrid search as ReMe does it: candidates per branch, fusion, min_score, limit.

        Candidates are ranked from scores and ids alone; only the hits returned are fetched with their text."""
        f = SearchFilter.parse(search_filter)
        if not query or not query.strip() or limit <= 0:
            return SearchResult(hits=[])
        candidates = candidate_depth(limit, candidate_multiplier)
        # One branch: its top `limit` hits are the first `limit` of its candidates, and min_score only cuts the tail,
        # so only those are asked for (the k-NN search still explores `candidates` neighbours).
        if mode == "keyword" or (mode == "hybrid" and vector is None):
            hits = await self.keyword_search(query, limit, f)
            return SearchResult(hits=apply_min_score(hits, min_score), keyword_hits=len(hits), fusion="keyword")
        if mode == "vector":
            hits = await self.vector_search(vector, limit, f, k=candidates)
            return SearchResult(hits=apply_min_score(hits, min_score), vector_hits=len(hits), fusion="vector")
        if mode != "hybrid":
            raise ConfigError(f"search mode must be hybrid, keyword or vector, got {mode!r}")
        if self.native_hybrid_available():
            return await self._native_hybrid(query, vector, limit, candidates, f, min_score)
        if self.hybrid == "native":
            raise CapabilityError(
                f"native {self.pipeline_kind} hybrid search needs the neural-search plugin (OpenSearch) or the licensed "
                f"rrf retriever (Elasticsearch), and an index with vectors; "
                f"{self.caps.engine if self.caps else 'the server'} lacks it. Use hybrid: auto or client."
            )
        # Two branches: candidates are ranked from ids and scores alone, and only the fused top `limit` is fetched.
        keyword_body = build_keyword_body(query, candidates, f, self.keyword_fields)
        keyword, vec = await asyncio.gather(
            self._candidates(keyword_body, "keyword"),
            self._candidates(self._knn_body(vector, candidates, f), "vector") if vector else asyncio.sleep(0, []),
        )
        if keyword and vec:
            fused, fusion = weighted_rrf(vec, keyword, self.vector_weight), "client"
        else:
            fused, fusion = (vec or keyword), ("vector" if vec else "keyword")
        top = await self._with_chunks(apply_min_score(fused, min_score)[:limit])
        return SearchResult(hits=top, keyword_hits=len(keyword), vector_hits=len(vec), fusion=fusion)

    async def _native_hybrid(
        self, query: str, vector: list[float], limit: int, candidates: int, f: SearchFilter, min_score: float
    ) -> SearchResult:
        self._check_vector(vector, "the query")
        body = self.dialect.hybrid_body(query, vector, candidates, f, self.keyword_fields)
        params = {"search_pipeline": self.pipeline_name()} if self.dialect.uses_search_pipeline else None
        try:
            hits = await self._candidates(body, "hybrid", params)
        except RequestFailed as exc:
            if params is None or "pipeline" not in str(exc).lower():
                raise
            await self.ensure_pipeline()  # deleted behind our back: recreate once
            hits = await self._candidates(body, "hybrid", params)
        ceiling = 1.0 + 1e-6 if self.pipeline_kind == "minmax" else 2.0 / 61 + 1e-6
        if any(not 0.0 <= h.score <= ceiling for h in hits):
            raise RequestFailed(
                f"the hybrid response did not go through the {self.pipeline_name()} pipeline (raw scores came back); "
                "check that the neural-search plugin is installed and the pipeline exists"
            )
        return SearchResult(hits=await self._with_chunks(apply_min_score(hits, min_score)[:limit]), fusion="native")

    # ------------------------------------------------------------------------------ embeddings

    async def get_chunks(self, ids_by_path: dict[str, list[str]], with_vectors: bool = False) -> dict[str, dict]:
        """Stored chunk sources by chunk id (routing by path); vectors only when asked for."""
        body = q.mget_routed([(doc_id(cid), path) for path, ids in ids_by_path.items() for cid in ids])
        if not body["docs"]:
            return {}
        params = self.dialect.vector_read_params() if with_vectors else {"_source_excludes": "embedding"}
        resp = await self.dialect.request("POST", f"/{self.index('chunks')}/_mget", body, params)
        return {d["_source"]["chunk_id"]: d["_source"] for d in resp["docs"] if d.get("found")}

    async def vector_ids(self, ids_by_path: dict[str, list[str]]) -> set[str]:
        """Which of these chunks have a stored vector (answered by the index: no vector is read)."""
        wanted = {doc_id(cid): cid for ids in ids_by_path.values() for cid in ids}
        if not wanted or not self.dims:
            return set()
        query = q.with_vector_among(sorted(wanted))
        return {s["chunk_id"] async for s in self._scan(self.index("chunks"), query, ["chunk_id"], ["chunk_id"])}

    async def chunks_without_vectors(self, batch: int = 500):
        """Yield batches of stored chunks that have no embedding (for backfilling)."""
        page: list[Chunk] = []
        async for src in self._scan(self.index("chunks"), q.without_field("embedding"), {"excludes": SOURCE_EXCLUDES}, ["chunk_id"]):
            page.append(_chunk_from_source(src))
            if len(page) >= batch:
                yield page
                page = []
        if page:
            yield page

    async def set_vectors(self, vectors: dict[tuple[str, str], list[float]], refresh: bool = True) -> BulkOutcome:
        """Write embeddings onto stored chunks, keyed by (path, chunk id), with partial updates."""
        actions = []
        for (path, cid), vec in vectors.items():
            self._check_vector(vec, f"chunk {cid} of {path}")
            actions.append(
                {"_op_type": "update", "_index": self.index("chunks"), "_id": doc_id(cid), "_routing": path, "doc": {"embedding": vec}}
            )
        outcome = await self.dialect.bulk(actions)
        if refresh:
            await self.refresh()
        outcome.raise_for_failures()
        return outcome

    # ----------------------------------------------------------------------------- maintenance

    async def stats(self) -> dict[str, dict]:
        """Per index kind: docs, deleted docs, segments, size."""
        out = {}
        for kind in INDEX_KINDS:
            resp = await self.dialect.request("GET", f"/{self.index(kind)}/_stats/docs,segments,store")
            total = resp["_all"]["primaries"]
            out[kind] = {
                "index": ",".join(sorted(resp.get("indices", {}))),
                "docs": total["docs"]["count"],
                "deleted": total["docs"]["deleted"],
                "segments": total["segments"]["count"],
                "bytes": total["store"]["size_in_bytes"],
            }
        return out

    async def optimize(self, deleted_ratio: float = 0.1, max_segments: int | None = None) -> dict:
        """Force-merge: expunge deletes in indices whose deleted-docs ratio passes the threshold."""
        before = await self.stats()
        merged = []
        for kind, s in before.items():
            total = s["docs"] + s["deleted"]
            if max_segments is not None:
                params = {"max_num_segments": str(max_segments)}
            elif total and s["deleted"] / total >= deleted_ratio:
                params = {"only_expunge_deletes": "true"}
            else:
                continue
            await self.dialect.request("POST", f"/{self.index(kind)}/_forcemerge", None, params)
            merged.append(kind)
        if merged:
            await self.refresh()
        return {"merged": merged, "before": before, "after": await self.stats()}


__all__ = ["MemoryStore", "chunk_source", "stored_chunk_source", "validate_prefix"]
