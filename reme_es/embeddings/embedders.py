"""Embedders for the command line: none, local (all-MiniLM-L6-v2), e5 (multilingual-e5-small; both offline) or an
OpenAI-compatible API."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any, Literal, Protocol, overload

from ..core.errors import ConfigError, ReMeESError
from .e5 import E5_MODEL_NAME, E5_PREFIXES, e5_identity
from .minilm import MODEL_NAME, describe_model, local_identity, same_model


class Embedder(Protocol):
    """Turns texts into vectors of `dimensions` floats."""

    dimensions: int

    @property
    def identity(self) -> dict:
        """What the index records about the model (`provider`, `model`, `dims`; never a secret)."""

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per stored text."""

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """One vector per question (differs from `embed` for asymmetric models such as e5)."""


class OpenAIEmbedder:
    """An OpenAI-compatible `/embeddings` endpoint (key from the settings or OPENAI_API_KEY)."""

    def __init__(self, model: str, base_url: str, api_key: str | None, dimensions: int | None, batch_size: int = 256):
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            raise ConfigError("embedding: openai needs an API key: set REME_ES_EMBEDDING_API_KEY or OPENAI_API_KEY")
        self._key = key
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.dimensions = dimensions or 1536
        self.batch_size = batch_size

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, base_url={self.base_url!r}, dimensions={self.dimensions})"

    @property
    def identity(self) -> dict:
        """Provider, model, endpoint and dimension (the key is not recorded)."""
        return {"provider": "openai", "model": self.model, "base_url": self.base_url, "dims": self.dimensions}

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed in batches; raises ReMeESError with the server's reason on failure."""
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            body: dict[str, Any] = {
                "model": self.model,
                "input": [t or " " for t in texts[start : start + self.batch_size]],
            }
            if self.dimensions:
                body["dimensions"] = self.dimensions
            req = urllib.request.Request(
                f"{self.base_url}/embeddings",
                data=json.dumps(body).encode(),
                headers={"Authorization": f"Bearer {self._key}", "Content-Type": "application/json"},
            )
            try:
                with urllib.request.urlopen(req, timeout=60) as resp:
                    data = json.loads(resp.read())["data"]
            except urllib.error.HTTPError as exc:
                raise ReMeESError(f"embedding request failed with {exc.code}: {exc.read()[:300]!r}") from None
            except (OSError, ValueError, KeyError) as exc:
                raise ReMeESError(f"embedding request to {self.base_url} failed: {exc}") from None
            out.extend(item["embedding"] for item in sorted(data, key=lambda d: d["index"]))
        return out

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """The endpoint's model takes questions as they are."""
        return self.embed(texts)


class _CheckedLocal:
    """A local model (LocalMiniLM for `local`, LocalE5 for `e5`) whose missing-file errors become a ConfigError."""

    dimensions = 384

    def __init__(self, kind: str = "local") -> None:
        from .e5 import LocalE5
        from .minilm import LocalMiniLM

        self.kind = kind
        self._model = LocalE5() if kind == "e5" else LocalMiniLM()

    @property
    def identity(self) -> dict:
        """reme-es' local all-MiniLM-L6-v2 or multilingual-e5-small."""
        return e5_identity() if self.kind == "e5" else local_identity()

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self._checked(self._model.embed, texts)

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        return self._checked(self._model.embed_queries, texts)

    def _checked(self, embed, texts: list[str]) -> list[list[float]]:
        try:
            return embed(texts)
        except (FileNotFoundError, ImportError) as exc:
            raise ConfigError(f"embedding: {self.kind} is not usable: {exc}") from None


def embedder_for(model: dict, api_key: str | None = None) -> Embedder:
    """The embedder that makes the vectors a recorded model made; ConfigError when reme-es cannot run it."""
    provider = model.get("provider")
    if provider == "local" and model.get("model") == E5_MODEL_NAME and model.get("prefixes") != E5_PREFIXES:
        raise ConfigError(
            f"the index's vectors were made by {describe_model(model)} with every text embedded as a question (before "
            "reme-es embedded stored texts as `passage: `); its vectors and new ones would not match: `reme-es drop "
            "--yes` and sync again with --embedding e5 (or search with --mode keyword)"
        )
    if provider == "local" and model.get("model") in (MODEL_NAME, E5_MODEL_NAME):
        return make_embedder("e5" if model.get("model") == E5_MODEL_NAME else "local")
    if provider == "openai":
        return make_embedder("openai", model.get("model", ""), model.get("base_url", ""), api_key, model.get("dims"))
    raise ConfigError(
        f"the index's vectors were made by {describe_model(model)}, which reme-es cannot run: search with --mode "
        "keyword (or through ReMe), sync with --embedding none (ReMe embeds the new chunks at its next start)"
    )


@overload
def make_embedder(
    kind: Literal["local", "e5", "openai"],
    model: str = "",
    base_url: str = "",
    api_key: str | None = None,
    dims: int | None = None,
) -> Embedder: ...
@overload
def make_embedder(
    kind: str, model: str = "", base_url: str = "", api_key: str | None = None, dims: int | None = None
) -> Embedder | None: ...
def make_embedder(
    kind: str, model: str = "", base_url: str = "", api_key: str | None = None, dims: int | None = None
) -> Embedder | None:
    """The embedder for a settings value (`none` gives None)."""
    if kind == "none":
        return None
    if kind in ("local", "e5"):
        if dims and dims != 384:
            raise ConfigError(f"embedding: {kind} gives 384-d vectors, but dims is {dims}")
        embedder = _CheckedLocal(kind)
        embedder.embed(["probe"])  # fail now, not in the middle of a sync
        return embedder
    if kind == "openai":
        return OpenAIEmbedder(model, base_url, api_key, dims)
    raise ConfigError(f"embedding must be none, local, e5 or openai, got {kind!r}")


__all__ = [
    "Embedder",
    "OpenAIEmbedder",
    "describe_model",
    "embedder_for",
    "local_identity",
    "make_embedder",
    "same_model",
]


async def recorded_embedder(store: Any, api_key: str | None = None) -> Embedder | None:
    """The embedder of the model `store`'s index records for its vectors (None when the index has no vectors or
    records no model); MappingError when the recorded model's dimension is not the index's."""
    import asyncio

    from ..core.errors import MappingError

    if not store.dims:
        return None
    recorded = await store.admin.vectors_model()
    if recorded is None:
        return None
    embedder = await asyncio.to_thread(embedder_for, recorded, api_key)
    if embedder.dimensions != store.dims:
        raise MappingError(
            f"index {store.index('chunks')} holds {store.dims}-d vectors but records a {embedder.dimensions}-d model; "
            "`reme-es drop --yes` and sync again"
        )
    return embedder
