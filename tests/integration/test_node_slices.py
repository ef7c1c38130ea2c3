"""A managed OpenSearch node searches a shard's segments in slices (concurrent segment search) on a 2-core machine,
where the engine's default (half the processors) would give one; Elasticsearch keeps its own."""

from __future__ import annotations

import json
import os
import urllib.request

import pytest

from reme_es.server.node_config import search_slices


def node_settings(url: str) -> dict:
    with urllib.request.urlopen(f"{url}/_nodes/_local/settings?flat_settings=true", timeout=30) as resp:
        return next(iter(json.load(resp)["nodes"].values()))["settings"]


def test_a_managed_node_gets_the_search_slices_its_processors_allow(server):
    if server.source != "managed":
        pytest.skip("a node this project did not start keeps its own settings")
    settings = node_settings(server.url)
    if server.engine == "elasticsearch":
        assert not any(key.startswith("search.concurrent") for key in settings)
        return
    assert settings["search.concurrent.max_slice_count"] == str(search_slices(os.cpu_count()))


@pytest.mark.asyncio
async def test_vector_searches_over_slices_keep_to_their_workspace(server, es_prefix):
    """Two workspaces of one set hold the same paths, texts and vectors, written in several refreshes (several
    segments, so a search is cut into slices on a managed OpenSearch node); workspace `b` also holds one chunk of its
    own. Each workspace's k-NN and keyword searches return each chunk once, and `a` never `b`'s own."""
    from reme_es.adapters.dialect import ClientSettings
    from reme_es.core.options import IndexOptions
    from reme_es.store.connect import open_store
    from reme_es.testing.data import chunk, file_with, unit_vector

    settings, options = ClientSettings(hosts=[server.url]), IndexOptions(dims=8)
    a = await open_store(settings, es_prefix, server.engine, options, workspace="a")
    b = await open_store(settings, es_prefix, server.engine, options, workspace="b")
    try:
        shared = [
            chunk(f"digest/n{i}.md", f"shared note {i} about rope memory", 1, unit_vector(1, i / 10)) for i in range(8)
        ]
        for part in range(4):  # one refresh each: a segment each
            files = [file_with(c.path, [c]) for c in shared[2 * part : 2 * part + 2]]
            for store in (a, b):
                await store.upsert(files)
                await store.refresh()
        own = chunk("digest/only-b.md", "shared note about rope memory held by b alone", 1, unit_vector(1, 0.05))
        await b.upsert([file_with(own.path, [own])])
        await b.refresh()
        assert (await a.admin.stats())["chunks"]["segments"] >= 2, "several segments, or the slices are not exercised"
        for store, expected in ((a, {c.id for c in shared}), (b, {c.id for c in shared} | {own.id})):
            for hits in (await store.vector_search(own.embedding, 20), await store.keyword_search("rope memory", 20)):
                found = [h.chunk.id for h in hits]
                assert sorted(found) == sorted(expected), (store.workspace, found)
    finally:
        await a.close()
        await b.close()
