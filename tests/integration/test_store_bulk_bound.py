"""A large upsert's bulk requests are bounded in bytes and in number at once (issue 20 item 2), on a real node.

The issue's shape (500 files of 10 chunks per `upsert`) went out as two concurrent ~10 MiB bulk requests, and three
such writers on one 512 MiB node got 429s (indexing pressure: 10% of the heap) until the retries ran out. Each
request now carries at most `BULK_REQUEST_BYTES` (4 MiB), two at most at once. Every bulk request the store's
client sends is measured on its way out, so a larger body or a third concurrent request fails the test."""

from __future__ import annotations

import asyncio

import pytest

from reme_es.adapters.dialect import ClientSettings
from reme_es.adapters.transport import BULK_REQUEST_BYTES
from reme_es.core.models import Chunk, FileDoc, chunk_id
from reme_es.store.connect import open_store

pytestmark = pytest.mark.asyncio

FILES, PER_FILE, TEXT_BYTES = 60, 10, 16_000  # 600 chunk writes of ~16 kB: ~9.6 MB in the chunk round


def body_bytes(args: tuple, kwargs: dict) -> int:
    """The size of a bulk body as either client library hands it to `client.bulk`."""
    body = kwargs.get("operations", kwargs.get("body", args[0] if args else None))
    if isinstance(body, (bytes, str)):
        return len(body)
    return sum(len(line) + 1 for line in body)


async def test_a_large_upsert_sends_bulk_requests_of_at_most_4_mib_two_at_a_time(server, es_prefix, monkeypatch):
    store = await open_store(ClientSettings(hosts=[server.url]), es_prefix, server.engine)
    try:
        # On the class: Elasticsearch's bulk helper sends through a copy of the client (`client.options()`)
        client_class, sizes, flight = type(store.dialect.transport.client), [], {"now": 0, "peak": 0}
        bulk = client_class.bulk

        async def measured(self, *args, **kwargs):
            sizes.append(body_bytes(args, kwargs))
            flight["now"] += 1
            flight["peak"] = max(flight["peak"], flight["now"])
            try:
                await asyncio.sleep(0.05)  # both streams' requests overlap if they are sent together
                return await bulk(self, *args, **kwargs)
            finally:
                flight["now"] -= 1

        monkeypatch.setattr(client_class, "bulk", measured)
        words = ("lorem ipsum dolor sit amet " * (TEXT_BYTES // 27 + 1))[:TEXT_BYTES]
        files = []
        for f in range(FILES):
            path = f"bulk/file-{f:03d}.md"
            texts = [f"{i} {words}" for i in range(PER_FILE)]
            chunks = [
                Chunk(id=chunk_id(path, i + 1, i + 1, t), path=path, start_line=i + 1, end_line=i + 1, text=t)
                for i, t in enumerate(texts)
            ]
            files.append((FileDoc(path=path, st_mtime=1.0, chunk_ids=[c.id for c in chunks]), chunks))
        outcome = await store.upsert(files)
        assert outcome.failures == []
        assert max(sizes) <= BULK_REQUEST_BYTES
        assert sum(1 for s in sizes if s > BULK_REQUEST_BYTES // 2) >= 2  # the chunk round used the room it has
        assert flight["peak"] == 2
        assert await store.port.count(store.index("chunks")) == FILES * PER_FILE
    finally:
        await store.drop()
        await store.close()
