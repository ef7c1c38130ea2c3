"""The bodies bench/perf/vector_options.py sends per index option (issue 40 item 3): the default option is the shared
mapping unchanged, each other option changes only what it names, and every search carries the workspace filter inside
the k-NN clause as the store sends it."""

from __future__ import annotations

import pytest

from bench.data.workloads import DIMS
from bench.perf.vector_options import WORKSPACE, Option, mapping, query
from reme_es.core.engine_settings import HNSW_EF_CONSTRUCTION, HNSW_M, vector_mapping


def parse(engine: str, text: str) -> Option:
    return Option.parse(engine, text, HNSW_M, HNSW_EF_CONSTRUCTION)


@pytest.mark.parametrize(("engine", "name"), [("opensearch", "none"), ("elasticsearch", "hnsw")])
def test_the_default_option_is_the_shared_mapping(engine, name):
    assert mapping(engine, parse(engine, name)) == vector_mapping(engine, DIMS)


def test_opensearch_options_change_only_what_they_name():
    base = vector_mapping("opensearch", DIMS)
    sq = mapping("opensearch", parse("opensearch", "sq"))
    assert sq["method"]["parameters"]["encoder"] == {"name": "sq"}
    assert sq["method"]["engine"] == "lucene"
    on_disk = mapping("opensearch", parse("opensearch", "on_disk_4x"))
    assert (on_disk["mode"], on_disk["compression_level"], on_disk["method"]) == ("on_disk", "4x", base["method"])
    fp16 = mapping("opensearch", parse("opensearch", "faiss_fp16"))
    assert fp16["method"]["engine"] == "faiss"
    assert fp16["method"]["parameters"]["encoder"] == {"name": "sq", "parameters": {"type": "fp16"}}
    assert fp16["method"]["space_type"] == "cosinesimil"
    faiss_disk = mapping("opensearch", parse("opensearch", "faiss_on_disk_32x"))
    assert (faiss_disk["method"]["engine"], faiss_disk["mode"], faiss_disk["compression_level"]) == (
        "faiss",
        "on_disk",
        "32x",
    )


def test_graph_suffix_sets_m_and_ef_construction():
    option = parse("opensearch", "none@32/200")
    assert (option.m, option.efc, option.base) == (32, 200, "none")
    assert mapping("opensearch", option)["method"]["parameters"] == {"m": 32, "ef_construction": 200}
    es = mapping("elasticsearch", parse("elasticsearch", "int8_hnsw@24/128"))
    assert es["index_options"] == {"type": "int8_hnsw", "m": 24, "ef_construction": 128}
    assert parse("elasticsearch", "bbq_hnsw+rescore@32/200").index_suffix == "bbq_hnsw-rescore-m32-200"


def test_unknown_options_are_refused():
    with pytest.raises(SystemExit):
        parse("opensearch", "int8_hnsw")
    with pytest.raises(SystemExit):
        parse("elasticsearch", "hnsw+oversample")


def test_queries_carry_width_rescore_and_the_workspace_filter():
    term = {"bool": {"filter": [{"term": {"workspace": WORKSPACE}}]}}
    os_body = query("opensearch", [0.1] * DIMS, 200, parse("opensearch", "on_disk_4x+rescore"), 3.0, True)
    clause = os_body["query"]["knn"]["embedding"]
    assert (clause["k"], clause["method_parameters"], clause["rescore"]) == (
        50,
        {"ef_search": 200},
        {"oversample_factor": 3.0},
    )
    assert clause["filter"] == term
    assert os_body["_source"] is False
    es_body = query("elasticsearch", [0.1] * DIMS, 30, parse("elasticsearch", "hnsw"), 3.0, False)
    assert es_body["knn"]["num_candidates"] == 50  # never below k
    assert "filter" not in es_body["knn"] and "rescore_vector" not in es_body["knn"]
    es_rescored = query("elasticsearch", [0.1] * DIMS, 100, parse("elasticsearch", "bbq_hnsw+rescore"), 2.0, True)
    assert es_rescored["knn"]["rescore_vector"] == {"oversample": 2.0}
    assert es_rescored["knn"]["filter"] == term
