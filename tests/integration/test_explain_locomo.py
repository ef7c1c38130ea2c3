"""`search --explain`'s library call orders hits exactly as the drop-in's default path does, on every question of
LoCoMo's development half (../shared/data/locomo-dev, bench/quality/locomo.py's loading: a note per session, a chunk
per turn, with vectors of hashed words: no model's cost, the orders compared are the same whatever the vectors).

The default path is what ReMe's `es_search_step` runs: the store's ranked search (50 candidates per branch) and the
first 10 shown (`MemoryStore.ranked` then `shown`). The explained call is `MemoryStore.search` read by
`store.explain.explain`, as `reme-es search --explain` and the UI's search page run it. The conversations are
written once; each question is searched both ways.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reme_es.adapters.dialect import ClientSettings
from reme_es.core.models import chunk_id
from reme_es.core.options import IndexOptions
from reme_es.store.connect import open_store
from reme_es.store.explain import explain
from reme_es.testing.data import file_with

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "locomo-dev"
LIMIT, DEPTH = 10, 50
DIMS = 64


def hashed_vector(text: str) -> list[float]:
    """A bag of hashed words as a unit vector: texts that share words are near, so the k-NN branch ranks like a small
    model would, at no embedding cost (the comparison is of orders, whatever the vectors)."""
    import hashlib
    import math

    from reme_es.store.fusion import terms

    v = [0.0] * DIMS
    for term in terms(text):
        h = hashlib.blake2b(term.encode(), digest_size=4).digest()
        v[int.from_bytes(h[:3], "big") % DIMS] += 1.0 if h[3] & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / norm if norm else 0.0 for x in v] if any(v) else [1.0] + [0.0] * (DIMS - 1)


def _conversations():
    from bench.quality.locomo import CONVERSATIONS, conversation

    return [conversation(DATA / f"{name}.json") for name in CONVERSATIONS]


@pytest.mark.skipif(not DATA.is_dir(), reason=f"LoCoMo's development half is not at {DATA}")
async def test_explain_orders_every_locomo_question_as_the_default_path(node_url, prefix):
    import asyncio

    from reme_es.core.models import Chunk

    sets = _conversations()
    texts = [t for d in sets for turns in d.files.values() for _, _, t in turns]
    vectors = {t: hashed_vector(t) for t in texts}
    questions = [q for d in sets for q in d.queries]
    asked = {q: hashed_vector(q) for q in questions}
    store = await open_store(ClientSettings([node_url]), prefix, "auto", IndexOptions(dims=DIMS))
    try:
        files = []
        for d in sets:
            for path, turns in d.files.items():
                chunks = [
                    Chunk(
                        id=chunk_id(path, line, line, text),
                        path=path,
                        start_line=line,
                        end_line=line,
                        text=text,
                        embedding=vectors[text],
                    )
                    for _, line, text in turns
                ]
                files.append(file_with(path, chunks))
        for i in range(0, len(files), 20):
            await store.upsert(files[i : i + 20], refresh=False)
        await store.refresh()
        differing: list[str] = []
        stages_seen: set[str] = set()
        gate = asyncio.Semaphore(8)  # questions in flight at once: the node answers while the client ranks

        async def compare(q: str) -> None:
            async with gate:
                ranked = await store.ranked(q, asked[q], DEPTH, None, LIMIT)
                chosen = ranked.hits[:LIMIT]
                shown = await store.shown(chosen, list(dict.fromkeys(h.chunk.path for h in chosen)))
                default = [h.chunk.id for h in shown.hits]
                out = explain(await store.search(q, asked[q], LIMIT))
            assert out["consistent"], q
            stages_seen.update(s["name"] for s in out["stages"])
            if [h["id"] for h in out["ranked"]] != default:
                differing.append(q)

        await asyncio.gather(*(compare(q) for q in questions))
        assert len(questions) == 760
        assert differing == []
        # the default path's stages on a store with vectors and client fusion, each seen on some question
        assert {"bm25", "k-NN", "fusion", "collapse", "speaker", "note", "date", "question", "turn length", "cut"} <= (
            stages_seen
        )
    finally:
        await store.drop()
        await store.close()
