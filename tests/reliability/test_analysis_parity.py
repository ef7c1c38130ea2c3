"""One analysis chain on both engines: the chunks index analyses text token for token alike on OpenSearch and on
the managed Elasticsearch node, whose integ-test distribution lacks analysis-common and gets the template's
`stemmer` filters and `english`/`cjk` analyzers from reme-es' test analysis plugin (reme_es.server.es_plugin).
Without them the Elasticsearch keyword branch lost stemming and stop words and found 0.043 less of LoCoMo's
development evidence at rank 10 (docs/quality.md)."""

from __future__ import annotations

import pytest

# The template's `reme_text` chain: possessive, lowercase, link parts, english stop words, Porter stemmer.
REME_TEXT = [
    ("Caroline's running reports and the meetings", ["carolin", "run", "report", "meet"]),
    ("[[people/Sam Diaz]] adopted puppies", ["peopl", "sam", "diaz", "adopt", "puppi"]),
]
REME_CJK = [("東京の天気 running", ["東京", "京の", "の天", "天気", "running"])]


async def _tokens(store, analyzer: str, text: str) -> list[str]:
    body = {"analyzer": analyzer, "text": text}
    resp = await store.dialect.transport.request("POST", f"/{store.index('chunks')}/_analyze", body)
    return [t["token"] for t in resp["tokens"]]


async def test_the_chunks_index_has_the_templates_analysis_with_no_fallback(store_factory):
    store = await store_factory()
    assert (store.caps.english_analyzer, store.caps.cjk_analyzer, store.caps.pattern_capture_filter) == (
        True,
        True,
        True,
    )
    resp = await store.dialect.transport.request("GET", f"/{store.index('chunks')}/_mapping")
    assert next(iter(resp.values()))["mappings"]["_meta"]["reme_es"]["analyzers"] == {}


@pytest.mark.parametrize(
    ("analyzer", "text", "expected"), [("reme_text", *c) for c in REME_TEXT] + [("reme_cjk", *c) for c in REME_CJK]
)
async def test_text_is_analysed_alike_on_both_engines(store_factory, analyzer, text, expected):
    store = await store_factory()
    assert await _tokens(store, analyzer, text) == expected
