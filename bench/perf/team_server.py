"""A team server: N workspaces of C chunks in one shared index set on one node; what a new workspace, a search and a
restart cost as N grows, against the same workspace alone in a set of its own.

    python -m bench.perf.team_server [--url http://127.0.0.1:9420 --node bench-team] [--workspaces 10000] [--chunks 100]
                                     [--dims 32] [--queries 200] [--resume] [--skip-memory]

Without --url the script starts a managed node of the default flavour (`--node`, default bench-team, port 9420,
heap --heap) and stops it at the end; with --url it measures that node, and restarts it only when --node names the
managed node behind it.

Data: workspace `ws-NNNNN` holds C chunks in files of 10 (paths `daily/2026-MM-DD/notes.md`, the same paths in many
workspaces), each chunk --words words drawn from a 5,000-word pseudo-word vocabulary with Zipf frequencies (exponent
1.1), and a --dims-d vector: a fixed random projection of the chunk's words (bag of words x a Gaussian matrix,
normalised), small on purpose so a 1M-chunk ingest fits on two cores. Loading goes through `store.upsert`, one
workspace per call (a MemoryStore per workspace on one shared client), --streams workspaces in flight, no refresh
until a checkpoint.
At each checkpoint (10, 1,000, 10,000 workspaces loaded, and N):
  new workspace   20 fresh workspaces, one after the other, each as an agent starts: `open_store` (a new client,
                  probe, index checks), one `upsert` of one 10-chunk file (timed as the write and its refresh apart:
                  what `upsert(refresh=True)` does), one `keyword_search` of three of its words; median and p95 of
                  each step and of the total
  node            shards (`_cat/shards`), heap used (`_nodes/stats/jvm`), documents and bytes of the set
  search          workspace ws-00000 among the N, against the same data alone in a set of its own (`<prefix>-alone`),
                  same node, the two sides alternating query by query, 2-4 words from its own chunks (the vector: the
                  same projection of those words): `store.search` in keyword, vector and hybrid mode at ReMe's depth
                  (limit 10, candidates min(200, 10 x 5) = 50); p50 and p95, the ratio, and the overlap of the two
                  top-10s (BM25 statistics are per shard: the shared set's IDF is every workspace's)
At the end: node restart (stop, start to healthy, green, first keyword search answered by a new client) when the
node is managed here; and, unless --skip-memory, keyword recall@10 on the conversational memory set
(bench/data/memory.py) with one workspace per conversation: one set per conversation, one shared set of the 12,
and the 12 inside the N-workspace set.
Results: tables on stdout and bench/results/team_server.txt, JSON in bench/results/team_server.json (rewritten after
every checkpoint, so a killed run keeps what it measured; --resume continues loading a set left by a killed run),
plot docs/img/team_server.png.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench.common import PLOTS, RESULTS, ROOT, Raw, Report, drop_prefix, median, percentile, table, vocabulary
from reme_es.adapters.dialect import ClientSettings
from reme_es.core.models import Chunk, FileDoc
from reme_es.core.options import IndexOptions
from reme_es.store import MemoryStore
from reme_es.store.connect import detect_engine, make_dialect, open_store

PREFIX = "bench-team"
LIMIT = 10
CANDIDATES = min(200, LIMIT * 5)  # ReMe's search step at limit 10
CHECKPOINTS = (10, 1_000, 10_000)
CHUNKS_PER_FILE = 10
OLD_SHARDS_PER_WORKSPACE = 3  # before shared sets: chunks, files and links, one shard each, per workspace
SHARD_LIMIT = 1_000  # cluster.max_shards_per_node default
TARGET = 1.5
MODES = ("keyword", "vector", "hybrid")
STEPS = ("open", "write", "refresh", "search", "total")  # a new workspace's first minute, step by step
TARGET_KEY = "ws-00000"
JSON_OUT = RESULTS / "team_server.json"
STATE = RESULTS / "team_server.state.json"


def workspace_key(i: int) -> str:
    """The key of the i-th loaded workspace."""
    return f"ws-{i:05d}"


def file_path(f: int, i: int) -> str:
    """The f-th file of workspace i: a daily note; workspaces i and i + 5 have the same paths."""
    day = (f * 11 + i % 5) % 336
    extra = f"-{f // 336}" if f >= 336 else ""
    return f"daily/2026-{day // 28 + 1:02d}-{day % 28 + 1:02d}/notes{extra}.md"


class Corpus:
    """Deterministic per-workspace data: Zipf words from a small vocabulary; vectors are a fixed random projection of
    each text's words, so a query's vector is near the chunks that share its words."""

    def __init__(self, dims: int, words: int, vocab: int = 5_000, exponent: float = 1.1, seed: int = 7):
        rng = np.random.default_rng(seed)
        self.words = np.asarray(vocabulary(vocab, rng), dtype=object)
        weights = 1.0 / np.arange(1, vocab + 1) ** exponent
        self.cdf = np.cumsum(weights / weights.sum())
        self.proj = rng.standard_normal((vocab, dims)).astype(np.float32)
        self.n_words, self.seed = words, seed

    def _draw(self, rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
        return np.minimum(np.searchsorted(self.cdf, rng.random(shape)), len(self.cdf) - 1)

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        """Unit vectors of rows of word ids (the sum of their projections)."""
        v = self.proj[ids].sum(axis=-2)
        return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-9)

    def workspace(self, i: int, chunks: int) -> list[tuple[FileDoc, list[Chunk]]]:
        """The files of workspace i (the same i always gives the same files)."""
        rng = np.random.default_rng([self.seed, i])
        ids = self._draw(rng, (chunks, self.n_words))
        vecs = self.vectors(ids).tolist()
        texts = [" ".join(row) for row in self.words[ids]]
        out = []
        for f, start in enumerate(range(0, chunks, CHUNKS_PER_FILE)):
            path = file_path(f, i)
            cs = [
                Chunk(
                    id=f"{path}#{j}",
                    path=path,
                    start_line=(j - start) * 5 + 1,
                    end_line=(j - start) * 5 + 5,
                    text=texts[j],
                    embedding=vecs[j],
                )
                for j in range(start, min(chunks, start + CHUNKS_PER_FILE))
            ]
            out.append((FileDoc(path=path, chunk_ids=[c.id for c in cs]), cs))
        return out

    def queries(self, n: int, i: int, chunks: int) -> list[tuple[str, list[float]]]:
        """`n` queries of 2-4 words taken from random chunks of workspace i (what its agent would look for), with
        their vectors."""
        rng = np.random.default_rng([self.seed, i, 1])
        texts = [c.text for _, cs in self.workspace(i, chunks) for c in cs]
        index = {w: k for k, w in enumerate(self.words)}
        out = []
        for _ in range(n):
            words = texts[int(rng.integers(len(texts)))].split()
            picked = [words[int(k)] for k in rng.choice(len(words), size=int(rng.integers(2, 5)), replace=False)]
            ids = np.asarray([index[w] for w in picked])
            out.append((" ".join(picked), self.vectors(ids[None, :])[0].tolist()))
        return out


def keep_state(prefix: str, chunks: int, dims: int | None, loaded: int) -> None:
    """Record how many workspaces are surely loaded (--resume goes on from there)."""
    STATE.parent.mkdir(parents=True, exist_ok=True)
    STATE.write_text(json.dumps({"prefix": prefix, "chunks": chunks, "dims": dims, "loaded": loaded}))


def scoped(base: MemoryStore, key: str) -> MemoryStore:
    """A store of workspace `key` on `base`'s set and client, for loading (the set is connected through `base`)."""
    store = MemoryStore(base.dialect, base.prefix, IndexOptions(dims=base.dims), workspace=key)
    store.caps = base.caps
    return store


async def load(
    base: MemoryStore, corpus: Corpus, start: int, stop: int, chunks: int, streams: int, say, state: bool = True
) -> float:
    """Workspaces start..stop-1, one upsert per workspace, `streams` in flight (`state`: progress kept for --resume);
    returns seconds."""
    queue: asyncio.Queue = asyncio.Queue(maxsize=streams * 2)
    done = [0]
    t0 = time.perf_counter()
    step = max(1, (stop - start) // 10)

    async def producer() -> None:
        for i in range(start, stop):
            await queue.put((i, corpus.workspace(i, chunks)))
            await asyncio.sleep(0)
        for _ in range(streams):
            await queue.put(None)

    async def worker() -> None:
        while (item := await queue.get()) is not None:
            i, files = item
            await scoped(base, workspace_key(i)).upsert(files, refresh=False)
            done[0] += 1
            if done[0] % step == 0:
                s = time.perf_counter() - t0
                say(f"  loaded {start + done[0]:,} workspaces ({done[0] * chunks / s:,.0f} chunks/s)")
                if state:
                    keep_state(base.prefix, chunks, base.dims, start + done[0] - streams)

    await asyncio.gather(producer(), *(worker() for _ in range(streams)))
    await base.refresh()
    return time.perf_counter() - t0


async def new_workspace(url: str, engine: str, prefix: str, key: str, files: list, dims: int) -> dict:
    """One fresh workspace as an agent starts: open (new client), one file written, one keyword search; seconds."""
    query = " ".join(files[0][1][0].text.split()[5:8])
    t0 = time.perf_counter()
    store = await open_store(ClientSettings(hosts=[url]), prefix, engine, IndexOptions(dims=dims), workspace=key)
    try:
        t1 = time.perf_counter()
        await store.upsert(files, refresh=False)  # what upsert(refresh=True) does, its refresh timed apart
        t2 = time.perf_counter()
        await store.refresh()
        t3 = time.perf_counter()
        hits = await store.keyword_search(query, LIMIT)
        t4 = time.perf_counter()
    finally:
        await store.close()
    return {
        "open": t1 - t0,
        "write": t2 - t1,
        "refresh": t3 - t2,
        "search": t4 - t3,
        "total": t4 - t0,
        "hits": len(hits),
    }


async def new_workspaces(
    url: str, engine: str, prefixes: dict[str, str], corpus: Corpus, dims: int, label: int, n: int
) -> dict[str, list]:
    """`n` fresh workspaces in each set of `prefixes` (side -> prefix), one at a time, the sides alternating which
    goes first: seconds of each step."""
    out: dict[str, list] = {side: [] for side in prefixes}
    sides = list(prefixes)
    for k in range(n):
        files = corpus.workspace(1_000_000 + label * 100 + k, CHUNKS_PER_FILE)[:1]
        for side in sides if k % 2 == 0 else sides[::-1]:
            out[side].append(await new_workspace(url, engine, prefixes[side], f"new-{label}-{k:02d}", files, dims))
    return out


def steps(rows: list[dict]) -> dict:
    """p50 and p95 of each step, the fewest hits and the samples."""
    return {s: {"p50": median([r[s] for r in rows]), "p95": percentile([r[s] for r in rows], 95)} for s in STEPS} | {
        "hits_min": min(r["hits"] for r in rows),
        "samples": len(rows),
    }


async def compare(shared: MemoryStore, alone: MemoryStore, queries: list, warmup: int) -> dict:
    """Per mode: ms of each side (alternating which goes first query by query) and top-10 overlap."""
    out = {}
    for mode in MODES:
        got = {"shared": [], "alone": [], "overlap": [], "hits": []}
        for n, (q, v) in enumerate(queries):
            tops = {}
            for side in ("shared", "alone") if n % 2 == 0 else ("alone", "shared"):
                store = shared if side == "shared" else alone
                t = time.perf_counter()
                result = await store.search(q, v, LIMIT, mode=mode, candidates=CANDIDATES)
                ms = (time.perf_counter() - t) * 1000
                tops[side] = [h.chunk.id for h in result.hits]
                if n >= warmup:
                    got[side].append(ms)
            if n >= warmup:
                a, b = set(tops["shared"]), set(tops["alone"])
                got["overlap"].append(len(a & b) / len(b) if b else float(not a))
                got["hits"].append(len(tops["shared"]))
        out[mode] = got
    return out


async def node_state(raw: Raw, prefix: str) -> dict:
    """Shards on the node, heap, and the set's documents and bytes."""
    shards = await raw.request("GET", "/_cat/shards", params={"format": "json"})
    jvm = next(iter((await raw.request("GET", "/_nodes/stats/jvm"))["nodes"].values()))["jvm"]["mem"]
    rows = await raw.request("GET", f"/_cat/indices/{prefix}-*", params={"format": "json", "bytes": "b"})
    kinds = ("chunks", "files", "links", "workspaces")
    mine = [r for r in rows if r["index"].rsplit("-", 1)[0] in {f"{prefix}-{k}" for k in kinds}]
    return {
        "shards": len(shards),
        "heap_used_percent": jvm["heap_used_percent"],
        "heap_used_bytes": jvm["heap_used_in_bytes"],
        "heap_max_bytes": jvm["heap_max_in_bytes"],
        "set_indices": len(mine),
        "set_docs": sum(int(r["docs.count"] or 0) for r in mine),
        "set_bytes": sum(int(r["store.size"] or 0) for r in mine),
    }


def restart_node(name: str, heap: str, url: str, engine: str, prefix: str, dims: int) -> dict:
    """Stop the managed node, start it, wait for green, answer one keyword search from a new client; seconds."""
    from reme_es.server import node
    from reme_es.server.info import read_node

    info = read_node(name)
    t0 = time.perf_counter()
    node.stop(name)
    t1 = time.perf_counter()
    node.start(info.flavour, name, info.http_port, heap)
    t2 = time.perf_counter()

    async def green_and_answer() -> tuple[float, float, int]:
        settings = ClientSettings(hosts=[url], timeout=120.0)
        dialect = make_dialect(engine, settings)
        try:
            while (await Raw(dialect).request("GET", "/_cluster/health"))["status"] != "green":
                await asyncio.sleep(0.05)
        finally:
            await dialect.transport.close()
        tg = time.perf_counter()
        store = await open_store(settings, prefix, engine, IndexOptions(dims=dims), workspace=TARGET_KEY)
        try:
            hits = await store.keyword_search(store_first_words(), LIMIT)
        finally:
            await store.close()
        return tg, time.perf_counter(), len(hits)

    tg, ta, hits = asyncio.run(green_and_answer())
    return {
        "stop": t1 - t0,
        "start_to_healthy": t2 - t1,
        "start_to_green": tg - t1,
        "start_to_first_answer": ta - t1,
        "first_answer_hits": hits,
    }


def store_first_words() -> str:
    """Words that the target workspace's chunks contain (the commonest of the vocabulary)."""
    return " ".join(vocabulary(5_000, np.random.default_rng(7))[:3])


# --------------------------------------------------------------------------------------- memory set


async def memory_recall(url: str, engine: str, big_prefix: str, big_dims: int) -> dict:
    """Keyword recall@10 of the conversational memory set, one workspace per conversation, three layouts."""
    from bench.data.memory import generate
    from bench.quality.memory_quality import recall_at

    data = generate()
    convs: dict[str, dict[str, list[Chunk]]] = {}
    for cid, path, line, text in data.chunks:
        conv = path.rsplit("/", 1)[-1].removesuffix(".md")
        convs.setdefault(conv, {}).setdefault(path, []).append(
            Chunk(id=cid, path=path, start_line=line, end_line=line, text=text)
        )
    names = sorted(convs)
    key = {c: f"mem-{i:02d}" for i, c in enumerate(names)}
    of_question = [key[q["evidence"][0].rsplit("/", 1)[-1].split("#")[0].removesuffix(".md")] for q in data.questions]
    layouts = {
        "one set per conversation": lambda c: (f"{PREFIX}-mem-{key[c]}", None),
        "one shared set of the 12": lambda c: (f"{PREFIX}-mem", None),
        f"inside the {big_prefix} set": lambda c: (big_prefix, big_dims),
    }
    settings = ClientSettings(hosts=[url], timeout=600.0)
    dialect = make_dialect(engine, settings)
    raw = Raw(dialect)
    out = {}
    try:
        for prefix in [f"{PREFIX}-mem"] + [f"{PREFIX}-mem-{key[c]}" for c in names]:
            await drop_prefix(raw, prefix)
        for layout, where in layouts.items():
            stores = {}
            for c in names:
                prefix, dims = where(c)
                s = await open_store(settings, prefix, engine, IndexOptions(dims=dims), workspace=key[c])
                files = [(FileDoc(path=p, chunk_ids=[x.id for x in cs]), cs) for p, cs in convs[c].items()]
                await s.upsert(files)
                stores[key[c]] = s
            recalls = []
            for q, k in zip(data.questions, of_question):
                hits = await stores[k].keyword_search(q["question"], LIMIT)
                recalls.append(recall_at([h.chunk.id for h in hits], {e: 1 for e in q["evidence"]}, LIMIT))
            out[layout] = {"recall@10": sum(recalls) / len(recalls), "per_question": recalls}
            for c in names:
                if layout.startswith("inside"):
                    await stores[key[c]].drop_workspace()
                await stores[key[c]].close()
        out["questions"] = len(data.questions)
        out["conversations"] = len(names)
    finally:
        for prefix in [f"{PREFIX}-mem"] + [f"{PREFIX}-mem-{key[c]}" for c in names]:
            await drop_prefix(raw, prefix)
        await dialect.transport.close()
    return out


# --------------------------------------------------------------------------------------------- main


def git_commit() -> str:
    """The short commit of this checkout."""
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT, check=False)
    return r.stdout.strip() or "?"


def ms(seconds: float) -> str:
    """Seconds as ms, one decimal."""
    return f"{seconds * 1000:.1f}"


def plot(results: dict, path: Path) -> None:
    """New-workspace time, search p50, and both as ratios to their side-by-side reference, against workspaces loaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cps = results["checkpoints"]
    n = [c["workspaces"] for c in cps]
    fig, (a, b, r) = plt.subplots(1, 3, figsize=(16, 4.6))
    for step, colour in zip(("total", "open", "write", "refresh", "search"), ("C0", "C1", "C2", "C3", "C4")):
        a.plot(n, [c["new_workspace"][step]["p50"] * 1000 for c in cps], marker="o", color=colour, label=step)
        with_ten = [(x, c) for x, c in zip(n, cps) if c.get("new_workspace_in_ten")]
        if step == "total" and with_ten:
            a.plot(
                [x for x, _ in with_ten],
                [c["new_workspace_in_ten"]["total"]["p50"] * 1000 for _, c in with_ten],
                marker="x",
                ls="--",
                color=colour,
                label="total, in a 10-workspace set (same moment)",
            )
    a.set_xscale("log")
    a.set_xlabel("workspaces in the set")
    a.set_ylabel("ms (median of 20 new workspaces)")
    a.set_title("a new workspace: open + first write + first search")
    a.legend(fontsize=7)
    for mode, colour in zip(MODES, ("C0", "C1", "C2")):
        b.plot(n, [c["search"][mode]["shared_p50"] for c in cps], marker="o", color=colour, label=f"{mode}, among N")
        b.plot(
            n, [c["search"][mode]["alone_p50"] for c in cps], marker="x", ls="--", color=colour, label=f"{mode}, alone"
        )
    b.set_xscale("log")
    b.set_xlabel("workspaces in the set")
    b.set_ylabel("p50 ms")
    b.set_title(f"one workspace's search (limit {LIMIT}, {CANDIDATES} candidates)")
    b.legend(fontsize=7)
    with_ten = [(x, c) for x, c in zip(n, cps) if c.get("new_workspace_in_ten")]
    ratios = [c["new_workspace"]["total"]["p50"] / c["new_workspace_in_ten"]["total"]["p50"] for _, c in with_ten]
    r.plot([x for x, _ in with_ten], ratios, marker="s", color="k", label="new workspace / in a set of 10")
    for mode, colour in zip(MODES, ("C0", "C1", "C2")):
        r.plot(
            n, [c["search"][mode]["ratio_p50"] for c in cps], marker="o", color=colour, label=f"{mode} among N / alone"
        )
    r.axhline(TARGET, color="red", ls=":", label=f"target {TARGET}x")
    r.set_xscale("log")
    r.set_ylim(0, max(2.0, TARGET + 0.2))
    r.set_xlabel("workspaces in the set")
    r.set_ylabel("ratio of p50s, measured side by side")
    r.set_title("against the same work in a small set")
    r.legend(fontsize=7)
    fig.suptitle(results["environment"] + " (the last run; earlier checkpoints: see the report)", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot: {path}", file=sys.stderr)


def start_node(name: str, port: int, heap: str) -> str:
    """Start a managed node of the default flavour; its URL."""
    from reme_es.server import node
    from reme_es.server.flavours import DEFAULT_FLAVOUR

    info = node.start(DEFAULT_FLAVOUR, name, port, heap)
    return f"http://127.0.0.1:{info.http_port}"


async def run(args, report: Report, results: dict) -> None:
    corpus = Corpus(args.dims, args.words)
    settings = ClientSettings(hosts=[args.url], timeout=600.0, max_retries=2)
    engine = results["engine"] = await detect_engine(settings)
    dialect = make_dialect(engine, settings)
    raw0 = Raw(dialect)
    have = 0
    state = json.loads(STATE.read_text()) if args.resume and STATE.exists() else {}
    if state.get("prefix") == args.prefix and state.get("chunks") == args.chunks and state.get("dims") == args.dims:
        have = state["loaded"]
    else:
        await drop_prefix(raw0, args.prefix)
        await drop_prefix(raw0, f"{args.prefix}-alone")
    await dialect.transport.close()
    base = await open_store(
        settings, args.prefix, engine, IndexOptions(dims=args.dims), workspace=TARGET_KEY, hybrid="client"
    )
    raw = Raw(base.dialect)
    alone = await open_store(
        settings, f"{args.prefix}-alone", engine, IndexOptions(dims=args.dims), workspace=TARGET_KEY, hybrid="client"
    )
    try:
        caps = base.caps
        env = (
            f"{caps.engine} {caps.version} at {args.url} | reme-es {git_commit()} | python "
            f"{platform.python_version()} | {os.cpu_count()} cpu | "
            f"{dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}"
        )
        results["environment"] = env
        report(env)
        report(
            f"{args.workspaces:,} workspaces x {args.chunks} chunks ({args.workspaces * args.chunks:,} chunks) in "
            f"one set `{args.prefix}`; {args.words}-word chunks, Zipf over 5,000 pseudo-words; {args.dims}-d "
            f"vectors (random projection of each chunk's words: small so the ingest fits on {os.cpu_count()} "
            f"cores; real embeddings are 384-d); search at limit {LIMIT}, {CANDIDATES} candidates per branch, "
            f"hybrid fused {'natively' if base.native_hybrid_available() else 'on the client (RRF)'}"
        )
        if have:
            report(f"resuming: {have:,} workspaces already loaded")
        if not await alone.inspect.count("chunks"):
            await alone.upsert(corpus.workspace(0, args.chunks))
        ten_prefix = f"{args.prefix}-ten"
        ten = await open_store(settings, ten_prefix, engine, IndexOptions(dims=args.dims), workspace=TARGET_KEY)
        try:
            if not await ten.inspect.count("chunks"):
                await load(ten, corpus, 0, 10, args.chunks, args.streams, lambda _: None, state=False)
        finally:
            await ten.close()
        queries = corpus.queries(args.queries + args.warmup, 0, args.chunks)
        checkpoints = sorted({c for c in CHECKPOINTS if c <= args.workspaces} | {args.workspaces})
        results["checkpoints"] = [c for c in results.get("checkpoints", []) if c["workspaces"] < have]
        for cp in checkpoints:
            if cp < have or any(c["workspaces"] == cp for c in results["checkpoints"]):
                continue
            if cp > have:
                seconds = await load(base, corpus, have, cp, args.chunks, args.streams, report)
                report(
                    f"\n## {cp:,} workspaces ({cp * args.chunks:,} chunks): loaded {cp - have:,} in {seconds:.0f} s "
                    f"({(cp - have) * args.chunks / seconds:,.0f} chunks/s)"
                )
                have = cp
                keep_state(args.prefix, args.chunks, args.dims, have)
            else:
                report(f"\n## {cp:,} workspaces ({cp * args.chunks:,} chunks)")
            new = await new_workspaces(
                args.url, engine, {"set": args.prefix, "ten": ten_prefix}, corpus, args.dims, cp, args.new
            )
            node = await node_state(raw, args.prefix)
            cmp = await compare(base, alone, queries, args.warmup)
            entry = {
                "workspaces": cp,
                "chunks": cp * args.chunks,
                "new_workspace": steps(new["set"]),
                "new_workspace_in_ten": steps(new["ten"]),
                "node": node,
                "search": {
                    mode: {
                        "shared_p50": median(m["shared"]),
                        "shared_p95": percentile(m["shared"], 95),
                        "alone_p50": median(m["alone"]),
                        "alone_p95": percentile(m["alone"], 95),
                        "ratio_p50": median(m["shared"]) / median(m["alone"]),
                        "overlap": sum(m["overlap"]) / len(m["overlap"]),
                        "hits": median(m["hits"]),
                    }
                    for mode, m in cmp.items()
                },
            }
            results["checkpoints"].append(entry)
            nw = entry["new_workspace"]
            nt = entry["new_workspace_in_ten"]
            report(
                table(
                    ["step", "in this set p50", "p95", "in a 10-workspace set p50", "p95", "ratio p50"],
                    [
                        [
                            s,
                            ms(nw[s]["p50"]),
                            ms(nw[s]["p95"]),
                            ms(nt[s]["p50"]),
                            ms(nt[s]["p95"]),
                            f"{nw[s]['p50'] / nt[s]['p50']:.2f}x",
                        ]
                        for s in STEPS
                    ],
                    title=f"new workspace (open_store + 1 file upsert (write, then its refresh) + 1 keyword "
                    f"search), ms, {nw['samples']} in this set and {nt['samples']} in `{ten_prefix}` "
                    f"(10 workspaces), alternating; fewest hits {min(nw['hits_min'], nt['hits_min'])}",
                )
            )
            report(
                table(
                    ["mode", "among N p50", "among N p95", "alone p50", "alone p95", "ratio p50", "top-10 overlap"],
                    [
                        [
                            mode,
                            f"{s['shared_p50']:.1f}",
                            f"{s['shared_p95']:.1f}",
                            f"{s['alone_p50']:.1f}",
                            f"{s['alone_p95']:.1f}",
                            f"{s['ratio_p50']:.2f}x",
                            f"{s['overlap']:.2f}",
                        ]
                        for mode, s in entry["search"].items()
                    ],
                    title=f"{TARGET_KEY} among {cp:,} workspaces vs alone in its own set, ms, {args.queries} "
                    "queries each (alternating)",
                )
            )
            report(
                f"node: {node['shards']} shards, heap {node['heap_used_percent']}% "
                f"({node['heap_used_bytes'] / 2**20:,.0f} of {node['heap_max_bytes'] / 2**20:,.0f} MiB); set: "
                f"{node['set_docs']:,} docs, {node['set_bytes'] / 2**20:,.1f} MiB; the old layout (3 single-shard "
                f"indices per workspace) would need {cp * OLD_SHARDS_PER_WORKSPACE:,} shards (limit "
                f"{SHARD_LIMIT:,} per node: {SHARD_LIMIT // OLD_SHARDS_PER_WORKSPACE} workspaces)"
            )
            save(results)
    finally:
        await base.close()
        await alone.close()
    if not args.skip_memory:
        try:
            results["memory"] = await memory_recall(args.url, engine, args.prefix, args.dims)
        except Exception as exc:  # noqa: BLE001 - optional part; the rest of the run stands
            report(f"memory set: failed ({exc!r})")
        save(results)
    if args.node and not args.no_restart:
        results["restart"] = await asyncio.to_thread(
            restart_node, args.node, args.heap, args.url, engine, args.prefix, args.dims
        )
        save(results)


def save(results: dict) -> None:
    """Write the JSON results (after every step, so a killed run keeps what it measured)."""
    JSON_OUT.parent.mkdir(parents=True, exist_ok=True)
    JSON_OUT.write_text(json.dumps(results, indent=1, default=float))


def ten_total(c: dict, q: str) -> str:
    """A checkpoint's new-workspace total in the 10-workspace set, ms ('-' where not measured)."""
    t = c.get("new_workspace_in_ten")
    return ms(t["total"][q]) if t else "-"


def ten_ratio(c: dict) -> str:
    """A checkpoint's new-workspace total p50 in the set over the same in the 10-workspace set."""
    t = c.get("new_workspace_in_ten")
    return f"{c['new_workspace']['total']['p50'] / t['total']['p50']:.2f}x" if t else "-"


def summary(results: dict, args, report: Report) -> None:
    """The tables across checkpoints: growth of a new workspace's cost, search ratios, node, restart, memory."""
    cps = results.get("checkpoints", [])
    if not cps:
        return
    first = cps[0]["new_workspace"]["total"]["p50"]
    report(
        table(
            [
                "workspaces",
                "chunks",
                "open p50",
                "write p50",
                "refresh p50",
                "search p50",
                "total p50",
                "total p95",
                "growth",
                "total p50 in a 10-workspace set",
                "side by side",
                "shards",
                "old-layout shards",
                "heap %",
                "heap MiB",
            ],
            [
                [
                    f"{c['workspaces']:,}",
                    f"{c['chunks']:,}",
                    ms(c["new_workspace"]["open"]["p50"]),
                    ms(c["new_workspace"]["write"]["p50"]),
                    ms(c["new_workspace"]["refresh"]["p50"]),
                    ms(c["new_workspace"]["search"]["p50"]),
                    ms(c["new_workspace"]["total"]["p50"]),
                    ms(c["new_workspace"]["total"]["p95"]),
                    f"{c['new_workspace']['total']['p50'] / first:.2f}x",
                    ten_total(c, "p50"),
                    ten_ratio(c),
                    c["node"]["shards"],
                    f"{c['workspaces'] * OLD_SHARDS_PER_WORKSPACE:,}",
                    c["node"]["heap_used_percent"],
                    f"{c['node']['heap_used_bytes'] / 2**20:,.0f}",
                ]
                for c in cps
            ],
            title=f"\n## summary: a new workspace (ms, median of {args.new}) as the set grows; growth against "
            f"{cps[0]['workspaces']:,} workspaces, and side by side against a new workspace in a set of 10 measured "
            f"alternately at the same checkpoint (target <= {TARGET}x); shards now vs the old layout (limit "
            f"{SHARD_LIMIT:,}/node)",
        )
    )
    report(
        table(
            ["workspaces"] + [f"{m} among N / alone p50" for m in MODES] + [f"{m} p95 among N / alone" for m in MODES],
            [
                [f"{c['workspaces']:,}"]
                + [
                    f"{c['search'][m]['shared_p50']:.1f} / {c['search'][m]['alone_p50']:.1f} = "
                    f"{c['search'][m]['ratio_p50']:.2f}x"
                    for m in MODES
                ]
                + [f"{c['search'][m]['shared_p95']:.1f} / {c['search'][m]['alone_p95']:.1f}" for m in MODES]
                for c in cps
            ],
            title=f"\n## summary: {TARGET_KEY}'s search among N against alone, ms (target ratio <= {TARGET}x)",
        )
    )
    if r := results.get("restart"):
        report(
            table(
                ["stop s", "start to healthy s", "start to green s", "start to first answer s", "hits"],
                [
                    [
                        f"{r['stop']:.2f}",
                        f"{r['start_to_healthy']:.2f}",
                        f"{r['start_to_green']:.2f}",
                        f"{r['start_to_first_answer']:.2f}",
                        r["first_answer_hits"],
                    ]
                ],
                title=f"\n## node restart with {cps[-1]['workspaces']:,} workspaces ({cps[-1]['chunks']:,} chunks,"
                f" {cps[-1]['node']['shards']} shards)",
            )
        )
    if m := results.get("memory"):
        layouts = [k for k in m if isinstance(m[k], dict)]
        base = m[layouts[0]]["recall@10"]
        report(
            table(
                ["layout", "keyword recall@10", "difference", "questions changed"],
                [
                    [
                        k,
                        f"{m[k]['recall@10']:.4f}",
                        f"{m[k]['recall@10'] - base:+.4f}",
                        sum(a != b for a, b in zip(m[k]["per_question"], m[layouts[0]]["per_question"])),
                    ]
                    for k in layouts
                ],
                title=f"\n## conversational memory set ({m['conversations']} conversations, {m['questions']} "
                "questions), one workspace per conversation, keyword search (BM25 statistics are per "
                "shard, shared by the workspaces of a set)",
            )
        )


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default=None, help="node to measure (default: start managed node --node on --port)")
    p.add_argument("--node", default=None, help="managed node name (to start without --url, and to restart)")
    p.add_argument("--port", type=int, default=9420)
    p.add_argument("--heap", default="1g")
    p.add_argument("--prefix", default=PREFIX)
    p.add_argument("--workspaces", type=int, default=10_000)
    p.add_argument("--chunks", type=int, default=100, help="chunks per workspace")
    p.add_argument("--dims", type=int, default=32)
    p.add_argument("--words", type=int, default=40, help="words per chunk")
    p.add_argument("--queries", type=int, default=200, help="search queries per mode and checkpoint")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--new", type=int, default=20, help="new workspaces timed per checkpoint")
    p.add_argument("--streams", type=int, default=6, help="workspaces loading at once")
    p.add_argument("--resume", action="store_true", help="continue loading the set a killed run left")
    p.add_argument("--skip-memory", action="store_true", help="skip the conversational memory recall")
    p.add_argument("--no-restart", action="store_true")
    p.add_argument("--keep", action="store_true", help="keep the sets at the end (default: dropped)")
    p.add_argument("--out", default=None, help="text report (default bench/results/team_server.txt)")
    p.add_argument("--png", default=str(PLOTS / "team_server.png"))
    args = p.parse_args()
    started = False
    if args.url is None:
        args.node = args.node or "bench-team"
        args.url = start_node(args.node, args.port, args.heap)
        started = True
    report = Report()
    report(f"command: python -m bench.perf.team_server {' '.join(sys.argv[1:])}")
    results: dict = {"args": vars(args)}
    if args.resume and JSON_OUT.exists():
        results = json.loads(JSON_OUT.read_text()) | {"args": vars(args)}
    try:
        await run(args, report, results)
    finally:
        summary(results, args, report)
        save(results)
        report.save(args.out or str(RESULTS / "team_server.txt"), "team_server", results.get("engine", "?"))
        if results.get("checkpoints"):
            plot(results, Path(args.png))
        if not args.keep:
            settings = ClientSettings(hosts=[args.url], timeout=600.0)
            try:
                dialect = make_dialect(await detect_engine(settings), settings)
                await drop_prefix(Raw(dialect), args.prefix)
                await drop_prefix(Raw(dialect), f"{args.prefix}-alone")
                await dialect.transport.close()
                STATE.unlink(missing_ok=True)
            except Exception as exc:  # noqa: BLE001 - the node may be gone
                print(f"could not drop {args.prefix}: {exc!r}", file=sys.stderr)
        if started:
            from reme_es.server import node

            node.stop(args.node)


if __name__ == "__main__":
    asyncio.run(main())
