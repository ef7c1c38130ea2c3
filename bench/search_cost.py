"""What the drop-in's fusion settings cost per search and what they find: `collapse` and the feedback's length gate
against their absence, on both quality sets, interleaved query by query on one node.

    python bench/search_cost.py --url http://127.0.0.1:9200 [--sets memory,cranfield] [--rounds 3]

Each set of bench/memory_quality.py (the generated conversational memory, Cranfield) goes into an index of its own,
with MiniLM vectors (the stored texts' and the questions', from that bench's cache; embedded on first use). Every
question then runs `SearchStore.ranked` under each variant: the first round trips of `es_search_step`, at its depth
(min(200, 10 x 5) = 50 candidates per branch), client-side z-score fusion at vector weight 0.55, limit 10. The
variants run in a rotating order query by query, `--rounds` times over the questions, after 20 warm-up questions, so
the machine's drift falls on all of them alike. Printed per set and variant: p50 and p95 ms of the call, round trips
per search (the requests the store's client sent), and recall@10 / nDCG@10 of its top 10 (as the quality bench
scores them), so each setting's cost sits beside what it finds. A second table gives each set's chunk lengths in
the terms the feedback gate counts (`fusion.terms`), against its threshold.

  defaults                  collapse on, feedback from top hits of at least 30 terms (the drop-in's defaults)
  collapse off              the same, every copy of a repeated text kept
  feedback from any hit     the feedback's length gate off (FEEDBACK_MIN_TERMS 0): the search before the gate
  neither (last round)      collapse off and feedback from any hit: the drop-in's search of the last round
  feedback off              collapse on, no feedback (one round trip fewer at most)
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import Report, connect, environment, parser, percentile, table  # noqa: E402
from memory_quality import (  # noqa: E402
    PASSAGE_VECTORS,
    VECTORS,
    cranfield_set,
    embed_all,
    memory_set,
    ndcg_at,
    recall_at,
    use_model,
)

from reme_es.core.models import Chunk, FileDoc  # noqa: E402
from reme_es.core.options import SearchOptions  # noqa: E402
from reme_es.store import fusion  # noqa: E402

PREFIX = "bench-search-cost"
LIMIT, CANDIDATES, WARMUP = 10, 50, 20
VARIANTS = {  # name -> (collapse, feedback depth, feedback length gate in terms)
    "defaults": (True, 1, fusion.FEEDBACK_MIN_TERMS),
    "collapse off": (False, 1, fusion.FEEDBACK_MIN_TERMS),
    "feedback from any hit": (True, 1, 0),
    "neither (last round)": (False, 1, 0),
    "feedback off": (True, 0, fusion.FEEDBACK_MIN_TERMS),
}


def counted(store) -> list[int]:
    """A one-item counter of the requests the store's dialect sends from now on."""
    sent = [0]
    request = store.dialect.transport.request

    async def recorded(method, path, body=None, params=None):
        sent[0] += 1
        return await request(method, path, body, params)

    store.dialect.transport.request = recorded
    return sent


async def index(store, data) -> None:
    """Every chunk of the set, with its text hash and its passage-side vector, 200 files a call; then refreshed."""
    import hashlib

    files = []
    for path, chunks in data.files.items():
        cs = [
            Chunk(
                id=cid,
                path=path,
                start_line=line,
                end_line=line,
                text=text,
                embedding=PASSAGE_VECTORS[text],
                hash=hashlib.sha256(text.encode()).hexdigest(),
            )
            for cid, line, text in chunks
        ]
        files.append((FileDoc(path=path, chunk_ids=[c.id for c in cs]), cs))
    for i in range(0, len(files), 200):
        await store.upsert(files[i : i + 200])
    await store.refresh()


async def measure(store, data, rounds: int) -> dict[str, dict]:
    """Per variant: call times (s), requests per call, and the top 10 of each question (first round)."""
    sent = counted(store)
    out = {name: {"times": [], "trips": [], "ranked": []} for name in VARIANTS}
    names = list(VARIANTS)

    async def run(name: str, q: str, record: bool) -> None:
        collapse, feedback, gate = VARIANTS[name]
        store.indices.collapse, store.indices.feedback, fusion.FEEDBACK_MIN_TERMS = collapse, feedback, gate
        before, t0 = sent[0], time.perf_counter()
        result = await store.searches.ranked(q, VECTORS[q], CANDIDATES, None, LIMIT)
        elapsed = time.perf_counter() - t0
        if record:
            out[name]["times"].append(elapsed)
            out[name]["trips"].append(sent[0] - before)
            if len(out[name]["ranked"]) < len(data.queries):
                out[name]["ranked"].append([h.chunk.id for h in result.hits[:LIMIT]])

    for q in data.queries[:WARMUP]:
        for name in names:
            await run(name, q, record=False)
    for r in range(rounds):
        for k, q in enumerate(data.queries):
            turn = (k + r) % len(names)
            for name in names[turn:] + names[:turn]:
                await run(name, q, record=True)
    fusion.FEEDBACK_MIN_TERMS = VARIANTS["defaults"][2]
    return out


async def main() -> None:
    p = parser(__doc__.splitlines()[0], PREFIX)
    p.add_argument("--sets", default="memory,cranfield", help="which sets to run (default both)")
    p.add_argument("--cranfield", default="/work/shared/data/cranfield", help="Cranfield's folder")
    p.add_argument("--rounds", type=int, default=3, help="passes over the questions (default 3)")
    args = p.parse_args()
    report = Report()
    use_model("minilm")
    wanted = args.sets.split(",")
    sets = ([memory_set()] if "memory" in wanted else []) + (
        [cranfield_set(Path(args.cranfield))] if "cranfield" in wanted else []
    )
    rows, lengths, engine = [], [], "?"
    for data in sets:
        texts = [t for chunks in data.files.values() for _, _, t in chunks]
        n = [len(fusion.terms(t)) for t in texts]
        lengths.append(
            [
                data.name,
                len(n),
                min(n),
                f"{percentile(n, 1):.0f}",
                f"{percentile(n, 50):.0f}",
                max(n),
                f"{sum(x >= fusion.FEEDBACK_MIN_TERMS for x in n) / len(n):.3f}",
            ]
        )
        embed_all(texts + data.queries)
        embed_all(texts, side="passage")
        store = await connect(
            args.url,
            f"{PREFIX}-{data.name}",
            dims=len(VECTORS[data.queries[0]]),
            hybrid="client",
            fusion="zscore",
            vector_weight=SearchOptions().vector_weight,
        )
        try:
            if not rows:
                report(environment(store, args.url))
            engine = store.caps.engine
            await index(store, data)
            got = await measure(store, data, args.rounds)
        finally:
            await store.drop()
            await store.close()
        for name, m in got.items():
            recall = sum(recall_at(r, g, LIMIT) for r, g in zip(m["ranked"], data.gains)) / len(data.gains)
            ndcg = sum(ndcg_at(r, g, LIMIT) for r, g in zip(m["ranked"], data.gains)) / len(data.gains)
            rows.append(
                [
                    data.name,
                    name,
                    f"{percentile(m['times'], 50) * 1000:.2f}",
                    f"{percentile(m['times'], 95) * 1000:.2f}",
                    f"{sum(m['trips']) / len(m['trips']):.2f}",
                    f"{recall:.3f}",
                    f"{ndcg:.3f}",
                ]
            )
    report(
        table(
            ["set", "variant", "p50 ms", "p95 ms", "round trips", "R@10", "nDCG@10"],
            rows,
            title=f"\n## SearchStore.ranked, {CANDIDATES} candidates per branch, limit {LIMIT}, MiniLM, "
            f"{args.rounds} rounds",
        )
    )
    report(
        table(
            ["set", "chunks", "min", "p1", "median", "max", f"share >= {fusion.FEEDBACK_MIN_TERMS}"],
            lengths,
            title="\n## terms per chunk (fusion.terms), what the feedback gate counts",
        )
    )
    report.save(args.out, "search_cost", engine)


if __name__ == "__main__":
    asyncio.run(main())
