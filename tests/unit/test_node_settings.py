"""A managed node's settings file: the search slices an OpenSearch node gets (concurrent segment search)."""

from __future__ import annotations

import yaml

from reme_es.server.flavours import get_flavour
from reme_es.server.node_config import _node_settings, search_slices


def test_search_slices_follow_the_processors_with_two_at_least_and_four_at_most():
    assert [search_slices(n) for n in (None, 0, 1)] == [None, None, None]
    assert [search_slices(n) for n in (2, 3, 4, 6, 8, 16)] == [2, 2, 2, 3, 4, 4]


def test_opensearch_nodes_get_the_slices_and_elasticsearch_keeps_its_own(tmp_path, monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    for flavour in ("opensearch-2.19", "opensearch-3"):
        rendered = yaml.safe_load(_node_settings(get_flavour(flavour), tmp_path / "n", 9200, 9300))
        assert rendered["search.concurrent.max_slice_count"] == 2
    rendered = yaml.safe_load(_node_settings(get_flavour("elasticsearch-9"), tmp_path / "n", 9200, 9300))
    assert not any(key.startswith("search.concurrent") for key in rendered)


def test_a_node_given_one_processor_keeps_the_engine_default_and_none_drops_a_key(tmp_path):
    extra = {"node.processors": 1, "discovery.type": None}
    rendered = yaml.safe_load(_node_settings(get_flavour("opensearch-3"), tmp_path / "n", 9200, 9300, extra))
    assert "search.concurrent.max_slice_count" not in rendered and "discovery.type" not in rendered
    assert rendered["node.processors"] == 1
