"""The writer: runs the rounds of `reme_es.store.protocol` through the port (upsert, delete)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable, Iterable

from ..adapters import lookups as q
from ..adapters.port import Action, IndexPort, StoredDoc
from ..adapters.transport import BulkOutcome
from ..core import telemetry
from ..core.errors import InvalidInput
from ..core.models import Chunk, FileDoc, doc_id
from . import protocol as p
from .sources import (
    checked_chunk_source,
    chunk_contexts,
    dialog_speakers,
    file_from_source,
    file_source,
    link_from_source,
)

STREAM_MIN_ACTIONS = 250  # below this many chunk writes per stream, one bulk request


class Writer:
    """Upserts and deletes of whole files (doc, chunks, links) on one prefix's indices."""

    def __init__(
        self, port: IndexPort, ix: p.Indices, dims: Callable[[], int | None], refresh: Callable[[], Awaitable[None]]
    ):
        self.port, self.ix, self._dims, self._refresh = port, ix, dims, refresh

    async def stored(self, paths: list[str]) -> p.Stored:
        """What is stored for these paths: chunk and link ids from the file docs (real-time) and a search (orphans),
        and the version of each file doc."""
        stored = p.Stored.empty(paths)
        for doc in await self.port.get(self.ix.files, [doc_id(x) for x in paths]):
            file = file_from_source(doc.sourced)
            stored.versions[file.path] = doc.known_version
            stored.chunks[file.path].update(doc_id(c) for c in file.chunk_ids)
            stored.links[file.path].update(link.id for link in file.links)
        async for s in self.port.scan(self.ix.chunks, q.any_of("path", paths), ["chunk_id", "path"], ["chunk_id"]):
            stored.chunks[s["path"]].add(doc_id(s["chunk_id"]))
        link_fields = ["source", "target", "anchor"]
        async for s in self.port.scan(self.ix.links, q.any_of("source", paths), link_fields, link_fields):
            stored.links[s["source"]].add(link_from_source(s).id)
        return stored

    def wanted(self, files: list[tuple[FileDoc, list[Chunk]]]) -> dict[str, p.Wanted]:
        """The files to write, checked (a path given twice: the last one wins). Their chunks carry one new token as
        `written`: the chunks of one write call are of one version (`reme_es.store.one_version`)."""
        by_path: dict[str, tuple[FileDoc, list[Chunk]]] = {}
        for file, chunks in files:
            for chunk in chunks:
                if chunk.path != file.path:
                    raise InvalidInput(f"chunk {chunk.id} has path {chunk.path!r} but belongs to file {file.path!r}")
            by_path[file.path] = (file, chunks)
        dims = self._dims()
        sources, written = {}, secrets.token_hex(6)
        for path, (_, chunks) in by_path.items():
            context, speakers = chunk_contexts(chunks), dialog_speakers(chunks)
            sources[path] = [
                checked_chunk_source(c, dims, context.get(c.id, ""), written, speakers.get(c.id, "")) for c in chunks
            ]
        return {path: p.Wanted(f, cs, sources[path], file_source(f)) for path, (f, cs) in by_path.items()}

    async def _settle(
        self, outcome: BulkOutcome, written: dict[str, dict], final: dict[str, dict] | None = None
    ) -> tuple[dict[str, StoredDoc | None], set[str]]:
        """Read the file docs that came back 409 and settle them (`protocol.settle_conflicts`)."""
        paths = p.conflicted(outcome, written)
        if not paths:
            return {}, set()
        current = {d.id: d for d in await self.port.get(self.ix.files, [doc_id(x) for x in paths])}
        return p.settle_conflicts(outcome, written, current, self.ix, final)

    async def bulk_streams(self, actions: list[Action], streams: int = 2) -> BulkOutcome:
        """A large bulk as `streams` concurrent requests. The node indexes one bulk request on one write thread and
        HNSW insertion is CPU-bound, so one stream leaves the other cores idle; two keep two cores busy."""
        if len(actions) < streams * STREAM_MIN_ACTIONS:
            return await self.port.bulk(actions)
        step = -(-len(actions) // streams)
        parts = await asyncio.gather(*(self.port.bulk(actions[i : i + step]) for i in range(0, len(actions), step)))
        return BulkOutcome(
            sum(x.succeeded for x in parts),
            [f for x in parts for f in x.failures],
            {key: v for x in parts for key, v in x.versions.items()},
        )

    async def upsert(
        self, files: list[tuple[FileDoc, list[Chunk]]], refresh: bool = True, unchanged: set[str] | None = None
    ) -> BulkOutcome:
        """Store files with their chunks and links; each file's chunks replace the ones stored for its path.

        `unchanged`: ids of chunks the caller found stored exactly as given, vector included (`vector_ids`); they
        are not written again. One that is no longer stored when the write starts is written as given."""
        if not files:
            return BulkOutcome()
        wanted = self.wanted(files)
        stored = await self.stored(list(wanted))

        placeheld = p.placeholders(wanted, stored)
        placeholder_actions = p.placeholder_round(placeheld, self.ix)
        first = await self.port.bulk(placeholder_actions)
        _round("placeholder", placeholder_actions)
        await self._settle(first, placeheld, {x: wanted[x].source for x in placeheld})
        versions = {**stored.versions, **p.written_versions(first, placeheld, self.ix)}
        for path in [x for x in placeheld if x not in versions]:  # failed, lost, or already stored by another
            del wanted[path]

        chunk_actions = p.chunk_round(wanted, self.ix, stored, unchanged or frozenset())
        chunks = await self.bulk_streams(chunk_actions)
        _round("chunks", chunk_actions)

        commit = p.commit_round(wanted, stored, versions, placeheld, first, chunks, chunk_actions, self.ix)
        third = await self.port.bulk(commit.actions + commit.takebacks)
        _round("commit", commit.actions + commit.takebacks)
        p.forgive_conflicts(third, commit.takebacks)
        lost, _ = await self._settle(third, {x: wanted[x].source for x in commit.stale})

        repair = BulkOutcome()
        if lost:
            repair_actions = p.repair_round(lost, wanted, commit.stale, chunks, third, self.ix)
            repair = await self.port.bulk(repair_actions)
            _round("repair", repair_actions)
            p.forgive_conflicts(repair, repair_actions)
        if refresh:
            await self._refresh()
        outcome = BulkOutcome(
            chunks.succeeded + third.succeeded,
            first.failures + chunks.failures + third.failures + repair.failures,
            {**chunks.versions, **third.versions},
        )
        outcome.raise_for_failures()
        return outcome

    async def delete(self, paths: str | Iterable[str], refresh: bool = True) -> int:
        """Delete files with their chunks and outgoing links; unknown paths are skipped. Returns files deleted."""
        paths = [paths] if isinstance(paths, str) else list(dict.fromkeys(paths))
        if not paths:
            return 0
        stored = await self.stored(paths)
        parts = p.delete_parts_round(paths, stored, self.ix)
        first = await self.port.bulk(parts) if parts else BulkOutcome()
        _round("delete_parts", parts)
        files = p.delete_files_round(paths, stored, parts, first, self.ix)
        second = await self.port.bulk(files) if files else BulkOutcome()
        _round("delete_files", files)
        outcome = BulkOutcome(first.succeeded + second.succeeded, first.failures + second.failures)
        if refresh:
            await self._refresh()
        outcome.raise_for_failures()
        return len(stored.versions)


def _round(name: str, actions: list) -> None:
    """Count one round of the write protocol that had actions to send (`reme_es.write.rounds`)."""
    if actions:
        telemetry.record("reme_es.write.rounds", 1, {"reme_es.round": name})
