"""Which model made an index's vectors: the records, their comparison, and the embedder a record gives back."""

from __future__ import annotations

import pytest

from reme_es.core.errors import ConfigError
from reme_es.embeddings.embedders import OpenAIEmbedder, describe_model, embedder_for, local_identity, same_model


def test_local_record_and_comparison():
    local = local_identity()
    assert local == {"provider": "local", "model": "all-MiniLM-L6-v2", "dims": 384}
    openai = OpenAIEmbedder("text-embedding-3-small", "https://api.openai.com/v1/", "sk-x", 384).identity
    assert openai == {
        "provider": "openai",
        "model": "text-embedding-3-small",
        "base_url": "https://api.openai.com/v1",
        "dims": 384,
    }
    assert "sk-x" not in str(openai)
    assert same_model(local, dict(local)) and not same_model(local, openai)
    assert not same_model(openai, {**openai, "base_url": "http://proxy:8080/v1"})
    assert describe_model(openai) == "openai text-embedding-3-small (384-d)"
    assert describe_model({"provider": "reme:ollama", "model": "", "dims": 768}) == "reme:ollama (768-d)"


def test_a_recorded_openai_model_gives_that_model_back_and_an_unknown_one_is_refused(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    back = embedder_for({"provider": "openai", "model": "m-1", "base_url": "http://h/v1", "dims": 256})
    assert (back.model, back.base_url, back.dimensions) == ("m-1", "http://h/v1", 256)
    with pytest.raises(ConfigError, match=r"made by reme:dashscope text-embedding-v4 \(1024-d\), which reme-es cannot"):
        embedder_for({"provider": "reme:dashscope", "model": "text-embedding-v4", "dims": 1024})
