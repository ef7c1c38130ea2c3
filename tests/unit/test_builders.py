"""Request bodies are pure functions: compared with golden JSON, no server involved.

Regenerate a golden file deliberately with REME_ES_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from reme_es.adapters.dialect import ClientSettings, candidates_only, filter_clauses, keyword_body
from reme_es.adapters.elasticsearch import ElasticsearchDialect
from reme_es.adapters.opensearch import OpenSearchDialect
from reme_es.adapters.templates import render_index
from reme_es.core.models import Capabilities, SearchFilter
from reme_es.core.options import IndexOptions

GOLDEN = Path(__file__).parent / "golden"
SETTINGS = ClientSettings(hosts=["http://127.0.0.1:9200"])
FILTER = SearchFilter.parse(
    {"path_prefix": "daily/", "start_date": "2026-05-01", "end_date": "2026-05-31", "tag": ["a", 2], "kind": None}
)


def check(name: str, body: dict) -> None:
    path = GOLDEN / f"{name}.json"
    if os.environ.get("REME_ES_UPDATE_GOLDEN"):
        path.write_text(json.dumps(body, indent=2, ensure_ascii=False, sort_keys=True) + "\n")
    assert body == json.loads(path.read_text())


def test_filter_clauses():
    check("filter_clauses", {"filter": filter_clauses(FILTER)})


def test_keyword_body_uses_match_never_query_string():
    body = keyword_body("title:* OR (x", 10, FILTER)
    assert "query_string" not in json.dumps(body)
    check("keyword_body", body)


@pytest.mark.parametrize("dialect", [OpenSearchDialect, ElasticsearchDialect], ids=["opensearch", "elasticsearch"])
def test_knn_body_puts_the_filter_inside_the_knn_clause(dialect):
    body = dialect(SETTINGS).knn_body([0.5, 0.5], 5, FILTER)
    check(f"knn_body_{dialect.engine}", body)


def test_opensearch_hybrid_body():
    check("hybrid_body_opensearch", OpenSearchDialect(SETTINGS).hybrid_body("orbital", [0.1, 0.2], 50, FILTER))


def test_a_native_hybrid_request_carries_the_calibrated_knn_width():
    os_body = OpenSearchDialect(SETTINGS).hybrid_body("orbital", [0.1, 0.2], 50, FILTER, num_candidates=123)
    knn = os_body["query"]["hybrid"]["queries"][1]["knn"]["embedding"]
    assert knn["method_parameters"] == {"ef_search": 123} and knn["k"] == 50
    es_body = ElasticsearchDialect(SETTINGS).hybrid_body("orbital", [0.1, 0.2], 50, FILTER, num_candidates=123)
    knn = es_body["retriever"]["rrf"]["retrievers"][1]["knn"]
    assert knn["num_candidates"] == 123 and knn["k"] == 50


@pytest.mark.parametrize("kind,weighted", [("minmax", False), ("rrf", False), ("rrf", True)])
def test_pipeline_bodies(kind, weighted):
    dialect = OpenSearchDialect(SETTINGS)
    check(f"pipeline_{kind}{'_weighted' if weighted else ''}", dialect.pipeline_body(kind, 0.7, weighted_rrf=weighted))


@pytest.mark.parametrize("dialect", [OpenSearchDialect, ElasticsearchDialect], ids=["opensearch", "elasticsearch"])
def test_chunks_index_body(dialect):
    caps = Capabilities(
        engine=dialect.engine,
        version="9.9.9",
        english_analyzer=True,
        cjk_analyzer=True,
        derived_vectors=True,
        pattern_capture_filter=True,
    )
    check(f"chunks_index_{dialect.engine}", render_index("chunks", dialect(SETTINGS), caps, IndexOptions(dims=384)))


def test_missing_analyzers_fall_back_to_standard_and_are_recorded():
    caps = Capabilities(engine="elasticsearch", version="9.3.2")
    body = render_index("chunks", ElasticsearchDialect(SETTINGS), caps, IndexOptions())
    standard = {"type": "standard"}
    assert body["settings"]["analysis"]["analyzer"] == {"reme_text": standard, "reme_cjk": standard}
    analyzers = {"reme_text": "custom -> standard", "reme_cjk": "cjk -> standard"}
    assert body["mappings"]["_meta"]["reme_es"]["analyzers"] == analyzers
    assert "filter" not in body["settings"]["analysis"]
    assert "embedding" not in body["mappings"]["properties"]


def test_without_stemmers_link_paths_still_split():
    """The Elasticsearch test node: no analysis-common (stemmers), but pattern_capture from reme-es' test plugin."""
    caps = Capabilities(engine="elasticsearch", version="9.3.2", pattern_capture_filter=True)
    analysis = render_index("chunks", ElasticsearchDialect(SETTINGS), caps, IndexOptions())["settings"]["analysis"]
    assert analysis["analyzer"]["reme_text"] == {
        "type": "custom",
        "tokenizer": "standard",
        "filter": ["lowercase", "reme_link_parts"],
    }
    assert list(analysis["filter"]) == ["reme_link_parts"]


def test_empty_path_list_matches_nothing_and_strict_dates_drop_undated():
    assert filter_clauses(SearchFilter.parse({"paths": []})) == [{"match_none": {}}]
    strict = filter_clauses(SearchFilter.parse({"start_date": "2026-05-18", "strict_date_filter": True}))
    assert strict == [{"range": {"date": {"gte": "2026-05-18"}}}]


def test_cjk_queries_add_the_bigram_field_english_queries_do_not():
    assert keyword_body("東京の天気", 5, SearchFilter())["query"]["bool"]["must"] == [
        {"multi_match": {"query": "東京の天気", "fields": ["text", "text.cjk"], "type": "most_fields"}}
    ]
    assert keyword_body("tokyo weather", 5, SearchFilter())["query"]["bool"]["must"] == [
        {"match": {"text": {"query": "tokyo weather"}}}
    ]
    assert keyword_body("tokyo", 5, SearchFilter(), ("text.cjk",))["query"]["bool"]["must"] == [
        {"match": {"text.cjk": {"query": "tokyo"}}}
    ]


def test_elasticsearch_rrf_retriever_body():
    check("hybrid_body_elasticsearch", ElasticsearchDialect(SETTINGS).hybrid_body("orbital", [0.1, 0.2], 50, FILTER))


@pytest.mark.parametrize(
    ("dialect", "caps", "kind", "native"),
    [
        (OpenSearchDialect, {"rrf_processor": True, "normalization_processor": True}, "rrf", True),
        (OpenSearchDialect, {"rrf_processor": False, "normalization_processor": True}, "rrf", False),
        (OpenSearchDialect, {"rrf_processor": False, "normalization_processor": True}, "minmax", True),
        (OpenSearchDialect, {}, "minmax", False),
        (ElasticsearchDialect, {"rrf_retriever": True}, "rrf", True),
        (ElasticsearchDialect, {"rrf_retriever": False}, "rrf", False),
        (ElasticsearchDialect, {"rrf_retriever": True}, "minmax", False),
    ],
)
def test_native_hybrid_follows_the_probe(dialect, caps, kind, native):
    probed = Capabilities(engine=dialect.engine, version="9.9.9", **caps)
    assert dialect(SETTINGS).native_hybrid(probed, kind) is native


def test_store_lookup_bodies():
    from reme_es.adapters import lookups as q

    msearch = q.link_expansion_msearch("p-links", ["a.md", "b.md"], 5)
    assert msearch.endswith(b"\n")
    check(
        "store_lookups",
        {
            "scan_first_page": q.scan_body(q.any_of("path", ["a.md", "b.md"]), ["chunk_id", "path"], ["chunk_id"]),
            "scan_next_page": q.scan_body(q.match_all(), True, ["path"], after=["a.md"]),
            "scroll": q.scroll_body(),
            "inlinks": q.equals("target", "a.md"),
            "traverse_level": q.links_touching(["a.md"]),
            "chunks_without_vectors": q.without_field("embedding"),
            "mget_files": q.mget_ids(["a.md"]),
            "mget_chunks": q.mget_routed([("c1", "a.md"), ("c3", "b.md"), ("c2", "a.md")]),
            "link_expansion": [json.loads(line) for line in msearch.splitlines()],
        },
    )


def test_search_answer_lookup_bodies():
    """The two round trips of ReMe's search step (issue 20): both branches for ids and scores in one `_msearch`
    counting no totals, then chunks, files, inlinks and outlink targets (a terms lookup per hit file)."""
    from reme_es.adapters import lookups as q

    branches = q.msearch_body([("p-chunks", q.lean(candidates_only(keyword_body("orbital", 50, FILTER))))])
    check(
        "search_answer_lookups",
        {
            "branch": [json.loads(line) for line in branches.splitlines()],
            "chunks_by_ids": q.chunks_by_ids(["c1", "c2"], ["embedding"]),
            "files_by_path": q.files_by_path(["a.md", "b.md"]),
            "links_into": q.links_into(["a.md", "b.md"], 1000),
            "files_linked_from": q.files_linked_from("p-files", ["a.md", "b.md"], 1000),
            "health_counts": [q.count_body(None), q.count_body(q.with_field("embedding"))],
        },
    )
    assert all(
        body["track_total_hits"] is False
        for body in (
            json.loads(branches.splitlines()[1]),
            q.chunks_by_ids(["c1"], []),
            q.files_by_path(["a.md"]),
            q.links_into(["a.md"], 10),
            q.files_linked_from("p-files", ["a.md"], 10),
        )
    )


def test_candidates_only_keeps_the_query_and_drops_stored_fields():
    body = candidates_only(keyword_body("orbital mechanics", 50, FILTER))
    assert body["query"] == keyword_body("orbital mechanics", 50, FILTER)["query"]
    assert (body["size"], body["_source"], body["stored_fields"]) == (50, False, "_none_")
    assert body["docvalue_fields"] == ["chunk_id", "path", "speaker", "question", "words"]
    # the text hash only where the store collapses repeated texts (it folds them without a fetch)
    assert candidates_only(keyword_body("orbital", 50, FILTER), with_hash=True)["docvalue_fields"] == [
        "chunk_id",
        "path",
        "speaker",
        "question",
        "words",
        "hash",
    ]


def test_feedback_keyword_body_ors_the_query_with_a_more_like_this_of_the_top_hits_under_the_same_filter():
    from reme_es.adapters.dialect import feedback_keyword_body

    body = feedback_keyword_body("p-chunks", "moon 月球", [("d1", "daily/a.md")], 50, FILTER, terms=10, boost=0.5)
    plain = keyword_body("moon 月球", 50, FILTER)["query"]["bool"]
    assert body["query"]["bool"] == {
        "should": [
            *plain["must"],  # the query as keyword_body asks it (text + text.cjk here: CJK characters)
            {
                "more_like_this": {
                    "fields": ["text", "text.cjk"],
                    "like": [{"_index": "p-chunks", "_id": "d1", "routing": "daily/a.md"}],
                    "min_term_freq": 1,
                    "min_doc_freq": 1,
                    "max_query_terms": 10,
                    "include": True,
                    "boost": 0.5,
                }
            },
        ],
        "minimum_should_match": 1,  # with a filter clause a bare should would match everything the filter lets in
        "filter": plain["filter"],
    }
    assert (body["size"], body["track_total_hits"], body["_source"]) == (50, False, {"excludes": ["embedding"]})
    assert "query_string" not in json.dumps(body)


def test_keyword_query_with_context_matches_the_text_or_the_neighbours_text():
    from reme_es.adapters.dialect import keyword_query
    from reme_es.core.models import SearchFilter

    plain = keyword_query("adoption", SearchFilter())
    assert plain["bool"]["must"] == [{"match": {"text": {"query": "adoption"}}}]
    assert keyword_query("adoption", SearchFilter(), context=0.0) == plain
    with_context = keyword_query("adoption", SearchFilter(), context=0.35)
    assert with_context["bool"]["must"] == [
        {
            "bool": {
                "should": [
                    {"match": {"text": {"query": "adoption"}}},
                    {"match": {"context": {"query": "adoption", "boost": 0.35}}},
                ]
            }
        }
    ]


def test_memorie_tenant_page_bodies_scope_every_query_to_the_tenant():
    from reme_es.adapters import lookups as q

    match = q.tenant_match("ana", "green tea", 5)
    assert match["query"]["bool"]["filter"] == [{"term": {"tenant_id": "ana"}}]  # the tenant filters, never scores
    relations = q.tenant_relations("ana", 100)["query"]["bool"]
    assert relations["should"] == [{"term": {"from_tenant_id": "ana"}}, {"term": {"to_tenant_id": "ana"}}]
    check(
        "memorie_tenant",
        {
            "memories": q.tenant_memories("ana", 100),
            "relations": q.tenant_relations("ana", 100),
            "match": match,
            "relation_counts": q.tenant_counts(field="from_tenant_id"),
        },
    )
