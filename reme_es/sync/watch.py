"""Following a workspace: `run` retried while the server is away, and the watch loop that turns each group
of file events into one pass."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from ..core.errors import ConnectionFailed, RequestFailed
from ..core.runtime import runtime
from .report import Reporter, Summary

QUIET_MS = 300  # a group of file events ends after this long without one
MAX_WAIT_MS = 3000  # or after this long in all


class SyncWatcher:
    """Runs passes of one workspace: retried while the server is away, and again on each group of file events."""

    def __init__(
        self,
        root: Path,
        dirs: list[str],
        run: Callable[[bool], Awaitable[Summary]],
        forget: Callable[[], None],
        report: Reporter,
        stop: asyncio.Event,
    ):
        """`run(full)` is one pass; `forget` drops what the pass knows of the store (called after an outage);
        `stop` ends the retries and the watch."""
        self.root = root
        self.dirs = dirs
        self.run = run
        self.forget = forget
        self.report = report
        self.stop = stop

    def watch_filter(self, change: object, path: str) -> bool:
        """Whether a file event concerns the workspace: a path in a synced folder, no part of it hidden."""
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
                return await self.run(full)
            except (ConnectionFailed, RequestFailed) as exc:
                self.report.warn(f"server error, retrying in {delay:.0f}s: {exc}")
                try:
                    await asyncio.wait_for(self.stop.wait(), delay)
                except TimeoutError:
                    pass
                delay = min(delay * 2, 60.0)
                self.forget()  # reload what the store holds after the outage
        return None

    async def watch(
        self, on_summary: Callable[[Summary], None], quiet_ms: int = QUIET_MS, max_wait_ms: int = MAX_WAIT_MS
    ) -> None:
        """Follow changes until `stop` is set: events are grouped until `quiet_ms` pass without one (at most
        `max_wait_ms`), and each group becomes one pass, so a save storm is one update per file;
        server errors are retried with exponential backoff, and the pass resumes where the store left off."""
        from watchfiles import awatch

        ready = False
        async for changes in awatch(
            self.root,
            watch_filter=self.watch_filter,
            debounce=max_wait_ms,
            step=quiet_ms,
            stop_event=self.stop,
            recursive=True,
            rust_timeout=1000,
            yield_on_timeout=True,  # an empty yield tells that the watcher runs
            force_polling=runtime().watch_polling,
        ):
            if not ready:  # catch up with what changed between the first pass and the watcher's start
                ready = True
                self.report.info(f"watching {self.root} (Ctrl-C to stop)")
            elif not changes:
                continue
            summary = await self.run_retrying()
            if summary is not None and (summary.changes or summary.failed):
                on_summary(summary)
