"""Embedding cost per chunk and per question of the offline encoders (issue 50 item 1), interleaved so that a busy
machine slows each alike: `--rounds` rounds, each embedding the same `--turns` LoCoMo turns (as chunks, the passage
side) and `--questions` questions with every model in turn, one thread each, batches of 32.

    python -m bench.quality.encoder_cost [--models minilm,bge] [--turns 256] [--questions 64] [--rounds 3]

Prints the median milliseconds per text of each model and side, and each model's ratio to the first. Timing: valid
only on a quiet machine (re-run there before quoting it).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from bench.quality import locomo
from bench.quality.memory_models import embedder


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="minilm,bge")
    p.add_argument("--data", default="/work/shared/data/locomo-dev")
    p.add_argument("--turns", type=int, default=256)
    p.add_argument("--questions", type=int, default=64)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    d = locomo.conversation(Path(args.data) / "26.json")
    turns = [t for cs in d.files.values() for _, _, t in cs][: args.turns]
    questions = d.queries[: args.questions]
    models = {name: embedder(name) for name in args.models.split(",")}
    ms: dict[tuple[str, str], list[float]] = {}
    for m in models.values():  # warm up: load each model once outside the timing
        m.embed(questions[:2])
    for _ in range(args.rounds):
        for name, m in models.items():
            side = m.embed_passages or m.embed
            for kind, texts, fn in (("chunk", turns, side), ("question", questions, m.embed)):
                t0 = time.perf_counter()
                for i in range(0, len(texts), 32):
                    fn(texts[i : i + 32])
                ms.setdefault((name, kind), []).append((time.perf_counter() - t0) * 1000 / len(texts))
    first = next(iter(models))
    for (name, kind), values in ms.items():
        med = statistics.median(values)
        ratio = med / statistics.median(ms[(first, kind)])
        print(f"{name:8s} {kind:8s} {med:7.2f} ms/text  {ratio:.2f}x {first}")


if __name__ == "__main__":
    main()
