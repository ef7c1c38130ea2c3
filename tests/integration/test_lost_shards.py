"""Indices with primary shards no node holds (what a lost node without replicas leaves): a clear, quick error that
names the index, never a minute-long wait; partial answers said so. The red index is made on one node by an
allocation filter no node matches, which leaves its primary unassigned exactly as a lost node does."""

from __future__ import annotations

import logging
import time

import pytest

from reme_es.adapters.dialect import ClientSettings
from reme_es.adapters.port import REFRESH_WAIT
from reme_es.core.errors import IndexUnavailable
from reme_es.store.connect import open_store
from reme_es.testing import chunk, file_with

UNASSIGNABLE = {"settings": {"number_of_replicas": 0, "index.routing.allocation.require._name": "no-such-node"}}


@pytest.fixture
async def store(server, prefix):
    """A store with two files, and a red index `<prefix>-lost` beside its set."""
    s = await open_store(ClientSettings(hosts=[server.url]), prefix, server.engine, workspace="team")
    await s.upsert([file_with(f"digest/{n}.md", [chunk(f"digest/{n}.md", f"harbour tides {n}")]) for n in "ab"])
    # not waiting for the primary that can never start (the create would wait its 30 s timeout for it)
    await s.port.transport.request("PUT", f"/{prefix}-lost", UNASSIGNABLE, {"wait_for_active_shards": "0"})
    yield s
    await s.port.delete_index(f"{prefix}-lost", missing_ok=True)
    await s.drop()
    await s.close()


async def test_a_red_index_is_named_quickly_with_what_to_do(store, prefix):
    lost = f"{prefix}-lost"
    started = time.monotonic()
    with pytest.raises(IndexUnavailable) as refreshed:
        await store.port.refresh([store.index("chunks"), lost])
    assert time.monotonic() - started < REFRESH_WAIT + 5  # not the minute a refresh waits for the primary
    assert refreshed.value.indices == {lost: 1}
    assert f"index {lost} (1 shard(s) unassigned) has primary shards that no node holds" in str(refreshed.value)
    assert "restart it, or restore the index from a snapshot" in str(refreshed.value)
    for call in (store.port.search(lost, {"size": 1}), store.port.msearch([(lost, {"size": 1})])):
        started = time.monotonic()
        with pytest.raises(IndexUnavailable, match=f"index {lost} "):
            await call
        assert time.monotonic() - started < 5


async def test_a_search_that_some_shards_answer_returns_their_hits_and_says_so(store, prefix, caplog):
    # The lost index joins the chunks alias: the search spans a healthy shard and a lost one.
    await store.port.transport.request(
        "POST", "/_aliases", {"actions": [{"add": {"index": f"{prefix}-lost", "alias": store.index("chunks")}}]}
    )
    with caplog.at_level(logging.WARNING, logger="reme_es.adapters.port"):
        hits = await store.port.search(store.index("chunks"), {"query": {"match": {"text": "harbour"}}})
    assert sorted(h["_source"]["path"] for h in hits) == ["digest/a.md", "digest/b.md"]
    assert any(
        "answered by 1 of 2 shards (1 failed or unassigned): results are partial" in r.getMessage()
        for r in caplog.records
    )
