"""A search answer shows each file's chunks of one version, also while a write of the file is half done.

A write of a file indexes its new chunks (round 2 of `reme_es.store.protocol`) before it deletes the stale ones and
writes the file doc (round 3): the file doc, which lists the chunk ids of its version, is the commit point. A store
refreshes only after its write call has finished, but a refresh is the shard's, and the indices of a set are shared
by its workspaces: any refresh of them (another workspace's write, another process, a `reme-es` command) makes
searchable what an unfinished write call has acknowledged so far, its new chunks beside the stale ones. A write call
that died between the rounds leaves the same state until the next sync of the file.

So of each file whose hits in an answer could be of two versions, only the hits its file doc lists are kept.
Whichever version the file doc shows (the one before the write, or the one after it, read in real time), the kept
hits are of that version: never a mix. Which files could: every chunk carries `written`, a token of the write call
that stored it (`Writer.wanted`); the chunks one call wrote are all of the version that call wrote, so a file whose
hits carry one token cannot show two versions, nor can a file with one hit. Those cost nothing: only a file with two
or more hits of different tokens (or without one: a chunk written before the field, or a hit that does not carry
it) has its file doc read, all such files in one `_mget`, or with no request where the answer reads them anyway
(`MemoryStore.shown` with links). An index loaded in one go and searched asks nothing more; a file rewritten since
(its unchanged chunks keep their older token) is checked. A hit whose file has no file doc is kept: the protocol
writes a file doc before its chunks and deletes it after them, so such a chunk was written outside it and has no
other version to be mixed with.

A hit left out is replaced by the next one: `filled` asks the search again twice as deep (at most `REFILLS` times), so
an answer is short of its limit only when the index holds no more hits of one version.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator
from typing import TypeVar

from ..adapters.port import IndexPort
from ..core.models import Hit, doc_id
from .sources import HitBuilder

T = TypeVar("T")
Key = tuple[str, str, str | None]  # (chunk id, path, `written` token or None) of a hit

REFILLS = 3  # deeper searches after hits were left out, each twice as deep as the one before


def hit_key(hit: Hit) -> Key:
    """A `Hit`'s (chunk id, path, None): a `Hit` does not carry its chunk's token."""
    return hit.chunk.id, hit.chunk.path, None


def keyed(build: HitBuilder) -> HitBuilder:
    """`build`, with each hit paired with its key from the stored source: `((id, path, written), build(...))`."""
    return lambda branch, score, src: ((src["chunk_id"], src["path"], src.get("written")), build(branch, score, src))


def shared_paths(keys: Iterable[Key]) -> list[str]:
    """The paths whose hits could mix versions, in the order of their first hit: two or more hits, not all carrying
    one token."""
    counts: Counter[str] = Counter()
    tokens: dict[str, set[str | None]] = {}
    for _, path, written in keys:
        counts[path] += 1
        tokens.setdefault(path, set()).add(written)
    return [path for path, n in counts.items() if n > 1 and (len(tokens[path]) > 1 or None in tokens[path])]


def kept(keys: list[Key], listed: dict[str, Collection[str] | None]) -> list[bool]:
    """Per hit whether it is kept: its path's file doc (`listed`: path -> the chunk ids it lists, None when the path has
    no file doc) lists it, or the path is not in `listed` or has no file doc."""
    return [(ids := listed.get(path)) is None or cid in ids for cid, path, _ in keys]


async def listed_chunks(port: IndexPort, files: str, paths: list[str]) -> dict[str, Collection[str] | None]:
    """path -> the chunk ids its file doc lists (real-time; None: no file doc), in one `_mget` of the `files` index."""
    found = {
        d.sourced["path"]: set(d.sourced.get("chunk_ids") or [])
        for d in await port.get(files, [doc_id(p) for p in paths])
    }
    return {path: found.get(path) for path in paths}


async def one_version(
    port: IndexPort,
    files: str,
    items: list[T],
    key: Callable[[T], Key],
    listed: dict[str, Collection[str] | None] | None = None,
) -> list[T]:
    """`items` (hits, in order) without the hits of a file that its file doc does not list, for the files whose hits
    could be of two versions (`shared_paths`). `listed` gives the file docs already read (`listed_chunks`); the others
    are read in one `_mget`."""
    keys = [key(x) for x in items]
    listed = dict(listed or {})
    if missing := [p for p in shared_paths(keys) if p not in listed]:
        listed.update(await listed_chunks(port, files, missing))
    return [x for x, keep in zip(items, kept(keys, listed), strict=True) if keep]


def depths(limit: int) -> Iterator[int]:
    """The depths a search for `limit` hits of one version asks for: `limit`, then twice as deep each time (REFILLS
    more at most). The caller stops at the first answer that is `enough`."""
    for refill in range(REFILLS + 1):
        yield limit * 2**refill


def enough(found: list, answer: list, limit: int, depth: int) -> bool:
    """Whether a search asked `depth` deep is done: `limit` hits are kept, or it found fewer than asked (no more)."""
    return len(answer) >= limit or len(found) < depth


async def filled(
    search: Callable[[int], Awaitable[list[T]]], keep: Callable[[list[T]], Awaitable[list[T]]], limit: int
) -> list[T]:
    """Up to `limit` of the hits `keep` keeps of `search(depth)` (hits ranked, at most `depth`): when it left some out
    and the search was full, it runs again twice as deep (`depths`; `MemoryStore.keyword_search` writes this loop
    out, so its request goes down one frame less)."""
    answer: list[T] = []
    for depth in depths(limit):
        found = await search(depth)
        answer = await keep(found)
        if enough(found, answer, limit, depth):
            break
    return answer[:limit]
