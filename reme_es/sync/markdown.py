"""Markdown chunker: YAML front matter, heading-aware chunks with 1-based inclusive line ranges, wikilinks.

Chunk ids follow ReMe's `FileChunk.set_hash_id`: sha256 of "path start end text", so an unchanged chunk keeps
its id (and its stored vector) across edits elsewhere in the file. Wikilink targets are taken literally, as ReMe
does: `[[x]]` links to "x", no implicit `.md`; targets outside the workspace are kept as (virtual) links and
never read.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..core.models import Chunk, Link, chunk_id

Warn = Callable[[str], None]

# Same syntax as ReMe's WikilinkHandler.WIKILINK_RE: optional `!`, target, `#anchor`, `|alias`.
WIKILINK_RE = re.compile(r"!?\[\[(?P<target>[^\[\]|#\n]+?)(?P<anchor>#[^\[\]|\n]+)?(?P<alias>\|[^\[\]\n]+)?\]\]")
_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+|$)")
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def make_chunk(path: str, start: int, end: int, text: str, metadata: dict | None = None) -> Chunk:
    """A chunk with ReMe's deterministic id and a hash of its text (used to reuse vectors across renames)."""
    return Chunk(
        id=chunk_id(path, start, end, text),
        path=path,
        start_line=start,
        end_line=end,
        text=text,
        hash=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        metadata=metadata or {},
    )


@dataclass
class Parsed:
    """What a chunker makes of one file."""

    chunks: list[Chunk]
    front_matter: dict[str, Any] = field(default_factory=dict)
    links: list[Link] = field(default_factory=list)


def _jsonable(value: Any) -> Any:
    """YAML values as plain JSON (dates become ISO strings, keys strings)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def split_front_matter(path: str, lines: list[str], warn: Warn) -> tuple[dict[str, Any], int]:
    """Parse a leading `---` YAML block; returns (front matter, number of lines it spans). Broken ones span 0."""
    if not lines or lines[0].strip() != "---":
        return {}, 0
    close = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if close is None:
        warn(f"{path}:1: front matter is not closed with '---'; indexed as plain text")
        return {}, 0
    try:
        data = yaml.safe_load("\n".join(lines[1:close]))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark else 1
        warn(
            f"{path}:{line}: front matter is not valid YAML ({getattr(exc, 'problem', None) or exc}); "
            "indexed as plain text"
        )
        return {}, 0
    if data is None:
        return {}, close + 1
    if not isinstance(data, dict):
        warn(f"{path}:2: front matter is a {type(data).__name__}, not a mapping; indexed as plain text")
        return {}, 0
    return _jsonable(data), close + 1


def extract_links(path: str, text: str) -> list[Link]:
    """Wikilinks in order, one per (target, anchor); targets literal, aliases dropped."""
    seen: set[tuple[str, str]] = set()
    out = []
    for m in WIKILINK_RE.finditer(text):
        target = m.group("target").strip()
        anchor = (m.group("anchor") or "")[1:].strip()
        if not target or (target, anchor) in seen:
            continue
        seen.add((target, anchor))
        out.append(Link(source=path, target=target, anchor=anchor))
    return out


def _sections(lines: list[str], first: int) -> list[tuple[int, int, int]]:
    """(heading level or 0, start index, end index exclusive) per section; headings inside fences ignored."""
    out: list[tuple[int, int, int]] = []
    level, start = 0, first
    fence = ""
    for i in range(first, len(lines)):
        line = lines[i]
        if m := _FENCE_RE.match(line):
            marker = m.group(1)
            if not fence:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence) and not line[m.end() :].strip():
                fence = ""
            continue
        if fence:
            continue
        if h := _HEADING_RE.match(line):
            if i > start:
                out.append((level, start, i))
            level, start = len(h.group(1)), i
    if start < len(lines):
        out.append((level, start, len(lines)))
    return out


def _trim(lines: list[str], start: int, end: int) -> tuple[int, int] | None:
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return (start, end) if start < end else None


def _split_long(lines: list[str], start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """Cut [start, end) at line boundaries into pieces of at most max_chars (a longer line stands alone);
    a cut goes at the last blank line of the piece when that keeps at least half of it."""
    pieces = []
    while start < end:
        size, stop, blank = 0, start, None
        while stop < end and (stop == start or size + len(lines[stop]) + 1 <= max_chars):
            size += len(lines[stop]) + 1
            if not lines[stop].strip():
                blank = stop
            stop += 1
        if stop < end and blank is not None and blank > start and size and blank - start >= (stop - start) // 2:
            stop = blank
        pieces.append((start, stop))
        start = stop
    return pieces


def chunk_markdown(path: str, text: str, warn: Warn, max_chars: int) -> Parsed:
    """Chunks of a Markdown file: one per section (a heading and its body), child sections packed with their
    parent while they fit, long sections split at line boundaries; front matter is not a chunk."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    front_matter, body_start = split_front_matter(path, lines, warn)
    ranges: list[tuple[int, int]] = []
    group: tuple[int, int, int, int] | None = None  # (level, start, end, chars) being packed
    for level, start, end in _sections(lines, body_start):
        size = sum(len(x) + 1 for x in lines[start:end])
        if group is not None:
            g_level, g_start, g_end, g_size = group
            if g_level and level > g_level and g_size + size <= max_chars:
                group = (g_level, g_start, end, g_size + size)
                continue
            ranges += _split_long(lines, g_start, g_end, max_chars)
        group = (level, start, end, size)
    if group is not None:
        ranges += _split_long(lines, group[1], group[2], max_chars)
    chunks = []
    for start, end in ranges:
        if trimmed := _trim(lines, start, end):
            s, e = trimmed
            chunks.append(make_chunk(path, s + 1, e, "\n".join(lines[s:e])))
    links = extract_links(path, "\n".join(lines[body_start:]))
    return Parsed(chunks=chunks, front_matter=front_matter, links=links)
