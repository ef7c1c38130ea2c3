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
