"""Writing a sync run's batches: read and chunk files, attach reused or new vectors, upsert them (isolating the
files the server rejects), delete vanished files, and backfill missing vectors. `SyncWriter` also keeps what the
store holds per file (`known`), which it reads once and updates as it writes."""

from __future__ import annotations

import asyncio

from ..core.errors import BulkError, InvalidInput, RequestFailed
from ..core.models import Chunk, FileDoc, doc_id
from ..embeddings.embedders import Embedder
from ..store import MemoryStore
from .reme_chunkers import ReMeChunkers
from .report import Failure, Reporter, Summary
from .scan import LocalFile, parse, read_text
from .state import State, _Known

DELETE_BATCH = 500


class SyncWriter:
    """Writes a sync run's batches into one MemoryStore and keeps what that store holds per file.

    Owns the store's file listing (`known`: read once, updated by every write and delete, dropped by `forget`
    after an outage) and the vectors of chunks of files deleted in this run, reused by text hash."""

    def __init__(
        self,
        store: MemoryStore,
        report: Reporter,
        state: State,
        stop: asyncio.Event,
        chunk_chars: int,
        embedder: Embedder | None = None,
        reme_chunkers: ReMeChunkers | None = None,
    ):
        """`state` records files skipped as binary; `stop` ends a backfill early; `reme_chunkers` chunks with ReMe's
        own chunkers (None: the built-in ones, sized by `chunk_chars`)."""
        self.store = store
        self.report = report
        self.state = state
        self.stop = stop
        self.embedder = embedder
        self.chunk_chars = chunk_chars
        self.reme_chunkers = reme_chunkers
        self._known: dict[str, _Known] | None = None
        self._reuse: dict[str, list[float]] = {}  # text hash -> vector, from files deleted in this run

    async def known(self) -> dict[str, _Known]:
        """What the store holds per path (mtime, chunk ids), read on first use."""
        if self._known is None:
            try:
                files = await self.store.links.get_files()
            except RequestFailed as exc:  # no index yet (dry run before the first sync): nothing is stored
                if exc.status != 404:
                    raise
                files = []
            self._known = {f.path: _Known(f.st_mtime, f.chunk_ids) for f in files}
        return self._known

    def forget(self) -> None:
        """Read what the store holds again on next use (after an outage)."""
        self._known = None

    def prepare(self, batch: list[tuple[LocalFile, str]]) -> list[tuple[str, str, FileDoc | None, list[Chunk], str]]:
        """Read and chunk files: (path, kind, file doc or None, chunks, failure reason or skip reason)."""
        out: list[tuple[str, str, FileDoc | None, list[Chunk], str]] = []
        readable = []
        for file, kind in batch:
            try:
                read = read_text(file, self.report.warn)
            except OSError as exc:
                self.report.warn(f"{file.path}: cannot read ({exc.strerror})")
                out.append((file.path, kind, None, [], f"cannot read: {exc.strerror}"))
                continue
            if read is None:
                out.append((file.path, "skipped", None, [], "binary"))
                self.state.data["skipped"][file.path] = [file.st_mtime, "binary"]
                continue
            readable.append((file, kind, *read))
        if self.reme_chunkers is not None:
            results = self.reme_chunkers.chunk_files([(file.path, file.abs) for file, *_ in readable])
            for (file, kind, _, _), result in zip(readable, results, strict=True):
                if isinstance(result, Exception):
                    reason = f"ReMe's chunker failed: {type(result).__name__}: {result}"
                    self.report.warn(f"{file.path}: {reason}")
                    out.append((file.path, kind, None, [], reason))
                    continue
                out.append((file.path, kind, *result, ""))  # the file doc and chunks ReMe's file store writes
            return out
        for file, kind, text, st in readable:
            parsed = parse(file.path, text, self.report.warn, self.chunk_chars)
            doc = FileDoc(
                path=file.path,
                st_mtime=st.st_mtime,
                chunk_ids=[c.id for c in parsed.chunks],
                front_matter=parsed.front_matter,
                links=parsed.links,
                size=st.st_size,
            )
            out.append((file.path, kind, doc, parsed.chunks, ""))
        return out

    async def write(self, prepared: list, summary: Summary) -> None:
        """Upsert prepared files; counts what was written and lists what failed in `summary`."""
        items = []
        kinds = {}
        for path, kind, doc, chunks, reason in prepared:
            if kind == "skipped":
                summary.skipped += 1
            elif doc is None:
                summary.failed.append(Failure(path, reason))
            else:
                items.append((doc, chunks))
                kinds[path] = kind
        if not items:
            return
        unchanged = await self._attach_vectors(items, summary) if self.embedder else set()
        failed = await self._upsert(items, unchanged)
        known = await self.known()
        written_chunks = 0
        for doc, chunks in items:
            if doc.path in failed:
                summary.failed.append(Failure(doc.path, failed[doc.path]))
                continue
            known[doc.path] = _Known(doc.st_mtime, doc.chunk_ids)
            setattr(summary, kinds[doc.path], getattr(summary, kinds[doc.path]) + 1)
            written_chunks += len(chunks)
        summary.chunks += written_chunks
        self.report.advance(len(items), written_chunks)

    async def _upsert(self, items: list[tuple[FileDoc, list[Chunk]]], unchanged: set[str]) -> dict[str, str]:
        """Write a batch (chunks in `unchanged` are stored as given, vector included: not written again); returns
        failed path -> reason. Invalid input is isolated by retrying file by file."""
        try:
            await self.store.upsert(items, refresh=False, unchanged=unchanged)
            return {}
        except BulkError as exc:
            return self._bulk_failures(items, exc)
        except InvalidInput:
            if len(items) == 1:
                raise
        failed: dict[str, str] = {}
        for item in items:
            try:
                await self.store.upsert([item], refresh=False, unchanged=unchanged)
            except BulkError as exc:
                failed.update(self._bulk_failures([item], exc))
            except InvalidInput as exc:
                failed[item[0].path] = str(exc)
        return failed

    @staticmethod
    def _bulk_failures(items: list[tuple[FileDoc, list[Chunk]]], exc: BulkError) -> dict[str, str]:
        owner: dict[str, str] = {}
        for doc, chunks in items:
            owner[doc_id(doc.path)] = doc.path
            owner.update({doc_id(c.id): doc.path for c in chunks})
            owner.update({link.id: doc.path for link in doc.links})
        failed: dict[str, str] = {}
        for f in exc.failures:
            path = owner.get(f.id)
            if path is not None:
                failed.setdefault(path, f"{f.status} {f.reason}")
        return failed

    async def delete(self, paths: list[str], summary: Summary) -> None:
        """Delete vanished files in batches; a file whose delete fails is listed in `summary` and stays known."""
        known = await self.known()
        for i in range(0, len(paths), DELETE_BATCH):
            batch = paths[i : i + DELETE_BATCH]
            try:
                await self.store.delete(batch, refresh=False)
            except BulkError as exc:
                bad = {f.id for f in exc.failures}
                reason = "; ".join(f"{f.status} {f.reason}" for f in exc.failures[:3])
                for p in batch:
                    if doc_id(p) in bad:
                        summary.failed.append(Failure(p, f"delete failed: {reason}"))
                    else:
                        known.pop(p, None)
                        summary.deleted += 1
                continue
            for p in batch:
                known.pop(p, None)
            summary.deleted += len(batch)

    # ---------------------------------------------------------------------------------- vectors

    def _require_embedder(self) -> Embedder:
        """The embedder, where the caller checked there is one."""
        if self.embedder is None:
            raise RuntimeError("this sync has no embedder: vectors are off")
        return self.embedder

    async def collect_reusable(self, deleted: list[str]) -> None:
        """Keep the stored vectors of the chunks of files about to be deleted, by text hash, for reuse."""
        known = await self.known()
        ids = {p: known[p].chunk_ids for p in deleted if p in known}
        if ids:
            stored = await self.store.vectors.get_chunks(ids, with_vectors=True)
            self._reuse.update(
                {s["hash"]: s["embedding"] for s in stored.values() if s.get("embedding") and s.get("hash")}
            )

    async def _attach_vectors(self, items: list[tuple[FileDoc, list[Chunk]]], summary: Summary) -> set[str]:
        """Give the batch's chunks their vectors; returns the ids of chunks stored exactly as given with a vector.

        The store's planner (`VectorStore.plan`) tells those (they are not written again and their vectors are not
        read) and gives a chunk whose id is stored with a vector but something else changed (its lines moved) the
        stored vector back; one whose text a deleted file had reuses that vector; only the rest is embedded."""
        known = await self.known()
        ids = {doc.path: known[doc.path].chunk_ids for doc, _ in items if doc.path in known}
        plan = await self.store.vectors.plan([c for _, chunks in items for c in chunks], ids)
        summary.reused_vectors += len(plan.unchanged) + len(plan.reusable)
        todo: list[Chunk] = []
        for c in plan.to_embed:
            if vec := self._reuse.get(c.hash):
                c.embedding = vec
                summary.reused_vectors += 1
            else:
                todo.append(c)
        if todo:
            vectors = await asyncio.to_thread(self._require_embedder().embed, [c.text for c in todo])
            for c, vec in zip(todo, vectors, strict=True):
                c.embedding = vec
            summary.embedded += len(todo)
        return plan.unchanged

    async def backfill(self, summary: Summary) -> None:
        """Embed stored chunks that have no vector yet (e.g. after `reindex` to a new model)."""
        async for page in self.store.vectors.without_vectors():
            vectors = await asyncio.to_thread(self._require_embedder().embed, [c.text for c in page])
            await self.store.vectors.set_vectors(
                {(c.path, c.id): v for c, v in zip(page, vectors, strict=True)}, refresh=False
            )
            summary.embedded += len(page)
            if self.stop.is_set():
                return
