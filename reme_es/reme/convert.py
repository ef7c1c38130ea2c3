"""Pure conversions between ReMe's FileNode/FileChunk and reme-es' FileDoc/Chunk/Link/Hit."""

from __future__ import annotations

from typing import Any

import numpy as np
from reme.schema import FileChunk, FileFrontMatter, FileLink, FileNode
from reme.utils import hash_text

from ..core.models import Chunk, FileDoc, Hit, Link


def to_file_doc(node: FileNode, chunks: list[FileChunk]) -> FileDoc:
    """A ReMe FileNode with its chunks as a reme-es FileDoc (chunk ids from the chunks, links in order)."""
    return FileDoc(
        path=node.path,
        st_mtime=node.st_mtime,
        chunk_ids=[c.id for c in chunks],
        front_matter=node.front_matter.model_dump(mode="json"),
        links=[
            Link(source=node.path, target=link.target_path, anchor=link.target_anchor or "")
            for link in node.links
            if link.target_path
        ],
    )


def to_chunk(chunk: FileChunk, vector: list[float] | None) -> Chunk:
    """A ReMe FileChunk as a reme-es Chunk carrying `vector`."""
    return Chunk(
        id=chunk.id,
        path=chunk.path,
        start_line=chunk.start_line,
        end_line=chunk.end_line,
        text=chunk.text,
        hash=hash_text(chunk.text),
        metadata=chunk.metadata,
        embedding=vector,
    )


def to_file_node(doc: FileDoc) -> FileNode:
    """A stored FileDoc as the FileNode ReMe wrote (empty anchors become None)."""
    return FileNode(
        path=doc.path,
        st_mtime=doc.st_mtime,
        links=[to_file_link(link) for link in doc.links],
        chunk_ids=list(doc.chunk_ids),
        front_matter=FileFrontMatter(**doc.front_matter),
    )


def to_file_link(link: Link) -> FileLink:
    """A reme-es Link as a ReMe FileLink."""
    return FileLink(source_path=link.source, target_path=link.target, target_anchor=link.anchor or None)


def to_file_links(by_path: dict[str, list[Link]]) -> dict[str, list[FileLink]]:
    """Links by path as ReMe FileLinks by path."""
    return {p: [to_file_link(x) for x in links] for p, links in by_path.items()}


def to_file_chunk(hit: Hit) -> FileChunk:
    """A search hit as a ReMe FileChunk with the hit's scores."""
    c = hit.chunk
    return FileChunk(
        id=c.id,
        text=c.text,
        metadata=c.metadata,
        path=c.path,
        start_line=c.start_line,
        end_line=c.end_line,
        scores=dict(hit.scores),
    )


def file_chunk_from_source(branch: str, score: float, src: dict) -> FileChunk:
    """A branch's hit as a ReMe FileChunk straight from its stored source: what `to_file_chunk` makes of the store's
    `Hit` for it, with one model built instead of three (a search's hits are read on every agent turn)."""
    return FileChunk(
        id=src["chunk_id"],
        text=src.get("text", ""),
        metadata=src.get("metadata") or {},
        path=src["path"],
        start_line=src.get("start_line", 0),
        end_line=src.get("end_line", 0),
        scores={branch: score, "score": score},
    )


def as_vector(embedding: Any) -> list[float]:
    """A ReMe embedding (float16 ndarray or list) as a JSON-ready list of floats."""
    return np.asarray(embedding, dtype=np.float32).tolist()
