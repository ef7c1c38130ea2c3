"""What the three generated conversational-memory sets share (bench/data/memory.py, bench/data/memory2.py,
bench/data/memory3.py): the set's shape, the month names their notes and questions use, and the command line each
one has to write its set out to look at (`python -m bench.data.memory --out DIR`).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


@dataclass
class MemorySet:
    """The generated workspace: notes (path -> lines), chunks (one per turn), questions with their evidence."""

    files: dict[str, list[str]]
    chunks: list[tuple[str, str, int, str]]  # (chunk id, path, line, text)
    questions: list[dict]  # {"id", "question", "kind", "evidence": [chunk ids]}

    def kinds(self) -> dict[str, int]:
        """Questions per kind, in order of first appearance."""
        return dict(Counter(q["kind"] for q in self.questions))


def arguments(doc: str, seed: int, out: str) -> argparse.Namespace:
    """`--seed` and `--out` of a generator's command line."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--seed", type=int, default=seed)
    p.add_argument("--out", default=out, help="where to write the workspace to look at")
    return p.parse_args()


def write_out(data: MemorySet, out: str | Path) -> Path:
    """The set's notes as Markdown files under `out`, and its questions as `out/questions.jsonl`."""
    out = Path(out)
    for path, lines in data.files.items():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    with (out / "questions.jsonl").open("w", encoding="utf-8") as fh:
        for q in data.questions:
            fh.write(json.dumps(q, ensure_ascii=False) + "\n")
    return out
