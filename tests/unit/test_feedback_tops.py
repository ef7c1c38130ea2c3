"""The feedback's top-hit searches (`reme_es.store.feedback`): what they ask for and how their sources are kept."""

from __future__ import annotations

from reme_es.adapters.dialect import SOURCE_EXCLUDES, top_bodies
from reme_es.store.feedback import by_chunk


def test_top_bodies_keep_each_branch_query_and_ask_for_n_hits_with_the_source_feedback_reads():
    keyword = {
        "size": 50,
        "query": {"match": {"text": "q"}},
        "_source": {"excludes": SOURCE_EXCLUDES},
        "track_total_hits": False,
    }
    knn = {"size": 50, "query": {"knn": {"embedding": {"vector": [1.0, 0.0], "k": 50}}}}
    tops = top_bodies([keyword, knn], 1, {"exclude_vectors": False})
    assert tops == [
        {**keyword, "size": 1, "_source": {"excludes": SOURCE_EXCLUDES}},
        {**knn, "size": 1, "_source": {"exclude_vectors": False}},  # the k-NN clause (its k) unchanged
    ]
    assert keyword["size"] == knn["size"] == 50  # the candidates' bodies are not touched


def test_by_chunk_keeps_one_source_per_chunk_preferring_the_one_with_its_vector():
    text_only = {"chunk_id": "a", "text": "t"}
    with_vector = {"chunk_id": "a", "text": "t", "embedding": [0.1, 0.2]}
    other = {"chunk_id": "b", "text": "u"}
    assert by_chunk([[text_only, other], [with_vector]]) == {"a": with_vector, "b": other}
    assert by_chunk([[with_vector], [text_only]]) == {"a": with_vector}
    assert by_chunk([]) == {}
