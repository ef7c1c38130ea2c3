"""What a sync run tells: the `Summary` of a run, the `Failure`s in it, and the `Reporter` it talks to."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

log = logging.getLogger("reme_es.sync.workspace")  # the name sync runs have always logged under


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
    knn_width: dict | None = None  # the k-NN width calibrated at the end of this run (when due), as recorded

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
