"""A store's writes land only in its own indices on the cluster it opened (issue 18, defects 1 and 12).

Writes require the alias: when another process dropped an index, or the URL now reaches another node, a write is
refused with an error that names the index and what to do, and no dynamically mapped index appears in its place.
The store records the cluster's UUID when it opens and notices when its URL reaches another cluster (a TCP
forwarder plays the URL whose port another node took: first the OpenSearch test node, then the Elasticsearch one).
"""

from __future__ import annotations

import pytest

from reme_es.adapters import identity
from reme_es.adapters.dialect import ClientSettings
from reme_es.adapters.port import Action
from reme_es.core.errors import ClusterChanged, ConnectionFailed, IndexMissing
from reme_es.core.models import Chunk, FileDoc
from reme_es.store.connect import open_store
from reme_es.testing.data import chunk, file_with
from tests.integration.nodes import Proxy, exists


def _file(path: str, text: str) -> tuple[FileDoc, list[Chunk]]:
    return file_with(path, [chunk(path, text)])


async def test_a_write_to_a_dropped_index_is_refused_and_creates_nothing(server, es_prefix):
    store = await open_store(ClientSettings([server.url]), es_prefix, server.engine)
    try:
        await store.upsert([_file("digest/a.md", "the harbour lights")])
        for concrete in await store.port.concrete(store.index("links")):  # another process drops one index
            await store.port.delete_index(concrete)
        links = store.index("links")
        with pytest.raises(IndexMissing) as missing:
            await store.port.bulk([Action("index", links, "l1", {"source": "digest/a.md", "target": "b.md"})])
        assert missing.value.index == links
        assert str(missing.value) == (
            f"index {links} does not exist on {server.url}: it was deleted (`reme-es drop`, another process's drop()) "
            f"or {server.url} now reaches another cluster. Nothing was written in its place. Run `reme-es sync` (or "
            "restart ReMe) to create the indices again, or point the hosts at the cluster that holds them."
        )
        assert not exists(server.url, links)
        with pytest.raises(IndexMissing) as missing:  # an upsert reads what is stored first: the same error
            await store.upsert([_file("digest/b.md", "the tide tables")])
        assert missing.value.index == links and not exists(server.url, links)
        await store.ensure_indices()  # what the error says to do works: the index is back behind its alias
        assert await store.port.concrete(links) == [f"{links}-1"]
    finally:
        await store.close()


async def test_the_store_notices_when_its_url_reaches_another_cluster(servers, prefix, monkeypatch):
    opensearch, elasticsearch = servers.get("opensearch-2.19"), servers.get("elasticsearch-9")
    proxy = Proxy(opensearch.url)
    proxy.start()
    store = await open_store(ClientSettings([proxy.url]), prefix, "opensearch")
    try:
        await store.upsert([_file("digest/a.md", "the harbour lights")])
        assert store.port.identity.uuid
        proxy.stop()  # the node goes away; a call in the meantime fails to connect
        with pytest.raises(ConnectionFailed):
            await store.keyword_search("harbour", 5)
        proxy.target = ("127.0.0.1", int(elasticsearch.url.rsplit(":", 1)[1]))  # another node took the port
        proxy.start()
        with pytest.raises(ClusterChanged) as changed:
            await store.upsert([_file("digest/b.md", "the tide tables")])
        assert str(changed.value).startswith(f"{proxy.url} now reaches another cluster (uuid ")
        assert not exists(elasticsearch.url, store.index("files"))  # nothing reached the other cluster

        # An idle store asks again before its next request, without a failed connection in between.
        proxy.stop()
        proxy.target = ("127.0.0.1", int(opensearch.url.rsplit(":", 1)[1]))
        proxy.start()
        assert [h.chunk.path for h in await store.keyword_search("harbour", 5)] == ["digest/a.md"]
        proxy.stop()
        proxy.target = ("127.0.0.1", int(elasticsearch.url.rsplit(":", 1)[1]))
        proxy.start()
        monkeypatch.setattr(identity, "IDLE_RECHECK_SECONDS", 0.0)
        with pytest.raises(ClusterChanged):
            await store.keyword_search("harbour", 5)
    finally:
        proxy.stop()
        await store.close()
        drop = await open_store(ClientSettings([opensearch.url]), prefix, "opensearch")
        try:
            await drop.drop()
        finally:
            await drop.close()
