"""Cranfield (1,400 aeronautics abstracts, 225 queries, graded judgments) as the benches read it: the documents,
the queries in judgment order and the judgments, from a folder holding `cran.all.1400`, `cran.qry` and `cranqrel`
(`--cranfield /work/shared/data/cranfield`; nothing is fetched); the path each document is stored at, and the two
mappings of grades to gains.
"""

from __future__ import annotations

import re
from pathlib import Path

GAINS = {1: 4, 2: 3, 3: 2, 4: 1, 5: 0, -1: 0}  # the README's mapping (ReMe's numbers use it)
# QRelsCorrectedforTRECeval's mapping: the one -1 judgment per query (it looks like the query's source document,
# e.g. query 1 -> doc 486 "similarity laws for aerothermoelastic testing") gets the top gain 5.
TREC_GAINS = {1: 4, 2: 3, 3: 2, 4: 1, -1: 5}


def _fields(text: str) -> list[tuple[int, dict[str, str]]]:
    """Records of a SMART-format file: (.I number, {field letter: text})."""
    records = []
    for block in re.split(r"^\.I\s+", text, flags=re.MULTILINE)[1:]:
        head, _, rest = block.partition("\n")
        fields: dict[str, str] = {}
        parts = re.split(r"^\.([A-Z])\s*$", rest, flags=re.MULTILINE)
        for key, value in zip(parts[1::2], parts[2::2]):
            fields[key] = " ".join(value.split())
        records.append((int(head.strip()), fields))
    return records


def load_cranfield(root: Path) -> tuple[dict[int, str], list[str], dict[int, dict[int, int]]]:
    """(doc id -> title + abstract, queries in judgment order 1..225, qid -> {doc id: grade})."""
    docs = {}
    for num, f in _fields((root / "cran.all.1400").read_text(encoding="latin-1")):
        docs[num] = f"{f.get('T', '')}\n{f.get('W', '')}".strip()
    queries = [f.get("W", "") for _, f in _fields((root / "cran.qry").read_text(encoding="latin-1"))]
    qrels: dict[int, dict[int, int]] = {}
    for line in (root / "cranqrel").read_text().splitlines():
        if line.strip():
            q, d, g = (int(x) for x in line.split()[:3])
            qrels.setdefault(q, {})[d] = g
    return docs, queries, qrels


def path_of(doc: int) -> str:
    """The file path a Cranfield document is stored at."""
    return f"resource/cran/{doc:04d}.md"


def doc_of(path: str) -> int:
    """The Cranfield document id of a stored path."""
    return int(path.rsplit("/", 1)[1].split(".")[0])
