"""What a search answer shows beside its ranked hits, fetched in one `_msearch`: the hits' chunks, the REAL
outlinks and inlinks of their files, and the file docs of the hit files and of their indexed outlink targets.

Four searches in one request: the chunks by id; the hit files by path (their written links, and which of them are
indexed); the link docs into them (their inlinks); and the files their written links point at, by a terms lookup
of each hit file's `links.target` (so the outlink targets that are indexed files, with their front matter, come
in the same round trip). Only the inlinks' source files are not known in advance: `Shown.files` lacks those
that are neither hit files nor outlink targets, and the caller fetches them if it needs their front matter.
Where the links or the targets fill a whole page (a hub file), that part is read exactly with the link graph's
scans instead.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from ..adapters import lookups as q
from ..adapters.dialect import SOURCE_EXCLUDES
from ..adapters.port import IndexPort
from ..core.models import FileDoc, Hit, Link, LinkScope, doc_id
from .links import LinkGraph
from .protocol import Indices
from .sources import chunk_from_source, file_from_source, link_from_source

log = logging.getLogger(__name__)

PAGE = 1000  # link docs (or outlink targets) read in the one request; more are read with scans


@dataclass
class Shown:
    """The hits with their chunks, and per hit path its REAL outlinks and inlinks; `files` are the file docs read."""

    hits: list[Hit]
    outlinks: dict[str, list[Link]] = field(default_factory=dict)
    inlinks: dict[str, list[Link]] = field(default_factory=dict)
    files: dict[str, FileDoc] = field(default_factory=dict)


async def fetch_shown(port: IndexPort, ix: Indices, hits: list[Hit], paths: list[str], page: int = PAGE) -> Shown:
    """The hits' chunks and the REAL links of `paths` in one `_msearch` (see the module docstring)."""
    paths = list(dict.fromkeys(paths))
    ids = [port.stored_id(doc_id(h.chunk.id)) for h in hits]
    searches = [(ix.chunks, q.chunks_by_ids(ids, SOURCE_EXCLUDES))] if hits else []
    if paths:
        linked_from = [port.stored_id(doc_id(p)) for p in paths]
        searches += [
            (ix.files, q.files_by_path(paths)),
            (ix.links, q.links_into(paths, page)),
            (ix.files, q.files_linked_from(ix.files, linked_from, page, port.scope.routing())),
        ]
    answers = await port.looked_up(searches)
    shown = Shown(hits=_with_chunks(hits, answers.pop(0)) if hits else [])
    if not paths:
        return shown
    hit_files = [file_from_source(src) for src in answers[0]]
    into = [link_from_source(src) for src in answers[1]]
    targets = [file_from_source(src) for src in answers[2]]
    shown.files = {f.path: f for f in (*targets, *hit_files)}
    graph = LinkGraph(port, ix)
    if len(targets) >= page:
        shown.outlinks = await graph.outlinks_of(paths, LinkScope.REAL)
    else:
        written = {f.path: f.links for f in hit_files}
        shown.outlinks = {p: [x for x in written.get(p, []) if x.target in shown.files] for p in paths}
    if len(into) >= page:
        shown.inlinks = await graph.inlinks_of(paths, LinkScope.REAL)
    else:
        indexed = {f.path for f in hit_files}
        shown.inlinks = {p: [] for p in paths}
        for link in into:
            if link.target in indexed:
                shown.inlinks[link.target].append(link)
    return shown


def _with_chunks(hits: list[Hit], found: list[dict]) -> list[Hit]:
    """The hits, in order, with the chunks found for them (their stored sources; a chunk gone since the search is
    left out)."""
    by_id = {src["chunk_id"]: src for src in found}
    out = []
    for hit in hits:
        src = by_id.get(hit.chunk.id)
        if src is not None:
            out.append(hit.model_copy(update={"chunk": chunk_from_source(src)}))
        else:
            log.info("search hit %s of %s is gone from the index; left out", hit.chunk.id, hit.chunk.path)
    return out
