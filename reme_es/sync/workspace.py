"""Apply a workspace's changes to a MemoryStore in batches, optionally embedding, and follow it with `watch`.

One run: walk + mtime diff against the stored file docs -> upsert changed files in batches (no refresh per
batch) -> delete vanished files -> refresh. A file that fails (unreadable, rejected by the server) is listed
with its reason and the run goes on; a failed file keeps what was stored for it before. Vectors are computed
once per chunk text: an unchanged chunk id, or the text of a chunk of a renamed/deleted file, reuses the
stored vector.

The parts: `report.py` (Summary, Failure, Reporter), `state.py` (local state), `write.py` (`SyncWriter`: reading,
chunking, writing, deleting, vectors, and what the store holds), `watch.py` (`SyncWatcher`: retries and the watch
loop); `WorkspaceSync` holds a writer and a watcher, and plans and runs a pass.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..embeddings.embedders import Embedder
from ..store import MemoryStore
from .reme_chunkers import ReMeChunkers
from .report import Failure, Reporter, Summary
from .scan import MB, Changes, diff, in_scope, walk
from .state import State, state_path
from .watch import MAX_WAIT_MS, QUIET_MS, SyncWatcher
from .write import SyncWriter

if TYPE_CHECKING:
    from ..core.options import SyncOptions

REFRESH_EVERY = 5000  # files written between refreshes, so a long first sync becomes searchable as it goes


class WorkspaceSync:
    """Keeps one workspace folder and one MemoryStore in step."""

    def __init__(
        self,
        store: MemoryStore,
        root: Path,
        options: SyncOptions,
        embedder: Embedder | None = None,
        reporter: Reporter | None = None,
        state: State | None = None,
        concurrency: int = 2,
        reme_chunkers: ReMeChunkers | None = None,
    ):
        """`options` give the file set (dirs, suffixes, max_file_mb), the files per batch and the built-in chunkers'
        size (`chunk_chars`); `reme_chunkers` chunks with ReMe's own chunkers (exactly what ReMe indexes)."""
        self.store = store
        self.root = root.resolve()
        self.dirs = list(options.dirs)
        self.suffixes = list(options.suffixes)
        self.embedder = embedder
        self.report = reporter or Reporter()
        self.batch_files = options.batch_files
        self.max_file_bytes = int(options.max_file_mb * MB)
        self.state = state or State(None)
        self.concurrency = max(1, concurrency)
        self.stop = asyncio.Event()
        self.writer = SyncWriter(
            store,
            self.report,
            self.state,
            self.stop,
            options.chunk_chars,
            embedder=embedder,
            reme_chunkers=reme_chunkers,
        )
        self.watcher = SyncWatcher(self.root, self.dirs, self.run, self.writer.forget, self.report, self.stop)

    # ------------------------------------------------------------------------------------ scanning

    async def plan(self, full: bool = False) -> Changes:
        """Walk the workspace and diff it against the store."""
        known = await self.writer.known()
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

    async def run_retrying(self, full: bool = False) -> Summary | None:
        """`run`, retried with backoff while the server is unreachable or failing (`SyncWatcher.run_retrying`)."""
        return await self.watcher.run_retrying(full)

    async def watch(
        self, on_summary: Callable[[Summary], None], quiet_ms: int = QUIET_MS, max_wait_ms: int = MAX_WAIT_MS
    ) -> None:
        """Follow changes until `stop` is set, one pass per group of file events (`SyncWatcher.watch`)."""
        await self.watcher.watch(on_summary, quiet_ms, max_wait_ms)

    async def run(self, full: bool = False, dry_run: bool = False) -> Summary:
        """One sync pass; server-wide failures (connection, auth) raise, per-file ones are collected."""
        started = time.monotonic()
        changes = await self.plan(full)
        summary = Summary(unchanged=changes.unchanged, skipped=len(changes.skipped), dry_run=dry_run)
        if dry_run:
            return self._dry_run(changes, summary, started)

        if self.embedder and changes.deleted:
            await self.writer.collect_reusable(changes.deleted)
        todo = [(f, "added") for f in changes.added] + [(f, "modified") for f in changes.modified]
        self.report.start(len(todo))
        since_refresh = 0
        writing: set[asyncio.Task] = set()
        try:
            batches = [todo[i : i + self.batch_files] for i in range(0, len(todo), self.batch_files)]
            loop, prepare = asyncio.get_running_loop(), self.writer.prepare
            pending = loop.run_in_executor(None, prepare, batches[0]) if batches else None
            for i in range(len(batches)):
                assert pending is not None, "each batch's preparation starts before its turn"
                prepared = await pending
                # Chunk the next batch in a worker thread while up to `concurrency` batches are written.
                pending = loop.run_in_executor(None, prepare, batches[i + 1]) if i + 1 < len(batches) else None
                while len(writing) >= self.concurrency:
                    done, writing = await asyncio.wait(writing, return_when=asyncio.FIRST_COMPLETED)
                    _raise_first(done)
                writing.add(asyncio.create_task(self.writer.write(prepared, summary)))
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
                await self.writer.delete(changes.deleted, summary)
                if self.embedder and self.store.dims:
                    await self.writer.backfill(summary)
        finally:
            for task in writing:
                task.cancel()
            await asyncio.gather(*writing, return_exceptions=True)
            self.report.finish()
            await self.store.refresh()
        if summary.changes and not summary.interrupted and self.store.dims:
            # A load changes what width the k-NN search needs: measured again when the index grew or shrank enough.
            record = await self.store.admin.calibrate_if_due()
            if record is not None:
                summary.knn_width = record.to_meta()
                self.report.info(
                    f"k-NN width {record.width}: recall@{record.at} {record.recall:.3f} "
                    f"({record.stopped}, {record.seconds:.1f} s)"
                )
        summary.seconds = time.monotonic() - started
        self._record(summary)
        return summary

    def _dry_run(self, changes: Changes, summary: Summary, started: float) -> Summary:
        """Tell what a run would change, writing nothing."""
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

    def _record(self, summary: Summary) -> None:
        """Save when, from where and with what result this run synced."""
        self.state.data["last_sync"] = time.time()
        self.state.data["workspace"] = str(self.root)
        self.state.data["summary"] = summary.to_dict()
        self.state.save()

    @staticmethod
    async def _drain(writing: set[asyncio.Task]) -> None:
        """Wait for the batches being written; the first error is raised."""
        while writing:
            task = writing.pop()
            await task


def _raise_first(done: set[asyncio.Task]) -> None:
    """Raise the first error of finished batches, every error retrieved (two batches failing together, say when the
    node dies under both, must not leave one whose traceback asyncio prints at exit)."""
    errors = [exc for exc in (task.exception() for task in done if not task.cancelled()) if exc is not None]
    if errors:
        raise errors[0]


__all__ = ["Failure", "Reporter", "State", "Summary", "WorkspaceSync", "in_scope", "state_path"]
