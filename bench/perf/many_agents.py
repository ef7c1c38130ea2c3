"""Many agents at once, the reason to run a server: 1, 8, 32 and 64 agents, each searching and writing its own
workspace of a 1,000-workspace set through ReMe's file-store interface, on one node, against the same agents each
running ReMe's faiss store in a process of its own.

    python -m bench.perf.many_agents [--scale 1] [--agents 1,8,32,64] [--backends opensearch-3,faiss]
                                     [--seconds 20] [--warmup 5] [--writes 0.2] [--es-processes 1]
                                     [--url http://127.0.0.1:9490] [--port 9490] [--heap 1g] [--png PATH]

Data: workspace `ws-NNNNN` is 10 files of 10 chunks (100 chunks, 100 words each, 384-d vectors from the bench's fake
embedding model: bench/data/workloads.py, shape `topics`); 1,000 workspaces (100,000 chunks) at `--scale 1`, and
`--scale 0.1` gives 100 (10,000 chunks). reme-es: the whole set is loaded once into one index set on the node
(`--prefix`) through a MemoryStore per workspace on the first agent's client (bench/perf/team_server.py's loader,
fed what the file store's `upsert` writes: reme_es.reme.convert), then left to stop merging. faiss: each agent's
process loads its own workspace (one `upsert` of its 10 files, one `dump()`), as ReMe's start-up scan does.

Agent k works on workspace k, through a ReMe Application of its own (the bench's `app_config`: the file store
`opensearch` with `workspace_key` ws-k, or `faiss`), back to back with no think time. Its operations, in a fixed
pattern with `--writes` of them writes (default 0.2: four searches, then a write):
  search  what ReMe's search step asks of the file store at limit 10: `vector_search` and `keyword_search` at
          min(200, 10 x 5) = 50, at once (asyncio.gather); 2-4 words of one of the workspace's own topics
  write   what ReMe's index step does when one file changed: `upsert` of that one file (10 new chunks, handed over
          already embedded, as bench/compare/reme_backends.py does), then `dump()` (faiss: its files and index
          written; reme-es: the write made searchable)
A run per agent count: every agent starts its Application, then all start at one moment; `--warmup` seconds are
not counted, then for `--seconds` seconds every operation that starts and ends inside the window counts.
reme-es agents are asyncio tasks in one process (`--es-processes` spreads them over more); faiss agents are one
process each (multiprocessing, spawn). Throughput is operations per second over all agents, per kind; p50/p99 the
latencies every agent saw, per kind.

Memory: per process VmRSS, and PSS (/proc/PID/smaps_rollup: shared library pages divided among the processes that
map them), after the run; the node's RSS (its pid from `_nodes/_local/process`). Where RAM runs out is an
extrapolation from the measured per-agent figure to this machine's MemTotal: faiss, MemTotal / (RSS of one faiss
agent process at its workspace size); reme-es, (MemTotal - the node's RSS) / (RSS of one reme-es agent in a process of
its own, the 1-agent run), as each agent would run as its own ReMe process.

Without --url the script starts a managed node (`reme-es server start --name agents-many --port --port --heap
--heap`) and stops it at the end. Tables go to stdout and bench/results/many_agents.txt, JSON to
bench/results/many_agents.json, the plot to docs/img/many_agents.png (needs matplotlib: the `bench` extra). Timing
figures mean something only on a quiet machine.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import multiprocessing as mp
import os
import platform
import queue
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

from bench.common import PLOTS, RESULTS, Raw, Report, drop_prefix, percentile, table
from bench.compare import reme_app as ra
from bench.data.workloads import PER_FILE, Corpus, chunk_id, file_path
from bench.perf.team_server import git_commit, load, workspace_key

PREFIX = "agents-many"
NODE = "agents-many"
WORKSPACES = 1_000  # at --scale 1
FILES = 10  # files per workspace
CHUNKS = FILES * PER_FILE  # chunks per workspace
LIMIT = 10
DEPTH = min(200, LIMIT * 5)  # ReMe's search step: candidates per branch at limit 10
KINDS = ("search", "write")
QUERIES_PER_AGENT = 400


# ------------------------------------------------------------------------------------------------ data


def workspace_files(corpus: Corpus, ws: int) -> list:
    """Workspace `ws`'s files as ReMe hands them to `upsert`: [(FileNode, [FileChunk])], chunks embedded."""
    from reme.schema import FileChunk, FileNode

    texts, vecs = corpus.chunk_batch(ws * CHUNKS, CHUNKS)
    out = []
    for f in range(FILES):
        fid = ws * FILES + f
        path = file_path(fid)
        chunks = [
            FileChunk(
                id=chunk_id(ws * CHUNKS + f * PER_FILE + j),
                path=path,
                start_line=j * 10 + 1,
                end_line=j * 10 + 10,
                text=texts[f * PER_FILE + j],
                embedding=vecs[f * PER_FILE + j],
            )
            for j in range(PER_FILE)
        ]
        out.append((FileNode(path=path, st_mtime=1_780_000_000.0 + fid, chunk_ids=[c.id for c in chunks]), chunks))
    return out


def rewritten_file(corpus: Corpus, ws: int, k: int) -> tuple:
    """The k-th write of workspace `ws`'s agent: file k mod 10 of the workspace with 10 new chunks (new texts)."""
    from reme.schema import FileChunk, FileNode

    fid = ws * FILES + k % FILES
    path = file_path(fid)
    texts, vecs = corpus.chunk_batch(10**8 + ws * 10**5 + k * PER_FILE, PER_FILE)
    chunks = [
        FileChunk(
            id=f"ws{ws:05d}-w{k}-{j}",
            path=path,
            start_line=j * 10 + 1,
            end_line=j * 10 + 10,
            text=texts[j],
            embedding=vecs[j],
        )
        for j in range(PER_FILE)
    ]
    return FileNode(path=path, st_mtime=time.time(), chunk_ids=[c.id for c in chunks]), chunks


def agent_queries(corpus: Corpus, ws: int, n: int) -> list[str]:
    """`n` queries of 2-4 words of the topics of workspace `ws`'s files (what its agent would look for)."""
    rng = np.random.default_rng([corpus.seed, ws, 2])
    out = []
    for _ in range(n):
        topic = corpus.topic_of(ws * FILES + int(rng.integers(FILES)))
        out.append(" ".join(corpus.words[i] for i in rng.choice(topic, size=int(rng.integers(2, 5)), replace=False)))
    return out


def is_write(i: int, share: float) -> bool:
    """Whether an agent's i-th operation is a write: `share` of them, evenly spaced (0.2: every fifth)."""
    return int((i + 1) * share) > int(i * share)


class SetData:
    """The set's workspaces as reme-es documents, for team_server's loader (`workspace(i, chunks)`): what the file
    store's `upsert` writes for the same ReMe files."""

    def __init__(self, corpus: Corpus):
        self.corpus = corpus

    def workspace(self, i: int, chunks: int) -> list:
        """Workspace i as [(FileDoc, [Chunk])] (`chunks` is always CHUNKS here)."""
        from reme_es.reme.convert import as_vector, to_chunk, to_file_doc

        return [
            (to_file_doc(node, cs), [to_chunk(c, as_vector(c.embedding)) for c in cs])
            for node, cs in workspace_files(self.corpus, i)
        ]


# ------------------------------------------------------------------------------------------ agent processes


def memory_mib() -> dict:
    """This process' VmRSS, VmHWM and RssAnon (/proc/self/status) and PSS (/proc/self/smaps_rollup), MiB."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key = line.split(":")[0]
            if key in ("VmRSS", "VmHWM", "RssAnon"):
                out[key] = int(line.split()[1]) / 1024
    try:
        with open("/proc/self/smaps_rollup") as f:
            out["Pss"] = next(int(line.split()[1]) / 1024 for line in f if line.startswith("Pss:"))
    except (OSError, StopIteration):
        out["Pss"] = float("nan")
    return out


def agent_config(spec: dict, ws: int, folder: Path) -> dict:
    """The ReMe Application config of workspace `ws`'s agent."""
    cfg = ra.app_config(folder, spec["backend"], spec.get("url"), spec["prefix"])
    if spec["backend"] in ra.FLAVOURS:
        cfg["components"]["file_store"]["default"]["workspace_key"] = workspace_key(ws)
    return cfg


async def agent(fs, corpus: Corpus, ws: int, share: float, measure_from: float, stop_at: float) -> dict:
    """One agent: operations back to back until `stop_at`; ms of those inside the window, per kind."""
    queries = agent_queries(corpus, ws, QUERIES_PER_AGENT)
    out: dict = {k: [] for k in KINDS} | {"failed": dict.fromkeys(KINDS, 0), "error": None}
    i = writes = 0
    while (start := time.monotonic()) < stop_at:
        kind = "write" if is_write(i, share) else "search"
        try:
            if kind == "write":
                await fs.upsert([rewritten_file(corpus, ws, writes)])
                await fs.dump()
                writes += 1
            else:
                q = queries[i % len(queries)]
                await asyncio.gather(fs.vector_search(q, DEPTH, {}), fs.keyword_search(q, DEPTH, {}))
        except Exception as exc:  # noqa: BLE001 - counted and reported; the run goes on
            out["failed"][kind] += 1
            out["error"] = out["error"] or repr(exc)
            continue
        finally:
            i += 1
        end = time.monotonic()
        if start >= measure_from and end <= stop_at:
            out[kind].append((end - start) * 1000)
    return out


async def run_agents(spec: dict, messages, go, start_at) -> dict:
    """Start one Application per workspace of `spec`, say ready, wait for the start, run the agents, measure memory."""
    corpus = ra.set_corpus(Corpus("topics"))
    apps = []
    try:
        for ws in spec["workspaces"]:
            folder = Path(spec["root"]) / workspace_key(ws)
            folder.mkdir(parents=True, exist_ok=True)
            app = ra.make_app(agent_config(spec, ws, folder))
            apps.append(app)
            await app.start()
            if spec["backend"] not in ra.FLAVOURS:  # faiss: the agent's own workspace, as ReMe's start-up scan loads it
                fs = ra.file_store(app)
                await fs.upsert(workspace_files(corpus, ws))
                await fs.dump()
        messages.put(("ready", os.getpid()))
        await asyncio.to_thread(go.wait)
        t0 = start_at.value
        await asyncio.sleep(max(0.0, t0 - time.monotonic()))
        measure_from = t0 + spec["warmup"]
        stop_at = measure_from + spec["seconds"]
        runs = await asyncio.gather(
            *(
                agent(ra.file_store(app), corpus, ws, spec["writes"], measure_from, stop_at)
                for app, ws in zip(apps, spec["workspaces"])
            )
        )
        return {"pid": os.getpid(), "agents": len(apps), "runs": runs, "memory": memory_mib()}
    finally:
        for app in apps:
            await app.close()


def agent_process(spec: dict, messages, go, start_at) -> None:
    """A process of agents (the target of multiprocessing): its result or its error on `messages`."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        messages.put(("result", asyncio.run(run_agents(spec, messages, go, start_at))))
    except BaseException as exc:  # noqa: BLE001 - the driver reports it and stops the run
        messages.put(("error", f"{spec['backend']} process {os.getpid()}: {exc!r}"))


def next_message(messages, timeout: float) -> tuple[str, object]:
    """The next message of the agent processes; a run whose processes say nothing for `timeout` s stops."""
    try:
        kind, body = messages.get(timeout=timeout)
    except queue.Empty:
        raise SystemExit(f"the agent processes said nothing for {timeout:.0f} s") from None
    if kind == "error":
        raise SystemExit(body)
    return kind, body


def run_count(backend: str, agents: int, args, url: str | None, root: Path) -> dict:
    """`agents` agents of one backend at once: faiss one process each, reme-es in `--es-processes` processes."""
    ctx = mp.get_context("spawn")
    messages, go, start_at = ctx.Queue(), ctx.Event(), ctx.Value("d", 0.0)
    if backend in ra.FLAVOURS:
        n = max(1, min(agents, args.es_processes))
        groups = [list(range(agents))[p::n] for p in range(n)]
        where = root / "es"  # the same folder per workspace in every run: its claim on the set stays this folder's
    else:
        groups = [[ws] for ws in range(agents)]
        where = root / f"faiss-{agents}"  # a fresh workspace folder per run
    base = {"backend": backend, "url": url, "prefix": args.prefix, "root": str(where)}
    base |= {"warmup": args.warmup, "seconds": args.seconds, "writes": args.writes}
    procs = [
        ctx.Process(target=agent_process, args=({**base, "workspaces": g}, messages, go, start_at)) for g in groups
    ]
    t = time.perf_counter()
    for p in procs:
        p.start()
    try:
        ready = 0
        while ready < len(procs):
            kind, _ = next_message(messages, args.timeout)
            ready += kind == "ready"
        started_s = time.perf_counter() - t
        start_at.value = time.monotonic() + 1.0
        go.set()
        results = []
        while len(results) < len(procs):
            _, body = next_message(messages, args.warmup + args.seconds + args.timeout)
            results.append(body)
        for p in procs:
            p.join(timeout=60)
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
                p.join(timeout=10)
    return summarise(backend, agents, results, args.seconds, started_s)


def summarise(backend: str, agents: int, results: list[dict], seconds: float, started_s: float) -> dict:
    """Throughput, p50/p99 per kind, failures, and the processes' memory of one run."""
    runs = [r for res in results for r in res["runs"]]
    out: dict = {"backend": backend, "agents": agents, "processes": len(results), "start_s": started_s}
    for kind in KINDS:
        ms = [v for r in runs for v in r[kind]]
        out[kind] = {
            "ops": len(ms),
            "ops_per_s": len(ms) / seconds,
            "p50": percentile(ms, 50),
            "p99": percentile(ms, 99),
            "failed": sum(r["failed"][kind] for r in runs),
        }
    out["ops_per_s"] = sum(out[k]["ops_per_s"] for k in KINDS)
    out["errors"] = sorted({r["error"] for r in runs if r["error"]})
    out["rss_mib"] = sum(res["memory"]["VmRSS"] for res in results)
    out["pss_mib"] = sum(res["memory"]["Pss"] for res in results)
    out["peak_rss_mib"] = sum(res["memory"]["VmHWM"] for res in results)
    out["rss_per_process_mib"] = out["rss_mib"] / len(results)
    out["pss_per_process_mib"] = out["pss_mib"] / len(results)
    return out


# ------------------------------------------------------------------------------------------ the node


def start_node(port: int, heap: str) -> str:
    """Start this bench's managed node; its URL."""
    cmd = [*ra_cli(), "server", "start", "--name", NODE, "--port", str(port), "--heap", heap, "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"could not start node {NODE}: {out.stderr.strip() or out.stdout.strip()}")
    return json.loads(out.stdout.strip().splitlines()[-1])["url"]


def stop_node() -> None:
    """Stop this bench's managed node."""
    subprocess.run([*ra_cli(), "server", "stop", "--name", NODE], capture_output=True, check=False)


def ra_cli() -> list[str]:
    """The `reme-es` command of this environment."""
    from bench.compare.reme_backends import reme_es_cli

    return reme_es_cli()


def node_rss_mib(url: str) -> float | None:
    """The node process' RSS (MiB) when it runs on this machine; None otherwise."""
    try:
        with urllib.request.urlopen(f"{url}/_nodes/_local/process", timeout=10) as resp:
            body = json.loads(resp.read())
        pid = next(iter(body["nodes"].values()))["process"]["id"]
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) / 1024 for line in f if line.startswith("VmRSS:"))
    except (OSError, ValueError, KeyError, StopIteration):
        return None


async def with_raw(url: str, action):
    """Run `action(raw)` with a raw client on the node."""
    from reme_es.adapters.dialect import ClientSettings
    from reme_es.store.connect import detect_engine, make_dialect

    settings = ClientSettings(hosts=[url], timeout=600.0)
    dialect = make_dialect(await detect_engine(settings), settings)
    try:
        return await action(Raw(dialect))
    finally:
        await dialect.transport.close()


async def wait_merges(raw: Raw, prefix: str) -> float:
    """Seconds until no merge runs on the set's indices."""
    t = time.perf_counter()
    while (await raw.request("GET", f"/{prefix}-*/_stats/merge"))["_all"]["primaries"]["merges"]["current"]:
        await asyncio.sleep(0.2)
    return time.perf_counter() - t


async def load_set(url: str, flavour: str, prefix: str, workspaces: int, root: Path, streams: int, say) -> dict:
    """The whole set on the node: the first agent's file store creates it, every workspace is loaded into it."""
    await with_raw(url, lambda raw: drop_prefix(raw, prefix))
    ra.set_corpus(Corpus("topics"))
    folder = root / "es" / workspace_key(0)
    folder.mkdir(parents=True, exist_ok=True)
    spec = {"backend": flavour, "url": url, "prefix": prefix}
    app = ra.make_app(agent_config(spec, 0, folder))
    await app.start()
    try:
        fs = ra.file_store(app)
        seconds = await load(fs.store, SetData(Corpus("topics")), 0, workspaces, CHUNKS, streams, say, state=False)
        merge_s = await with_raw(url, lambda raw: wait_merges(raw, prefix))
        # the k-NN width, measured now as a sync would (else the agents' file stores start it in the counted window)
        t = time.perf_counter()
        fs.knn_width.later()
        await fs.knn_width.wait()
        calibrate_s = time.perf_counter() - t
        engine = f"{fs.store.caps.engine} {fs.store.caps.version}"
    finally:
        await app.close()
    return {"load_s": seconds, "merge_s": merge_s, "calibrate_s": calibrate_s, "engine": engine}


# ------------------------------------------------------------------------------------------ report


def mem_total_mib() -> float:
    """This machine's MemTotal (MiB)."""
    with open("/proc/meminfo") as f:
        return next(int(line.split()[1]) / 1024 for line in f if line.startswith("MemTotal:"))


def fmt(v: float | None, digits: int | None = None) -> str:
    """A number for the tables ('-' for none)."""
    from bench.compare.reme_backends import fmt as rb_fmt

    return rb_fmt(v, digits)


def extrapolation(results: dict) -> list[dict]:
    """Per backend: RAM one more agent takes, what stays fixed, and how many agents fit in MemTotal (extrapolated)."""
    total = results["mem_total_mib"]
    out = []
    for backend in results["backends"]:
        runs = [r for r in results["runs"] if r["backend"] == backend]
        if not runs:
            continue
        if backend in ra.FLAVOURS:
            one = next((r for r in runs if r["agents"] == 1 and r["processes"] == 1), None)
            if one is None:
                continue
            per, per_pss, fixed = one["rss_mib"], one["pss_mib"], results.get("node_rss_mib") or 0.0
            basis = "one reme-es agent alone in its process (the 1-agent run) + the node"
        else:
            big = max(runs, key=lambda r: r["agents"])
            per, per_pss, fixed = big["rss_per_process_mib"], big["pss_per_process_mib"], 0.0
            basis = f"mean of the {big['agents']} faiss agent processes"
        out.append(
            {
                "backend": backend,
                "per_agent_rss_mib": per,
                "per_agent_pss_mib": per_pss,
                "fixed_mib": fixed,
                "fit_rss": int((total - fixed) // per) if per else None,
                "fit_pss": int((total - fixed) // per_pss) if per_pss == per_pss and per_pss else None,
                "basis": basis,
            }
        )
    return out


def tables(results: dict) -> str:
    """The run's tables: throughput and latency, memory, and where RAM runs out (extrapolated)."""
    runs = results["runs"]
    rows = [
        [
            ra.LABELS[r["backend"]],
            r["agents"],
            r["processes"],
            fmt(r["ops_per_s"], 1),
            fmt(r["search"]["ops_per_s"], 1),
            fmt(r["search"]["p50"]),
            fmt(r["search"]["p99"]),
            fmt(r["write"]["ops_per_s"], 1),
            fmt(r["write"]["p50"]),
            fmt(r["write"]["p99"]),
            r["search"]["failed"] + r["write"]["failed"],
        ]
        for r in runs
    ]
    out = [
        table(
            [
                "backend",
                "agents",
                "processes",
                "ops/s",
                "search ops/s",
                "search p50 ms",
                "search p99 ms",
                "write ops/s",
                "write p50 ms",
                "write p99 ms",
                "failed",
            ],
            rows,
            title=f"{results['workspaces']:,} workspaces x {CHUNKS} chunks ({results['workspaces'] * CHUNKS:,}), "
            f"{results['args']['writes']:.0%} writes (upsert of 1 file + dump), the rest searches (vector + keyword "
            f"at {DEPTH}, at once), {results['args']['seconds']:.0f} s after {results['args']['warmup']:.0f} s warm-up",
        )
    ]
    node = results.get("node_rss_mib")
    rows = [
        [
            ra.LABELS[r["backend"]],
            r["agents"],
            r["processes"],
            fmt(r["rss_mib"], 0),
            fmt(r["pss_mib"], 0),
            fmt(r["rss_per_process_mib"], 0),
            fmt(node, 0) if r["backend"] in ra.FLAVOURS else "-",
            fmt(r["rss_mib"] + ((node or 0.0) if r["backend"] in ra.FLAVOURS else 0.0), 0),
        ]
        for r in runs
    ]
    out.append(
        table(
            [
                "backend",
                "agents",
                "processes",
                "agents' RSS MiB",
                "agents' PSS MiB",
                "RSS per process",
                "node RSS MiB",
                "total RSS MiB",
            ],
            rows,
            title="memory after the run (RSS counts shared library pages once per process; PSS divides them)",
        )
    )
    total = results["mem_total_mib"]
    rows = [
        [
            ra.LABELS[e["backend"]],
            fmt(e["per_agent_rss_mib"], 0),
            fmt(e["per_agent_pss_mib"], 0),
            fmt(e["fixed_mib"], 0),
            f"{e['fit_rss']:,}" if e["fit_rss"] is not None else "-",
            f"{e['fit_pss']:,}" if e["fit_pss"] is not None else "-",
            e["basis"],
        ]
        for e in results["extrapolation"]
    ]
    out.append(
        table(
            [
                "backend",
                "RSS per agent MiB",
                "PSS per agent MiB",
                "fixed MiB",
                "agents in RAM by RSS",
                "by PSS",
                "measured as",
            ],
            rows,
            title=f"where RAM runs out: an EXTRAPOLATION to this machine's {total / 1024:.1f} GiB (MemTotal) from "
            f"the per-agent figure at {CHUNKS} chunks per workspace, not a measurement",
        )
    )
    return "\n".join(out)


def plot(results: dict, path: Path) -> None:
    """Throughput, p50/p99 per kind, and total RSS against agents, per backend."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no plot: matplotlib is missing (pip install 'reme-es[bench]')", file=sys.stderr)
        return
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(16, 4.6))
    node = results.get("node_rss_mib") or 0.0
    for colour, backend in zip(("C0", "C1", "C2", "C3"), results["backends"]):
        runs = sorted((r for r in results["runs"] if r["backend"] == backend), key=lambda r: r["agents"])
        if not runs:
            continue
        n = [r["agents"] for r in runs]
        label = ra.LABELS[backend]
        a.plot(n, [r["ops_per_s"] for r in runs], marker="o", color=colour, label=f"{label}, all")
        a.plot(n, [r["search"]["ops_per_s"] for r in runs], marker="x", ls=":", color=colour, label=f"{label}, search")
        for kind, marker in zip(KINDS, ("o", "s")):
            for q, ls in (("p50", "-"), ("p99", "--")):
                b.plot(n, [r[kind][q] for r in runs], marker=marker, ls=ls, color=colour, label=f"{label}, {kind} {q}")
        extra = node if backend in ra.FLAVOURS else 0.0
        c.plot(n, [(r["rss_mib"] + extra) / 1024 for r in runs], marker="o", color=colour, label=f"{label}, RSS")
        c.plot(
            n, [(r["pss_mib"] + extra) / 1024 for r in runs], marker="x", ls=":", color=colour, label=f"{label}, PSS"
        )
    c.axhline(results["mem_total_mib"] / 1024, color="k", lw=0.8, label="MemTotal")
    for ax, title, ylabel in (
        (a, "throughput", "operations/s (all agents)"),
        (b, "latency per operation", "ms"),
        (c, "memory (agents + node)", "GiB"),
    ):
        ax.set_xscale("log", base=2)
        counts = sorted({r["agents"] for r in results["runs"]})
        ax.set_xticks(counts, [str(n) for n in counts])
        ax.set_xlabel("agents at once")
        ax.set_title(title)
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    b.set_yscale("log")
    c.set_yscale("log")
    fig.suptitle(
        f"Many agents at once, {results['workspaces']:,} workspaces x {CHUNKS} chunks, through ReMe's file-store "
        f"interface ({results['environment']})",
        fontsize=8,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"plot written to {path}", file=sys.stderr)


# ------------------------------------------------------------------------------------------ main


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--scale", type=float, default=1.0, help="share of the 1,000 workspaces (0.1: 100, 10k chunks)")
    p.add_argument("--agents", default="1,8,32,64", help="agent counts, each run in turn")
    p.add_argument("--backends", default="opensearch-3,faiss", help=f"reme-es flavour(s) and/or faiss: {ra.FLAVOURS}")
    p.add_argument("--seconds", type=float, default=20.0, help="measured seconds per run")
    p.add_argument("--warmup", type=float, default=5.0, help="seconds not counted at the start of a run")
    p.add_argument("--writes", type=float, default=0.2, help="share of an agent's operations that are writes")
    p.add_argument("--es-processes", type=int, default=1, help="processes the reme-es agents are spread over")
    p.add_argument("--url", default=None, help="node to measure (default: start managed node agents-many)")
    p.add_argument("--port", type=int, default=9490, help="port of the managed node")
    p.add_argument("--heap", default="1g", help="heap of the managed node")
    p.add_argument("--prefix", default=PREFIX)
    p.add_argument("--streams", type=int, default=4, help="workspaces loading at once")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for a run's processes to be ready")
    p.add_argument("--keep", action="store_true", help="keep the index set at the end")
    p.add_argument("--json", default=str(RESULTS / "many_agents.json"))
    p.add_argument("--png", default=str(PLOTS / "many_agents.png"))
    args = p.parse_args()
    counts = sorted({int(a) for a in args.agents.split(",")})
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = [b for b in backends if b not in (*ra.FLAVOURS, "faiss")]
    if unknown:
        raise SystemExit(f"unknown backend(s) {unknown}: {', '.join(ra.FLAVOURS)} or faiss")
    workspaces = max(1, round(WORKSPACES * args.scale))
    if max(counts) > workspaces:
        raise SystemExit(f"{max(counts)} agents need as many workspaces; --scale {args.scale} gives {workspaces}")
    report = Report()
    report(f"command: python -m bench.perf.many_agents {' '.join(sys.argv[1:])}")
    results: dict = {"args": vars(args), "workspaces": workspaces, "backends": backends, "runs": []}
    results["mem_total_mib"] = mem_total_mib()
    flavours = [b for b in backends if b in ra.FLAVOURS]
    url, started = args.url, False
    if flavours and url is None:
        url, started = start_node(args.port, args.heap), True
    root = Path(tempfile.mkdtemp(prefix="reme-many-agents-"))
    try:
        env = f"reme-es {git_commit()} | python {platform.python_version()} | {os.cpu_count()} cpu"
        if flavours:
            if len(flavours) > 1:
                raise SystemExit("one reme-es flavour per run (one node)")
            report(f"loading {workspaces:,} workspaces ({workspaces * CHUNKS:,} chunks) into {url} ...")
            results["load"] = asyncio.run(
                load_set(url, flavours[0], args.prefix, workspaces, root, args.streams, report)
            )
            report(
                f"loaded in {results['load']['load_s']:.1f} s, merging {results['load']['merge_s']:.1f} s after, "
                f"k-NN width measured in {results['load'].get('calibrate_s', 0.0):.1f} s"
            )
            env = f"{results['load']['engine']} at {url} | {env}"
        results["environment"] = f"{env} | {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}"
        report(results["environment"])
        for n in counts:
            for backend in backends:
                report(f"# {ra.LABELS[backend]}: {n} agents ...")
                run = run_count(backend, n, args, url if backend in ra.FLAVOURS else None, root)
                results["runs"].append(run)
                report(
                    f"  {run['ops_per_s']:.1f} ops/s, search p50 {fmt(run['search']['p50'])} ms, write p50 "
                    f"{fmt(run['write']['p50'])} ms, {run['processes']} processes ({run['start_s']:.1f} s to start), "
                    f"RSS {run['rss_mib']:,.0f} MiB" + (f"; errors: {run['errors']}" if run["errors"] else "")
                )
                if backend in ra.FLAVOURS:
                    results["node_rss_mib"] = node_rss_mib(url)
                    asyncio.run(with_raw(url, lambda raw: wait_merges(raw, args.prefix)))
        if 1 not in counts and flavours:  # the per-agent RSS of reme-es: one agent alone in its process
            report("# reme-es: one agent alone in its process, for its RSS ...")
            probe = argparse.Namespace(**{**vars(args), "seconds": 5.0, "warmup": 1.0, "es_processes": 1})
            results["runs"].append(run_count(flavours[0], 1, probe, url, root) | {"probe": True})
        results["extrapolation"] = extrapolation(results)
        report(tables(results))
        plot(results, Path(args.png))
    finally:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=1, default=float))
        report.save(str(RESULTS / "many_agents.txt"), "many_agents", "")
        if flavours and url and not args.keep:
            try:
                asyncio.run(with_raw(url, lambda raw: drop_prefix(raw, args.prefix)))
            except Exception as exc:  # noqa: BLE001 - the node may be gone
                print(f"could not drop {args.prefix}: {exc!r}", file=sys.stderr)
        if started:
            stop_node()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
