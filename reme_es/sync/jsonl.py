"""JSONL chunker: one chunk per record, consecutive small records grouped up to the chunk size.

A chunk's text is its records' lines as written; its line range covers exactly those lines (1-based,
inclusive). Malformed lines are skipped with a warning naming file:line, and a group never spans one.
"""

from __future__ import annotations

import json

from .markdown import Parsed, Warn, make_chunk


def chunk_jsonl(path: str, text: str, warn: Warn, max_chars: int) -> Parsed:
    """Chunks of a JSONL file; blank lines are ignored, malformed ones warned about and skipped."""
    chunks = []
    group: list[tuple[int, str]] = []
    size = 0

    def flush() -> None:
        nonlocal group, size
        if group:
            chunks.append(make_chunk(path, group[0][0], group[-1][0], "\n".join(line for _, line in group)))
        group, size = [], 0

    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        try:
            json.loads(line)
        except ValueError as exc:
            warn(f"{path}:{number}: malformed JSON line skipped ({getattr(exc, 'msg', exc)})")
            flush()
            continue
        if group and size + len(line) + 1 > max_chars:
            flush()
        group.append((number, line))
        size += len(line) + 1
    flush()
    return Parsed(chunks=chunks)
