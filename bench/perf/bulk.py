"""Bulk write throughput of MemoryStore.upsert against the raw `_bulk` ceiling: same docs, same node, same run.

    python -m bench.perf.bulk [--url http://127.0.0.1:9200] [--chunks 20000] [--vector-chunks 10000] [--dims 384]
                              [--reps 5] [--vector-reps 3] [--batch-files 500] [--streams 1] [--profile]

Two modes: text only (--chunks), and text + --dims random unit vectors (the first --vector-chunks chunks). The
chunks are split into units of --batch-files files. In each repetition both sides start from empty indices
created from the store's chunks template and load the same units in turn, the first side alternating unit by
unit (so a neighbour's load on this shared 2-core machine hits both alike), then each refreshes once. Medians
over the repetitions are reported.
  raw    pre-serialised NDJSON (orjson) of the unit's chunk docs in bodies of ~--body-mib MiB, sent one after
         another with the store's own client (`transport.perform_request` / `perform_request`) to a scratch index;
  store  one `MemoryStore.upsert(unit, refresh=False)` call (it also checks for stale chunks and writes one file
         doc per file, as a sync does), and `store.refresh()` at the end.
Only the requests and the upsert calls are timed; models and bodies are built beforehand. Both sides store the
identical chunk sources (checked). docs/s counts chunks. --streams N writes N units at once on each side (the
sync writes 2 batches of 200 files concurrently: --streams 2 --batch-files 200). --profile adds one profiled
store-only load per mode: wall time per request kind and the cProfile top functions.
"""

from __future__ import annotations

import asyncio
import contextlib
import cProfile
import gc
import hashlib
import io
import pstats
import time
from urllib.parse import quote

import orjson

from bench.common import Raw, Report, Stopwatch, TextGenerator, connect, environment, median, mib, parser, table
from reme_es.adapters.templates import render_index
from reme_es.core.models import Chunk, FileDoc
from reme_es.store import MemoryStore, chunk_source

TARGETS = {"text": 0.80, "vectors": 0.70}


def build_files(
    texts: list[str], vectors: list[list[float]] | None, per_file: int
) -> list[tuple[FileDoc, list[Chunk]]]:
    """Files of `per_file` chunks each, as a sync would hand them to the store."""
    files = []
    for start in range(0, len(texts), per_file):
        path = f"memory/bench/{start // per_file:06d}.md"
        chunks = []
        for j, text in enumerate(texts[start : start + per_file]):
            line = j * 10
            chunks.append(
                Chunk(
                    id=f"{path}#{j}",
                    path=path,
                    start_line=line + 1,
                    end_line=line + 10,
                    text=text,
                    hash=hashlib.sha1(text.encode()).hexdigest(),
                    embedding=None if vectors is None else vectors[start + j],
                )
            )
        size = sum(len(c.text) for c in chunks)
        files.append(
            (
                FileDoc(
                    path=path,
                    st_mtime=1_700_000_000.0 + start,
                    chunk_ids=[c.id for c in chunks],
                    size=size,
                    hash=hashlib.sha1(path.encode()).hexdigest(),
                ),
                chunks,
            )
        )
    return files


def ndjson_bodies(files: list[tuple[FileDoc, list[Chunk]]], index: str, body_bytes: int) -> list[bytes]:
    """Pre-serialised `_bulk` bodies of about `body_bytes` each."""
    bodies, lines, size = [], [], 0
    for _, chunks in files:
        for chunk in chunks:
            action = orjson.dumps({"index": {"_index": index, "_id": chunk.id, "routing": chunk.path}})
            source = orjson.dumps(chunk_source(chunk))
            if lines and size + len(action) + len(source) + 2 > body_bytes:
                bodies.append(b"\n".join(lines) + b"\n")
                lines, size = [], 0
            lines += [action, source]
            size += len(action) + len(source) + 2
    if lines:
        bodies.append(b"\n".join(lines) + b"\n")
    return bodies


async def count(raw: Raw, index: str) -> int:
    """Docs visible in an index."""
    return (await raw.request("GET", f"/{index}/_count"))["count"]


class Totals:
    """Wall and client CPU seconds summed over the timed parts of one side of a run."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0

    def add(self, sw: Stopwatch) -> None:
        """Add one timed part."""
        self.wall += sw.wall
        self.cpu += sw.cpu


async def fresh_indices(store: MemoryStore, raw: Raw, raw_index: str) -> None:
    """An empty scratch index rendered from the store's chunks template, and the store's indices recreated empty."""
    with contextlib.suppress(Exception):  # not there yet
        await raw.request("DELETE", f"/{raw_index}")
    await raw.request("PUT", f"/{raw_index}", render_index("chunks", store.dialect, store.caps, store.options))
    await store.clear()


async def send_raw(raw: Raw, bodies: list[bytes]) -> None:
    """Send pre-serialised `_bulk` bodies one after another; fail on any item error."""
    for body in bodies:
        resp = await raw.request("POST", "/_bulk", body)
        if resp["errors"]:
            bad = next(i for i in resp["items"] if "error" in next(iter(i.values())))
            raise RuntimeError(f"raw bulk failed: {bad}")


async def run_pair(
    store: MemoryStore, raw: Raw, raw_index: str, units: list, first: str, streams: int = 1
) -> tuple[Totals, Totals]:
    """One repetition on fresh indices: raw and store load the same rounds of `streams` units in turn (each side
    writes a round's units concurrently; the first side alternates per round), then each refreshes once."""
    await fresh_indices(store, raw, raw_index)
    raw_t, store_t = Totals(), Totals()
    sides = ("raw", "store") if first == "raw" else ("store", "raw")
    rounds = [units[i : i + streams] for i in range(0, len(units), streams)] + [None]
    for r, batch in enumerate(rounds):
        for side in sides if r % 2 == 0 else sides[::-1]:
            with Stopwatch() as sw:
                if side == "raw":
                    if batch is None:
                        await raw.request("POST", f"/{raw_index}/_refresh")
                    else:
                        await asyncio.gather(*(send_raw(raw, bodies) for _, bodies in batch))
                elif batch is None:
                    await store.refresh()
                else:
                    await asyncio.gather(*(store.upsert(files, refresh=False) for files, _ in batch))
            (raw_t if side == "raw" else store_t).add(sw)
    return raw_t, store_t


class RequestLog:
    """Wraps a store's dialect.transport.request and dialect.bulk on the instance to time every call by kind."""

    def __init__(self, store: MemoryStore):
        self.times: dict[str, list[float]] = {}
        dialect = store.dialect
        request, bulk = dialect.transport.request, dialect.transport.bulk
        names = {store.index(k): k for k in ("chunks", "files", "links")}

        def kind(method: str, path: str, body: object) -> str:
            parts = path.strip("/").split("/")
            index = names.get(parts[0], "*") if parts and not parts[0].startswith("_") else ""
            what = parts[-1] if parts[-1].startswith("_") else parts[0]
            if what == "_search" and isinstance(body, dict) and "search_after" not in body and "sort" in body:
                what = "_search (stale-id scan)"
            return f"{method} {index} {what}".replace("  ", " ")

        async def timed_request(method, path, body=None, params=None):
            t = time.perf_counter()
            try:
                return await request(method, path, body, params)
            finally:
                self.times.setdefault(kind(method, path, body), []).append(time.perf_counter() - t)

        async def timed_bulk(actions, *a, **k):
            t = time.perf_counter()
            try:
                return await bulk(actions, *a, **k)
            finally:
                ops = sorted({f"{x['_op_type']} {names.get(x['_index'], x['_index'])}" for x in actions})
                label = "bulk " + (", ".join(ops) if ops else "(empty)") + f" [{len(actions)} actions]"
                self.times.setdefault(label if len(actions) < 100 else label.split(" [")[0], []).append(
                    time.perf_counter() - t
                )

        dialect.transport.request, dialect.transport.bulk = timed_request, timed_bulk
        self._restore = lambda: (delattr(dialect.transport, "request"), delattr(dialect.transport, "bulk"))

    def close(self) -> None:
        """Put the dialect's own methods back."""
        self._restore()

    def rows(self) -> list[list]:
        """(kind, calls, total s, share) sorted by total time."""
        total = sum(sum(v) for v in self.times.values()) or 1.0
        out = sorted(self.times.items(), key=lambda kv: -sum(kv[1]))
        return [[k, len(v), f"{sum(v):.2f}", f"{sum(v) / total:.0%}"] for k, v in out]


def profile_text(prof: cProfile.Profile, limit: int) -> str:
    """The top functions by own time and by cumulative time."""
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.strip_dirs().sort_stats("tottime").print_stats(limit)
    stats.sort_stats("cumulative").print_stats(limit)
    return out.getvalue()


async def bench_mode(args, report: Report, mode: str, texts: list[str], gen: TextGenerator) -> dict:
    """All repetitions of one mode; returns the summary row."""
    dims = args.dims if mode == "vectors" else None
    if dims:
        texts = texts[: args.vector_chunks]
    vectors = gen.vectors(len(texts), dims).tolist() if dims else None
    files = build_files(texts, vectors, args.chunks_per_file)
    n = sum(len(c) for _, c in files)
    store = await connect(args.url, args.prefix, dims=dims, hybrid="client")
    raw = Raw(store.dialect)
    raw_index = f"{args.prefix}-raw-chunks"
    body_bytes = int(args.body_mib * (1 << 20))
    try:
        if not report.lines:
            report(environment(store, args.url))
        units = [
            (files[i : i + args.batch_files], ndjson_bodies(files[i : i + args.batch_files], raw_index, body_bytes))
            for i in range(0, len(files), args.batch_files)
        ]
        bodies = [b for _, bs in units for b in bs]
        total = sum(map(len, bodies))
        gc.collect()
        gc.freeze()  # the generated data is not the store's garbage: keep it out of the collector's scans
        report(
            f"\n## {mode}: {n} chunks of ~{args.words} words in {len(files)} files"
            + (f", {dims}-d vectors" if dims else "")
            + f"; {len(units)} units of {args.batch_files} files, each one upsert call (store) and "
            f"{mib(total / len(bodies))} MiB bodies (raw: {len(bodies)} bodies, {mib(total)} MiB in all); "
            f"{args.streams} stream(s) per side"
        )
        if args.warmup:  # JIT and caches: an untimed load of the first unit, both ways
            await run_pair(store, raw, raw_index, units[: args.streams], "raw", args.streams)
        rows, raw_rates, store_rates, raw_cpu, store_cpu = [], [], [], [], []
        for rep in range(args.vector_reps if dims else args.reps):
            first = "raw" if rep % 2 == 0 else "store"
            raw_t, store_t = await run_pair(store, raw, raw_index, units, first, args.streams)
            for index in (raw_index, store.index("chunks")):
                if (got := await count(raw, index)) != n:
                    raise RuntimeError(f"{index} holds {got} chunks after the run, expected {n}")
            r, s = n / raw_t.wall, n / store_t.wall
            raw_rates.append(r)
            store_rates.append(s)
            raw_cpu.append(raw_t.cpu)
            store_cpu.append(store_t.cpu)
            rows.append(
                [
                    rep + 1,
                    first,
                    f"{raw_t.wall:.2f}",
                    f"{raw_t.cpu:.2f}",
                    f"{r:,.0f}",
                    f"{store_t.wall:.2f}",
                    f"{store_t.cpu:.2f}",
                    f"{s:,.0f}",
                    f"{s / r:.0%}",
                ]
            )
        report(
            table(
                [
                    "rep",
                    "first",
                    "raw s",
                    "raw cpu s",
                    "raw docs/s",
                    "store s",
                    "store cpu s",
                    "store docs/s",
                    "store/raw",
                ],
                rows,
            )
        )
        await check_identical(raw, raw_index, store, files)
        if args.profile:
            await fresh_indices(store, raw, raw_index)
            log = RequestLog(store)
            prof = cProfile.Profile()
            try:
                with Stopwatch() as sw:
                    prof.enable()
                    for unit_files, _ in units:
                        await store.upsert(unit_files, refresh=False)
                    await store.refresh()
                    prof.disable()
            finally:
                log.close()
            report(f"\n### where one store load goes ({mode}): {sw.wall:.2f} s wall, {sw.cpu:.2f} s client CPU")
            report(
                table(["request (wall time, includes client work inside the call)", "calls", "s", "share"], log.rows())
            )
            report(f"\n### cProfile of that load ({mode})\n")
            report(profile_text(prof, args.profile_lines))
        gc.unfreeze()
        return {
            "mode": mode,
            "chunks": n,
            "raw": median(raw_rates),
            "store": median(store_rates),
            "ratio": median(store_rates) / median(raw_rates),
            "paired": median([s / r for s, r in zip(store_rates, raw_rates)]),
            "cpu": (median(store_cpu) / n * 1e6, median(raw_cpu) / n * 1e6),
            "target": TARGETS[mode],
        }
    finally:
        with contextlib.suppress(Exception):
            await raw.request("DELETE", f"/{raw_index}")
        await store.drop()
        await store.close()


async def check_identical(raw: Raw, raw_index: str, store: MemoryStore, files: list) -> None:
    """The raw and the store runs stored the same `_source` for a sample of chunks."""
    for _, chunks in files[:: max(1, len(files) // 5)]:
        c = chunks[0]
        a = await raw.request("GET", f"/{raw_index}/_doc/{quote(c.id, safe='')}", params={"routing": c.path})
        b = await raw.request(
            "GET", f"/{store.index('chunks')}/_doc/{quote(c.id, safe='')}", params={"routing": c.path}
        )
        if a["_source"] != b["_source"]:
            raise RuntimeError(f"raw and store docs differ for {c.id}: {a['_source'].keys()} vs {b['_source'].keys()}")


async def main() -> None:
    p = parser(__doc__.splitlines()[0], "bench-bulk")
    p.add_argument("--chunks", type=int, default=20_000)
    p.add_argument("--words", type=int, default=100, help="words per chunk")
    p.add_argument("--chunks-per-file", type=int, default=10)
    p.add_argument("--vector-chunks", type=int, default=10_000, help="chunks of the vectors mode (the first ones)")
    p.add_argument("--batch-files", type=int, default=500, help="files per unit: one upsert call / raw bodies")
    p.add_argument("--dims", type=int, default=384, help="vector dimension of the vectors mode (0: text only)")
    p.add_argument("--modes", default="text,vectors")
    p.add_argument("--reps", type=int, default=5, help="repetitions of the text-only mode (about 10 s each)")
    p.add_argument("--vector-reps", type=int, default=3, help="repetitions of the vectors mode (about 50 s each)")
    p.add_argument("--streams", type=int, default=1, help="units written concurrently by each side (sync uses 2)")
    p.add_argument("--body-mib", type=float, default=8.0, help="raw `_bulk` body size")
    p.add_argument("--no-warmup", dest="warmup", action="store_false", help="skip the untimed warm-up load")
    p.add_argument("--profile", action="store_true", help="also profile one store run per mode with cProfile")
    p.add_argument("--profile-lines", type=int, default=30)
    args = p.parse_args()
    gen = TextGenerator()
    texts = gen.texts(args.chunks, args.words)
    report = Report()
    modes = [m for m in args.modes.split(",") if m and not (m == "vectors" and not args.dims)]
    summary = []
    for mode in modes:
        summary.append(await bench_mode(args, report, mode, texts, gen))
    report(
        "\n## summary: medians of the repetitions; store/raw = ratio of the medians, paired = median of per-rep ratios"
    )
    report(
        table(
            [
                "mode",
                "chunks",
                "raw docs/s",
                "store docs/s",
                "store/raw",
                "paired",
                "target",
                "met",
                "client CPU us/chunk store/raw",
            ],
            [
                [
                    s["mode"],
                    s["chunks"],
                    f"{s['raw']:,.0f}",
                    f"{s['store']:,.0f}",
                    f"{s['ratio']:.1%}",
                    f"{s['paired']:.1%}",
                    f">= {s['target']:.0%}",
                    "yes" if s["ratio"] >= s["target"] else "NO",
                    f"{s['cpu'][0]:.0f} / {s['cpu'][1]:.0f}",
                ]
                for s in summary
            ],
        )
    )
    report.save(args.out, "bulk", report.lines[0].split()[0] if report.lines else "unknown")


if __name__ == "__main__":
    asyncio.run(main())
