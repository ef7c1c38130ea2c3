"""Apply a workspace's changes to a MemoryStore in batches, optionally embedding, and follow it with `watch`.

One run: walk + mtime diff against the stored file docs -> upsert changed files in batches (no refresh per
batch) -> delete vanished files -> refresh. A file that fails (unreadable, rejected by the server) is listed
with its reason and the run goes on; a failed file keeps what was stored for it before. Vectors are computed
once per chunk text: an unchanged chunk id, or the text of a chunk of a renamed/deleted file, reuses the
stored vector.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import BulkError, ConnectionFailed, InvalidInput, RequestFailed
from ..models import Chunk, FileDoc, doc_id
from ..store import MemoryStore
from .embed import Embedder
from .reme_chunkers import ReMeChunkers
from .scan import MB, Changes, LocalFile, diff, in_scope, parse, read_text, walk

log = logging.getLogger(__name__)

DELETE_BATCH = 500
REFRESH_EVERY = 5000  # files written between refreshes, so a long first sync becomes searchable as it goes


@dataclass
class Failure:
    """A file that could not be synced, and why."""

    path: str
    reason: str


@dataclass
class Summary:
    """What one sync run did."""

    added: int = 0
    modified: int = 0
    deleted: int = 0
    unchanged: int = 0
    skipped: int = 0
    chunks: int = 0
    embedded: int = 0
    reused_vectors: int = 0
    seconds: float = 0.0
    failed: list[Failure] = field(default_factory=list)
    dry_run: bool = False
    interrupted: bool = False
    planned: dict[str, list[str]] = field(default_factory=dict)  # dry run: add/modify/delete -> paths

    @property
    def changes(self) -> int:
        """Files written or deleted."""
        return self.added + self.modified + self.deleted

    @property
    def rate(self) -> float:
        """Chunks written per second."""
        return self.chunks / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict:
        """JSON-ready form (with the rate)."""
        return {**asdict(self), "rate": round(self.rate, 1)}

    def line(self) -> str:
        """One-line human summary."""
        verb = "would sync" if self.dry_run else "synced"
        text = (
            f"{verb}: {self.added} added, {self.modified} modified, {self.deleted} deleted, "
            f"{len(self.failed)} failed, {self.unchanged} unchanged, {self.skipped} skipped"
        )
        if not self.dry_run:
            text += f"; {self.chunks} chunks in {self.seconds:.2f}s ({self.rate:.0f} chunks/s)"
            if self.embedded or self.reused_vectors:
                text += f"; {self.embedded} embedded, {self.reused_vectors} vectors reused"
        return text + (" (interrupted)" if self.interrupted else "")


class Reporter:
    """Where a sync tells what it does: plain log lines by default (the CLI swaps in rich on a TTY)."""

    def __init__(self, echo: Callable[[str], None] | None = None, warn: Callable[[str], None] | None = None):
        self._echo = echo or (lambda msg: log.info("%s", msg))
        self._warn = warn or (lambda msg: log.warning("%s", msg))
        self.warnings: list[str] = []

    def warn(self, message: str) -> None:
        """A problem with one file or setting that does not stop the run."""
        self.warnings.append(message)
        self._warn(message)

    def info(self, message: str) -> None:
        """A progress or status line."""
        self._echo(message)

    def start(self, total: int) -> None:
        """A run with `total` files to write begins."""

    def advance(self, files: int, chunks: int) -> None:
        """A batch of files was written."""

    def finish(self) -> None:
        """The run ended."""


@dataclass
class _Known:
    st_mtime: float
    chunk_ids: list[str]


class State:
    """Small local record per index prefix: last sync time and summary, and files skipped as binary."""

    def __init__(self, path: Path | None):
        self.path = path
        self.data: dict = {"skipped": {}}
        if path and path.is_file():
            try:
                self.data = json.loads(path.read_text()) | {}
                self.data.setdefault("skipped", {})
            except (OSError, ValueError):
                pass

    def save(self) -> None:
        """Write the state atomically (ignored when there is no path)."""
        if not self.path:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1))
        tmp.replace(self.path)


def state_path(prefix: str, hosts: list[str]) -> Path:
    """Where the local sync state of an index prefix on a cluster lives (below the reme-es home)."""
    from ..server.node import reme_es_home

    cluster = hashlib.sha256(",".join(sorted(hosts)).encode()).hexdigest()[:8]
    return reme_es_home() / "state" / f"{prefix}@{cluster}.json"


class WorkspaceSync:
    """Keeps one workspace folder and one MemoryStore in step."""

    def __init__(
        self,
        store: MemoryStore,
        root: Path,
        dirs: list[str],
        suffixes: list[str],
        embedder: Embedder | None = None,
        reporter: Reporter | None = None,
        batch_files: int = 200,
        max_file_bytes: int = 20 * MB,
        chunk_chars: int = 1500,
        state: State | None = None,
        concurrency: int = 2,
        reme_chunkers: ReMeChunkers | None = None,
    ):
        """`reme_chunkers` chunks with ReMe's own chunkers (exactly what ReMe indexes); None uses the built-in ones
        (`chunk_chars` sizes those only)."""
        self.store = store
        self.root = root.resolve()
        self.dirs = dirs
        self.suffixes = suffixes
        self.embedder = embedder
        self.report = reporter or Reporter()
        self.batch_files = batch_files
        self.max_file_bytes = max_file_bytes
        self.chunk_chars = chunk_chars
        self.state = state or State(None)
        self.concurrency = max(1, concurrency)
        self.reme_chunkers = reme_chunkers
        self.stop = asyncio.Event()
        self._known: dict[str, _Known] | None = None
        self._reuse: dict[str, list[float]] = {}  # text hash -> vector, from files deleted in this run

    # ------------------------------------------------------------------------------------ scanning

    async def _load_known(self) -> dict[str, _Known]:
        if self._known is None:
            try:
                files = await self.store.get_files()
            except RequestFailed as exc:  # no index yet (dry run before the first sync): nothing is stored
                if exc.status != 404:
                    raise
                files = []
            self._known = {f.path: _Known(f.st_mtime, f.chunk_ids) for f in files}
        return self._known

    async def plan(self, full: bool = False) -> Changes:
        """Walk the workspace and diff it against the store."""
        known = await self._load_known()
        local, skipped = walk(self.root, self.dirs, self.suffixes, self.max_file_bytes, self.report.warn)
        old_skips = {p: v[0] for p, v in self.state.data["skipped"].items()}
        changes = diff(local, {p: k.st_mtime for p, k in known.items()}, self.dirs, self.suffixes, full, old_skips)
        for path, reason in skipped.items():
            changes.skipped[path] = reason
            if path in known:  # now too large or unreadable: what was stored is kept
                changes.unchanged += 1
        self.state.data["skipped"] = {
            p: v for p, v in self.state.data["skipped"].items() if p in local and p in changes.skipped
        }
        return changes

    # --------------------------------------------------------------------------------------- runs

    async def run(self, full: bool = False, dry_run: bool = False) -> Summary:
        """One sync pass; server-wide failures (connection, auth) raise, per-file ones are collected."""
        started = time.monotonic()
        changes = await self.plan(full)
        summary = Summary(unchanged=changes.unchanged, skipped=len(changes.skipped), dry_run=dry_run)
        if dry_run:
            summary.planned = {
                "add": [f.path for f in changes.added],
                "modify": [f.path for f in changes.modified],
                "delete": list(changes.deleted),
            }
            for label, paths in summary.planned.items():
                for p in paths:
                    self.report.info(f"would {label} {p}")
            summary.added, summary.modified, summary.deleted = (
                len(changes.added),
                len(changes.modified),
                len(changes.deleted),
            )
            summary.seconds = time.monotonic() - started
            return summary

        if self.embedder and changes.deleted:
            await self._collect_reusable(changes.deleted)
        todo = [(f, "added") for f in changes.added] + [(f, "modified") for f in changes.modified]
        self.report.start(len(todo))
        since_refresh = 0
        writing: set[asyncio.Task] = set()
        try:
            batches = [todo[i : i + self.batch_files] for i in range(0, len(todo), self.batch_files)]
            loop = asyncio.get_running_loop()
            pending = loop.run_in_executor(None, self._prepare, batches[0]) if batches else None
            for i in range(len(batches)):
                prepared = await pending
                # Chunk the next batch in a worker thread while up to `concurrency` batches are written.
                pending = loop.run_in_executor(None, self._prepare, batches[i + 1]) if i + 1 < len(batches) else None
                while len(writing) >= self.concurrency:
                    done, writing = await asyncio.wait(writing, return_when=asyncio.FIRST_COMPLETED)
                    for task in done:
                        task.result()
                writing.add(asyncio.create_task(self._write(prepared, summary)))
                since_refresh += len(batches[i])
                if since_refresh >= REFRESH_EVERY:
                    await self._drain(writing)
                    await self.store.refresh()
                    since_refresh = 0
                if self.stop.is_set():
                    summary.interrupted = True
                    if pending is not None:
                        await pending
                    break
            await self._drain(writing)
            if not summary.interrupted:
                await self._delete(changes.deleted, summary)
                if self.embedder and self.store.dims:
                    await self._backfill(summary)
        finally:
            for task in writing:
                task.cancel()
            await asyncio.gather(*writing, return_exceptions=True)
            self.report.finish()
            await self.store.refresh()
        summary.seconds = time.monotonic() - started
        self.state.data["last_sync"] = time.time()
        self.state.data["workspace"] = str(self.root)
        self.state.data["summary"] = summary.to_dict()
        self.state.save()
        return summary

    @staticmethod
    async def _drain(writing: set[asyncio.Task]) -> None:
        """Wait for the batches being written; the first error is raised."""
        while writing:
            task = writing.pop()
            await task

    def _prepare(self, batch: list[tuple[LocalFile, str]]) -> list[tuple[str, str, FileDoc | None, list[Chunk], str]]:
        """Read and chunk files: (path, kind, file doc or None, chunks, failure reason or skip reason)."""
        out = []
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

    async def _write(self, prepared: list, summary: Summary) -> None:
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
        if self.embedder:
            await self._attach_vectors(items, summary)
        failed = await self._upsert(items)
        known = await self._load_known()
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

    async def _upsert(self, items: list[tuple[FileDoc, list[Chunk]]]) -> dict[str, str]:
        """Write a batch; returns failed path -> reason. Invalid input is isolated by retrying file by file."""
        try:
            await self.store.upsert(items, refresh=False)
            return {}
        except BulkError as exc:
            return self._bulk_failures(items, exc)
        except InvalidInput:
            if len(items) == 1:
                raise
        failed: dict[str, str] = {}
        for item in items:
            try:
                await self.store.upsert([item], refresh=False)
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

    async def _delete(self, paths: list[str], summary: Summary) -> None:
        known = await self._load_known()
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

    async def _collect_reusable(self, deleted: list[str]) -> None:
        known = await self._load_known()
        ids = {p: known[p].chunk_ids for p in deleted if p in known}
        if ids:
            stored = await self.store.get_chunks(ids, with_vectors=True)
            self._reuse.update(
                {s["hash"]: s["embedding"] for s in stored.values() if s.get("embedding") and s.get("hash")}
            )

    async def _attach_vectors(self, items: list[tuple[FileDoc, list[Chunk]]], summary: Summary) -> None:
        """Reuse stored vectors for unchanged chunk ids (and texts of deleted files); embed only the rest."""
        known = await self._load_known()
        ids = {doc.path: known[doc.path].chunk_ids for doc, _ in items if doc.path in known}
        stored = await self.store.get_chunks(ids, with_vectors=True) if ids else {}
        todo: list[Chunk] = []
        for _, chunks in items:
            for c in chunks:
                vec = (stored.get(c.id) or {}).get("embedding") or self._reuse.get(c.hash)
                if vec:
                    c.embedding = vec
                    summary.reused_vectors += 1
                else:
                    todo.append(c)
        if todo:
            vectors = await asyncio.to_thread(self.embedder.embed, [c.text for c in todo])
            for c, vec in zip(todo, vectors, strict=True):
                c.embedding = vec
            summary.embedded += len(todo)

    async def _backfill(self, summary: Summary) -> None:
        """Embed stored chunks that have no vector yet (e.g. after `reindex` to a new model)."""
        async for page in self.store.chunks_without_vectors():
            vectors = await asyncio.to_thread(self.embedder.embed, [c.text for c in page])
            await self.store.set_vectors({(c.path, c.id): v for c, v in zip(page, vectors, strict=True)}, refresh=False)
            summary.embedded += len(page)
            if self.stop.is_set():
                return

    # ------------------------------------------------------------------------------------- watch

    def _watch_filter(self, change: object, path: str) -> bool:
        try:
            rel = Path(path).relative_to(self.root).as_posix()
        except ValueError:
            return False
        if any(part.startswith(".") for part in rel.split("/")):
            return False
        top = rel.split("/", 1)[0]
        return any(d == "." or d.split("/", 1)[0] == top for d in self.dirs)

    async def run_retrying(self, full: bool = False) -> Summary | None:
        """`run`, retried with exponential backoff (1 s .. 60 s) while the server is unreachable or failing;
        None when stopped first. Files written before an outage stay written; the next pass resumes from the
        store's state."""
        delay = 1.0
        while not self.stop.is_set():
            try:
                return await self.run(full=full)
            except (ConnectionFailed, RequestFailed) as exc:
                self.report.warn(f"server error, retrying in {delay:.0f}s: {exc}")
                try:
                    await asyncio.wait_for(self.stop.wait(), delay)
                except TimeoutError:
                    pass
                delay = min(delay * 2, 60.0)
                self._known = None  # reload what the store holds after the outage
        return None

    async def watch(self, on_summary: Callable[[Summary], None], quiet_ms: int = 300, max_wait_ms: int = 3000) -> None:
        """Follow changes until `stop` is set: events are grouped until `quiet_ms` pass without one (at most
        `max_wait_ms`), and each group becomes one pass, so a save storm is one update per file;
        server errors are retried with exponential backoff, and the pass resumes where the store left off."""
        from watchfiles import awatch

        ready = False
        async for changes in awatch(
            self.root,
            watch_filter=self._watch_filter,
            debounce=max_wait_ms,
            step=quiet_ms,
            stop_event=self.stop,
            recursive=True,
            rust_timeout=1000,
            yield_on_timeout=True,  # an empty yield tells that the watcher runs
            force_polling=bool(os.environ.get("REME_ES_WATCH_POLLING")),
        ):
            if not ready:  # catch up with what changed between the first pass and the watcher's start
                ready = True
                self.report.info(f"watching {self.root} (Ctrl-C to stop)")
            elif not changes:
                continue
            summary = await self.run_retrying()
            if summary is not None and (summary.changes or summary.failed):
                on_summary(summary)


__all__ = ["Failure", "Reporter", "State", "Summary", "WorkspaceSync", "in_scope", "state_path"]
