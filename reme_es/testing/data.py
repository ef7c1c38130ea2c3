"""Small builders for contract-suite data: files, chunks and controlled vectors."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..core.models import Chunk, FileDoc, Link, chunk_id

DIMS = 8


def unit_vector(*weights: float, dims: int = DIMS) -> list[float]:
    """A normalised vector from leading weights (the rest zero): unit_vector(1) and unit_vector(0, 1) are orthogonal."""
    values = list(weights) + [0.0] * (dims - len(weights))
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


def chunk(
    path: str, text: str, start: int = 1, vector: list[float] | None = None, metadata: dict[str, Any] | None = None
) -> Chunk:
    """One chunk of `path` covering lines start..start+1."""
    end = start + 1
    return Chunk(
        id=chunk_id(path, start, end, text),
        path=path,
        start_line=start,
        end_line=end,
        text=text,
        metadata=metadata or {},
        embedding=vector,
    )


def file_with(
    path: str,
    chunks: list[Chunk],
    links: Sequence[str | tuple[str, str]] = (),
    front_matter: dict[str, Any] | None = None,
    st_mtime: float = 1_716_000_000.0,
) -> tuple[FileDoc, list[Chunk]]:
    """A (FileDoc, chunks) pair; links are targets or (target, anchor) pairs, in order."""
    edges = [
        Link(source=path, target=t, anchor="") if isinstance(t, str) else Link(source=path, target=t[0], anchor=t[1])
        for t in links
    ]
    doc = FileDoc(
        path=path, st_mtime=st_mtime, chunk_ids=[c.id for c in chunks], front_matter=front_matter or {}, links=edges
    )
    return doc, chunks
