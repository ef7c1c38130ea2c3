"""Real backpressure: a node with one write thread and a write queue of one, under four concurrent upserts.

One dedicated node per flavour under test (OpenSearch and Elasticsearch both accept `thread_pool.write.size: 1`
and `thread_pool.write.queue_size: 1`; the test reads them back from the node).

The node rejects shard-level bulk requests with 429 (es_rejected_execution_exception); Dialect.bulk retries
the rejected items with backoff. Rejections are counted on both sides: the client's retry warnings and the
node's own thread-pool statistics. The end state must hold every chunk, file and link exactly once.

A writer whose items are still rejected at Dialect.bulk's retry cap gets a BulkError listing only 429s; it then
writes the same batch again, as the next `reme-es sync` would (ids are deterministic, so the replay cannot
duplicate anything). How often that happened is printed.
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid

import pytest

from reme_es.core.errors import BulkError
from reme_es.testing.data import chunk, file_with
from tests.containers.early import EARLY, Call, needs

from .conftest import count, managed_node

WRITERS = 4
FILES_PER_WRITER = 150
CHUNKS_PER_FILE = 2
ROUNDS = 2


def tiny_write_pool_node(flavour: str):
    """A dedicated node of `flavour` whose write pool is one thread with a queue of one (its URL)."""
    settings = {"thread_pool.write.size": 1, "thread_pool.write.queue_size": 1}
    return managed_node(f"rel-backpressure-{uuid.uuid4().hex[:6]}", settings, flavour=flavour)


def _needed(flavour: str) -> tuple[str, Call]:
    return f"backpressure-{flavour}", Call(__name__, "tiny_write_pool_node", (flavour,))


# started in the background ahead of the test (tests/containers/early.py)
needs(__name__, "tiny_write_pool_url", lambda item: _needed(item.callspec.params["server"]))


@pytest.fixture(scope="module")
def tiny_write_pool_url(server):
    """A dedicated node of the flavour under test whose write pool is one thread with a queue of one."""
    with EARLY.take(*_needed(server.flavour)) as url:
        yield url


class RetryCounter(logging.Handler):
    """Adds up the items of every `bulk: N item(s) rejected ...` warning."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.items = 0
        self.warnings = 0
        self.deepest = 0

    def emit(self, record: logging.LogRecord) -> None:
        if m := re.match(r"bulk: (\d+) item\(s\) rejected", record.getMessage()):
            self.items += int(m.group(1))
            self.warnings += 1
            self.deepest = max(self.deepest, int(re.search(r"retry (\d+)", record.getMessage()).group(1)))


def _files(writer: int, rnd: int):
    out = []
    for i in range(FILES_PER_WRITER):
        path = f"w{writer}/f{i:03d}.md"
        text = f"round {rnd} writer {writer} file {i} part "
        chunks = [chunk(path, f"{text}{j}", start=1 + 5 * j) for j in range(CHUNKS_PER_FILE)]
        link = f"w{(writer + 1) % WRITERS}/f{i:03d}.md"
        out.append(file_with(path, chunks, links=[link], st_mtime=1_700_000_000.0 + rnd))
    return out


async def _rejected(store) -> int:
    stats = await store.dialect.transport.request("GET", "/_nodes/_local/stats/thread_pool")
    return next(iter(stats["nodes"].values()))["thread_pool"]["write"]["rejected"]


async def test_concurrent_upserts_survive_real_429s(tiny_write_pool_url, store_factory):
    store = await store_factory(tiny_write_pool_url)
    pool = await store.dialect.transport.request("GET", "/_nodes/_local/settings")
    node_settings = next(iter(pool["nodes"].values()))["settings"]["thread_pool"]["write"]
    assert node_settings == {"size": "1", "queue_size": "1"}
    counter = RetryCounter()
    logger = logging.getLogger("reme_es.adapters.retry")
    logger.addHandler(counter)
    rejected_before = await _rejected(store)
    exhausted: list[int] = []

    async def write(writer: int, rnd: int) -> None:
        for _ in range(3):
            try:
                outcome = await store.upsert(_files(writer, rnd))
            except BulkError as exc:
                assert {f.status for f in exc.failures} == {429}, exc.failures[:3]
                exhausted.append(len(exc.failures))
                continue
            assert outcome.failures == []
            return
        raise AssertionError(f"writer {writer} still rejected after 3 upserts")

    try:
        # Several rounds: each round rewrites every file with new chunk texts (new ids, old ones deleted).
        for rnd in range(ROUNDS):
            await asyncio.gather(*(write(w, rnd) for w in range(WRITERS)))
    finally:
        logger.removeHandler(counter)
    rejected = await _rejected(store) - rejected_before
    print(
        f"\nbackpressure ({store.dialect.engine}): node rejected {rejected} shard bulk request(s); client retried "
        f"{counter.items} item(s) in {counter.warnings} retry round(s), at most {counter.deepest} for one bulk call; "
        f"{len(exhausted)} upsert(s) ran out of retries ({sum(exhausted)} items) and were written again"
    )

    assert rejected > 0
    # every retry round answers at least one shard bulk request the node rejected
    assert 0 < counter.warnings <= rejected
    assert counter.items > 0
    files = WRITERS * FILES_PER_WRITER
    assert await count(store, "chunks") == files * CHUNKS_PER_FILE
    assert await count(store, "files") == files
    assert await count(store, "links") == files
    last = [c.id for w in range(WRITERS) for _, chunks in _files(w, ROUNDS - 1) for c in chunks]
    stored = [c.id async for page in store.vectors.without_vectors() for c in page]
    assert sorted(stored) == sorted(last)
    assert {f.st_mtime for f in await store.links.get_files()} == {1_700_000_000.0 + ROUNDS - 1}
