"""Walk a workspace, read its files safely and diff their mtimes against what the store holds.

Symlinks are followed only when they resolve inside the workspace, and each real folder is walked once
(loops and duplicate links are reported and skipped). Real folders are walked before linked ones, so a file
is indexed under its own path rather than a link's. Hidden entries (`.name`) are ignored.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .jsonl import chunk_jsonl
from .markdown import Parsed, Warn, chunk_markdown

MB = 1 << 20


@dataclass(frozen=True)
class LocalFile:
    """A candidate file: workspace-relative POSIX path, absolute path, mtime and size at scan time."""

    path: str
    abs: Path
    st_mtime: float
    size: int


@dataclass
class Changes:
    """What a sync has to do: files to add, modify and delete, plus what it leaves alone."""

    added: list[LocalFile] = field(default_factory=list)
    modified: list[LocalFile] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: int = 0
    skipped: dict[str, str] = field(default_factory=dict)  # path -> reason (too large, unreadable, binary)

    @property
    def count(self) -> int:
        """Number of files to write or delete."""
        return len(self.added) + len(self.modified) + len(self.deleted)


def _human(n: int) -> str:
    return f"{n / MB:.1f} MB" if n >= MB else f"{n / 1024:.1f} kB"


def in_scope(path: str, dirs: Iterable[str], suffixes: Iterable[str]) -> bool:
    """Whether a workspace-relative path belongs to the synced dirs and suffixes.

    Hidden entries are never in scope: the walk skips them, so a stored hidden file (ReMe's watcher indexes
    `daily/.drafts/x.md`) is not sync's to delete."""
    if not any(path.endswith("." + s) for s in suffixes):
        return False
    if any(part.startswith(".") for part in path.split("/")):
        return False
    return any(d == "." or path.startswith(d.rstrip("/") + "/") for d in dirs)


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class _Walker:
    """One walk's state: files found, paths skipped, folders seen, and symlinked folders still to walk."""

    def __init__(self, root: Path, suffixes: list[str], max_bytes: int, warn: Warn):
        self.root = root
        self.wanted = tuple("." + s for s in suffixes)
        self.max_bytes = max_bytes
        self.warn = warn
        self.found: dict[str, LocalFile] = {}
        self.skipped: dict[str, str] = {}
        self.seen: set[Path] = set()
        self.linked: list[tuple[Path, str]] = []  # symlinked folders, walked after every real one

    def outside(self, entry: Path, rel: str) -> bool:
        """Whether a symlink points outside the workspace or nowhere (warned about: it is skipped)."""
        target = entry.resolve()
        if not target.is_relative_to(self.root):
            self.warn(f"{rel}: symlink to {target} points outside the workspace; skipped")
            return True
        if not target.exists():
            self.warn(f"{rel}: broken symlink; skipped")
            return True
        return False

    def visit(self, folder: Path, rel: str) -> None:
        """Walk one folder (once, whatever links lead to it), recursing into real subfolders."""
        real = folder.resolve()
        if real in self.seen:
            self.warn(f"{rel or '.'}: folder already walked (symlink loop or duplicate link); skipped")
            return
        self.seen.add(real)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            self.warn(f"{rel or '.'}: cannot list folder ({exc.strerror}); skipped")
            return
        for entry in entries:
            if not entry.name.startswith("."):
                self._entry(entry, f"{rel}/{entry.name}" if rel else entry.name)

    def _entry(self, entry: os.DirEntry, path: str) -> None:
        if not _utf8(entry.name):  # os.scandir hands undecodable bytes back as lone surrogates
            shown = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            self.warn(f"{shown}: name is not valid UTF-8; rename it to index it; skipped")
            self.skipped[shown] = "name is not UTF-8"
            return
        try:
            is_link = entry.is_symlink()
            if is_link and self.outside(Path(entry.path), path):
                return
            if entry.is_dir():
                if is_link:
                    self.linked.append((Path(entry.path), path))
                else:
                    self.visit(Path(entry.path), path)
                return
            if not entry.name.endswith(self.wanted) or not entry.is_file():
                return
            st = entry.stat()
        except OSError as exc:
            self.warn(f"{path}: cannot read ({exc.strerror}); skipped")
            self.skipped[path] = f"unreadable: {exc.strerror}"
            return
        if st.st_size > self.max_bytes:
            self.warn(f"{path}: {_human(st.st_size)} is over the {_human(self.max_bytes)} limit; skipped")
            self.skipped[path] = "too large"
            return
        self.found[path] = LocalFile(path, Path(entry.path), st.st_mtime, st.st_size)


def walk(root: Path, dirs: list[str], suffixes: list[str], max_bytes: int, warn: Warn) -> tuple[dict, dict]:
    """Files under the workspace dirs with a wanted suffix -> (files by path, skipped path -> reason)."""
    root = root.resolve()
    walker = _Walker(root, suffixes, max_bytes, warn)
    for d in dirs:
        base = root if d == "." else root / d
        rel = "" if d == "." else d
        if base.is_symlink() and walker.outside(base, rel):
            continue
        if base.is_dir():
            walker.visit(base, rel)
    while walker.linked:
        folder, rel = walker.linked.pop(0)
        walker.visit(folder, rel)
    return walker.found, walker.skipped


def diff(
    local: dict[str, LocalFile],
    stored: dict[str, float],
    dirs: list[str],
    suffixes: list[str],
    full: bool = False,
    skipped: dict[str, float] | None = None,
) -> Changes:
    """Compare local mtimes with stored ones (`stored` path -> st_mtime); only in-scope stored paths are deleted.

    `skipped` holds files skipped earlier (binary) by path -> mtime: unchanged ones are not read again.
    """
    changes = Changes()
    skipped = skipped or {}
    for path, file in local.items():
        have = stored.get(path)
        if have is None:
            if not full and skipped.get(path) == file.st_mtime:
                changes.skipped[path] = "skipped before, unchanged"
            else:
                changes.added.append(file)
        elif full or have != file.st_mtime:
            changes.modified.append(file)
        else:
            changes.unchanged += 1
    changes.deleted = sorted(p for p in stored if p not in local and in_scope(p, dirs, suffixes))
    return changes


def read_text(file: LocalFile, warn: Warn) -> tuple[str, os.stat_result] | None:
    """The file's text and its stat taken before reading (a write during the read shows at the next scan);
    None for binary files (a NUL byte). Invalid UTF-8 is replaced with U+FFFD and reported."""
    st = file.abs.stat()
    data = file.abs.read_bytes()
    if b"\x00" in data:
        warn(f"{file.path}: binary content (NUL byte); skipped")
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        warn(f"{file.path}:{line}: invalid UTF-8 (byte {exc.start}); undecodable bytes replaced with U+FFFD")
        text = data.decode("utf-8", errors="replace")
    return text.removeprefix("\ufeff"), st


def parse(path: str, text: str, warn: Warn, max_chars: int) -> Parsed:
    """Chunk a file by its suffix, in chunks of at most about `max_chars` (the `chunk_chars` option)."""
    if path.endswith(".jsonl"):
        return chunk_jsonl(path, text, warn, max_chars)
    return chunk_markdown(path, text, warn, max_chars)
