"""Could ReMe's search job take two round trips with feedback on? What the answer's fetch would have to guess.

    python -m bench.perf.feedback_trips --url http://127.0.0.1:9200 [--size 2k] [--queries 200]

`es_search_step` takes three round trips when a first-pass top hit is long enough to feed back: the candidates, the
expanded branches (they need the first pass's top hits), and the shown hits' texts, links and neighbour files (they
need the fused ranking of the expanded branches). Two trips would mean fetching the answer's texts and links in the
second trip, beside the expanded branches, for hits chosen before those branches answer: the first pass's top `n`.
That works only when the final top 10 lies inside them. Per workload (bench/data/workloads.py, `--size` chunks loaded
through ReMe's file-store interface, the drop-in's defaults: z-score 0.55, feedback 1, collapse), this prints how
often feedback fires (the final top 10 differs from the first pass's) and how often the final top 10 (its chunks,
or just its files) lies inside the first pass's top 10, 20, 30 and 50.
"""

from __future__ import annotations

import asyncio

from bench.common import Report, parser, table
from bench.compare.reme_world import Corpus, engine_label, file_store, load, open_app, parse_size, set_corpus
from reme_es.store.fusion import collapse_repeats

PREFIX = "bench-feedback-trips"
LIMIT, DEPTH = 10, 50  # the job's limit and ReMe's depth per branch at that limit (min(200, 10 x 5))
HEADS = (10, 20, 30, 50)


async def run_workload(args, workload: str) -> list:
    """One row: the workload's counts over `--queries` queries."""
    corpus = set_corpus(Corpus(workload))
    backend = await engine_label(args.url)
    app = await open_app(backend, args.url, f"{args.prefix}-{workload}", args.size)
    try:
        await load(app, backend, corpus, args.size, reuse=True)
        fs = file_store(app)
        store = fs._require_store()
        f = store.indices.filter({})
        fired, chunks_in, files_in = 0, dict.fromkeys(HEADS, 0), dict.fromkeys(HEADS, 0)
        queries = corpus.queries(args.queries)
        for q in queries:
            vector = await fs.vectors.query_vector(q)
            first = (await store.searches._pool(q, vector, DEPTH, f, feedback=False)).hits
            first = collapse_repeats(first) if store.indices.collapse else first
            final = (await store.ranked(q, vector, DEPTH, {}, LIMIT)).hits[:LIMIT]
            ids, paths = [h.chunk.id for h in final], {h.chunk.path for h in final}
            fired += ids != [h.chunk.id for h in first[:LIMIT]]
            for n in HEADS:
                chunks_in[n] += set(ids) <= {h.chunk.id for h in first[:n]}
                files_in[n] += paths <= {h.chunk.path for h in first[:n]}

        def share(k: int) -> str:
            return f"{k / len(queries):.2f}"

        return [
            workload,
            len(queries),
            share(fired),
            *(share(chunks_in[n]) for n in HEADS),
            *(share(files_in[n]) for n in HEADS),
        ]
    finally:
        if not args.keep:
            await file_store(app).clear()
            await file_store(app).store.drop()
        await app.close()


def main() -> None:
    p = parser(__doc__.split("\n")[0], PREFIX)
    p.add_argument("--size", default="2k", help="chunks per workload (default 2k)")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--workloads", default="hash,topics")
    p.add_argument("--keep", action="store_true", help="leave the indices")
    args = p.parse_args()
    args.size = parse_size(args.size)
    rows = [asyncio.run(run_workload(args, w)) for w in args.workloads.split(",")]
    headers = [
        "workload",
        "queries",
        "feedback changed the top 10",
        *(f"top 10 in first {n}" for n in HEADS),
        *(f"its files in first {n}" for n in HEADS),
    ]
    report = Report()
    report(
        f"{args.size:,} chunks per workload, limit {LIMIT}, depth {DEPTH}, the drop-in's defaults; shares of queries"
    )
    report(table(headers, rows, "Feedback against a two-trip job: is the final top 10 among the first pass's?"))
    report.save(args.out, "feedback_trips", asyncio.run(engine_label(args.url)))


if __name__ == "__main__":
    main()
