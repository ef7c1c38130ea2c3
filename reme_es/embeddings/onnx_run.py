"""One way to run a BERT-style ONNX encoder over texts, shared by the offline models (minilm.py, bge.py): batches
through a `tokenizers` tokenizer (padding and truncation already set), the model's inputs it declares, a pooling of
the token states, and L2-normalised float32 vectors."""

from __future__ import annotations

from typing import Any, Literal

Pooling = Literal["mean", "cls"]


def encode(
    session: Any, tokenizer: Any, input_names: set[str], texts: list[str], batch_size: int, pooling: Pooling
) -> list[list[float]]:
    """Vectors of `texts` (an empty text is read as one space), `batch_size` at a time. `mean` pools the token states
    over the attention mask, `cls` takes the first token's; a model that answers pooled vectors is read as is."""
    import numpy as np

    out: list[list[float]] = []
    for start in range(0, len(texts), batch_size):
        encodings = tokenizer.encode_batch([t or " " for t in texts[start : start + batch_size]])
        ids = np.asarray([e.ids for e in encodings], dtype=np.int64)
        mask = np.asarray([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(None, {name: value for name, value in feeds.items() if name in input_names})[0]
        if hidden.ndim == 3 and pooling == "mean":
            weights = mask[:, :, None].astype(hidden.dtype)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        elif hidden.ndim == 3:
            pooled = hidden[:, 0, :]
        else:
            pooled = hidden
        pooled = pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        out.extend(pooled.astype(np.float32).tolist())
    return out
