"""LinkGraph: the files index and the links index read as a graph (outlinks, inlinks, expand, traverse).

A link is REAL when its target is an indexed file and VIRTUAL otherwise, decided at query time against the
files index, so deleting a file turns its inlinks virtual with no rewrite.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from ..adapters import lookups as q
from ..adapters.port import IndexPort
from ..core.models import FileDoc, Link, LinkScope, Neighbour, doc_id
from .protocol import Indices
from .sources import file_from_source, link_from_source


class LinkGraph:
    """Files and the wikilinks between them."""

    def __init__(self, port: IndexPort, ix: Indices):
        self.port, self.ix = port, ix

    async def files(self, paths: list[str]) -> list[FileDoc]:
        """The stored file docs of these paths (real-time; missing ones skipped)."""
        return [file_from_source(d.sourced) for d in await self.port.get(self.ix.files, [doc_id(p) for p in paths])]

    async def get_files(self, paths: list[str] | None = None) -> list[FileDoc]:
        """File docs by path (missing ones skipped, input order kept); None = every file, sorted by path."""
        if paths is None:
            return [file_from_source(s) async for s in self.port.scan(self.ix.files, q.match_all(), True, ["path"])]
        found = {f.path: f for f in await self.files(list(dict.fromkeys(paths)))}
        return [found[p] for p in dict.fromkeys(paths) if p in found]

    async def with_front_matter(self, key: str) -> list[FileDoc]:
        """File docs whose front matter has a value for `key`, sorted by path: path, mtime and front matter only
        (no links or chunk ids), for indexes derived from front matter (ReMe's tag index)."""
        fields = ["path", "st_mtime", "front_matter"]
        scan = self.port.scan(self.ix.files, q.with_field(f"front_matter.{key}"), fields, ["path"])
        return [file_from_source(s) async for s in scan]

    async def indexed(self, paths: Iterable[str]) -> set[str]:
        """Which of these paths are indexed files (one mget)."""
        paths = list(dict.fromkeys(paths))
        by_id = {doc_id(p): p for p in paths}
        return {by_id[d.id] for d in await self.port.get(self.ix.files, list(by_id), source=False)}

    async def outlinks(self, path: str, scope: LinkScope = LinkScope.REAL) -> list[Link]:
        """Links written in `path`, in order; REAL when the target is an indexed file, VIRTUAL otherwise."""
        return (await self.outlinks_of([path], scope))[path]

    async def inlinks(self, path: str, scope: LinkScope = LinkScope.REAL) -> list[Link]:
        """Links from every indexed file to `path`, sorted by source; REAL when `path` itself is indexed."""
        return (await self.inlinks_of([path], scope))[path]

    async def outlinks_of(self, paths: list[str], scope: LinkScope = LinkScope.REAL) -> dict[str, list[Link]]:
        """`outlinks` of several files at once: one mget of their file docs, one of the link targets."""
        paths = list(dict.fromkeys(paths))
        written = {f.path: f.links for f in await self.files(paths)}
        out = {p: written.get(p, []) for p in paths}
        if scope == LinkScope.ALL:
            return out
        real = await self.indexed(link.target for links in out.values() for link in links)
        return {p: [x for x in links if (x.target in real) == (scope == LinkScope.REAL)] for p, links in out.items()}

    async def inlinks_of(self, paths: list[str], scope: LinkScope = LinkScope.REAL) -> dict[str, list[Link]]:
        """`inlinks` of several files at once: one mget (which of them are indexed), one scan of the links index."""
        paths = list(dict.fromkeys(paths))
        out: dict[str, list[Link]] = {p: [] for p in paths}
        wanted = paths
        if scope != LinkScope.ALL:
            real = await self.indexed(paths)
            wanted = [p for p in paths if (p in real) == (scope == LinkScope.REAL)]
        if wanted:
            scan = self.port.scan(self.ix.links, q.any_of("target", wanted), True, ["target", "source", "position"])
            async for s in scan:
                link = link_from_source(s)
                out[link.target].append(link)
        return out

    async def expand(self, paths: list[str], max_per_direction: int = 5) -> dict[str, list[Neighbour]]:
        """Outlinks and inlinks of several files with each neighbour's name/description: two requests in all."""
        paths = list(dict.fromkeys(paths))
        if not paths or max_per_direction <= 0:
            return {}
        answers = await self.port.link_edges(self.ix.links, paths, max_per_direction)
        edges: dict[str, list[tuple[Literal["out", "in"], Link]]] = {p: [] for p in paths}
        for i, sources in enumerate(answers):
            direction: Literal["out", "in"] = "out" if i < len(paths) else "in"
            path = paths[i] if i < len(paths) else paths[i - len(paths)]
            edges[path] += [(direction, link_from_source(s)) for s in sources]
        neighbours = {link.target if d == "out" else link.source for items in edges.values() for d, link in items}
        files = {f.path: f for f in await self.files(sorted(neighbours))}
        return {path: [_neighbour(d, link, files) for d, link in items] for path, items in edges.items()}

    async def traverse(self, path: str, depth: int = 2, max_nodes: int = 1000) -> dict[str, int]:
        """Files reachable from `path` over links in either direction, with their distance (one search per level)."""
        seen = {path: 0}
        frontier = [path]
        for level in range(1, depth + 1):
            if not frontier or len(seen) >= max_nodes:
                break
            nxt = []
            scan = self.port.scan(
                self.ix.links, q.links_touching(frontier), ["source", "target"], ["source", "target", "anchor"]
            )
            async for s in scan:
                for other in (s["source"], s["target"]):
                    if other not in seen and len(seen) < max_nodes:
                        seen[other] = level
                        nxt.append(other)
            frontier = nxt
        return seen


def _neighbour(direction: Literal["out", "in"], link: Link, files: dict[str, FileDoc]) -> Neighbour:
    other = link.target if direction == "out" else link.source
    fm = files[other].front_matter if other in files else {}
    return Neighbour(
        direction=direction,
        path=other,
        anchor=link.anchor,
        real=other in files,
        name=str(fm.get("name") or ""),
        description=str(fm.get("description") or ""),
    )
