"""Concurrent agents: ReMe's own HTTP service (`reme start`) under 1, 4 and 16 concurrent `search` clients, on ReMe's
faiss store and on reme-es; and `reme-es search` run from 4 processes at once against one node.

    python -m bench.perf.concurrency [--size 30k] [--workload topics] [--backends faiss,opensearch-3] [--clients 1,4,16]
                                     [--seconds 20] [--url opensearch-3=http://127.0.0.1:9200] [--heap 2g]

Per backend: a worker process ingests `--size` chunks of the workload (bench/data/workloads.py) through ReMe's
file-store interface as bench/compare/reme_backends.py does (upsert, dump, reme-es: until the node stops merging), then
serves the Application exactly as `reme start` does (`Application.run_app()`: ReMe's FastAPI service under uvicorn, one
process) on a free port. For each client count, that many asyncio clients each POST `/search` ({query, limit: 10}) one
after the other for `--seconds` seconds (after 5 s of warm-up); throughput is answered searches per second, p50/p95 the
latency each client saw. The clients run in this process (aiohttp), the same for every backend.

`reme-es search` (reme-es backends): 4 processes each run `reme-es search QUERY --mode keyword --limit 10 --json`
`--per-process` times back to back against the reme-es backend's index; per-call wall time (a new Python process
each call, as a shell user runs it) p50/p95 and calls per second over the 4.

Tables are printed and written to bench/results/concurrency.json. The machine's other load falls on every backend
alike only roughly: run it on an idle machine, and compare figures of one run only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import RESULTS, module_command
from bench.compare import reme_backends as rb
from bench.data.workloads import DIMS, SHAPES, Corpus

WORKER, WORKER_ENV = module_command("bench.perf.concurrency")  # a backend's worker process

CLI_PROCESSES = 4


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------------------------ the served worker


def serve(args) -> None:
    """Ingest, then serve ReMe's Application over HTTP as `reme start` does (blocks until terminated)."""
    corpus = rb.set_corpus(Corpus(args.workload))
    ws = Path(args.workdir) / "workspace"
    ws.mkdir(parents=True, exist_ok=True)
    cfg = rb.app_config(ws, args.worker, args.url, args.prefix)
    cfg["service"] = {
        **cfg["service"],
        "host": "127.0.0.1",
        "port": args.port,
        "web_enabled": False,
        "mcp_enabled": False,
    }
    if args.worker in rb.FLAVOURS:  # the search job a reme-es deployment runs (reme_es/reme/README.md)
        search = cfg["jobs"]["search"]
        search["steps"] = [{**step, "backend": "es_search_step"} for step in search["steps"]]

    async def ingest() -> dict:
        import numpy as np

        app = rb.make_app(cfg)
        await app.start()
        fs = rb.file_store(app)
        if args.worker in rb.FLAVOURS:
            await fs.clear()
        scratch = np.lib.format.open_memmap(
            Path(args.workdir) / "v.npy", mode="w+", dtype=np.float32, shape=(args.size, DIMS)
        )
        upsert_s, dump_s = await rb.upsert_all(fs, corpus, args.size, scratch)
        merge_s = await rb.settle(fs) if args.worker in rb.FLAVOURS else 0.0
        await app.close()
        return {"upsert_s": upsert_s, "dump_s": dump_s, "merge_s": merge_s}

    Path(args.result).write_text(json.dumps(asyncio.run(ingest())))
    rb.make_app(cfg).run_app()


# ------------------------------------------------------------------------------------ the clients


async def wait_ready(url: str, proc: subprocess.Popen, result: Path, timeout: float) -> None:
    import aiohttp

    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"the served worker exited with {proc.returncode}")
            if result.exists():
                try:
                    async with session.post(f"{url}/search", json={"query": "ready", "limit": 1}) as resp:
                        if resp.status == 200:
                            return
                except aiohttp.ClientError:
                    pass
            await asyncio.sleep(1.0)
    raise SystemExit(f"the service at {url} did not answer within {timeout:.0f} s")


async def load(url: str, queries: list[str], clients: int, seconds: float, warmup: float = 5.0) -> dict:
    """`clients` concurrent clients searching back to back; throughput and latency after the warm-up."""
    import aiohttp

    from bench.common import percentile

    latencies: list[float] = []
    failures = 0
    start = time.perf_counter()
    measure_from, stop_at = start + warmup, start + warmup + seconds

    async def client(n: int, session) -> None:
        nonlocal failures
        i = n
        while (now := time.perf_counter()) < stop_at:
            q = queries[i % len(queries)]
            i += clients
            async with session.post(f"{url}/search", json={"query": q, "limit": rb.JOB_LIMIT}) as resp:
                body = await resp.json()
            done = time.perf_counter()
            if now >= measure_from:
                if resp.status != 200 or not body.get("success", False):
                    failures += 1
                else:
                    latencies.append((done - now) * 1000)

    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120)) as session:
        await asyncio.gather(*(client(n, session) for n in range(clients)))
    return {
        "clients": clients,
        "qps": len(latencies) / seconds,
        "p50": percentile(latencies, 50),
        "p95": percentile(latencies, 95),
        "n": len(latencies),
        "failed": failures,
    }


def cli_searches(url: str, prefix: str, queries: list[str], per_process: int) -> dict:
    """`reme-es search` from CLI_PROCESSES processes at once, each `per_process` calls back to back."""
    from bench.common import percentile

    script = (
        "import subprocess, sys, time, json\n"
        "out = []\n"
        "for q in json.loads(sys.argv[1]):\n"
        "    t = time.perf_counter()\n"
        "    subprocess.run(sys.argv[2:] + [q], check=True, capture_output=True)\n"
        "    out.append((time.perf_counter() - t) * 1000)\n"
        "print(json.dumps(out))\n"
    )
    cmd = [
        *rb.reme_es_cli(),
        "search",
        "--hosts",
        url,
        "--index-prefix",
        prefix,
        "--mode",
        "keyword",
        "--limit",
        str(rb.JOB_LIMIT),
        "--json",
        "--no-links",
    ]
    t = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, json.dumps(queries[p::CLI_PROCESSES][:per_process]), *cmd],
            stdout=subprocess.PIPE,
            text=True,
        )
        for p in range(CLI_PROCESSES)
    ]
    ms = [v for p in procs for v in json.loads(p.communicate()[0])]
    wall = time.perf_counter() - t
    return {
        "processes": CLI_PROCESSES,
        "calls": len(ms),
        "calls_per_s": len(ms) / wall,
        "p50": percentile(ms, 50),
        "p95": percentile(ms, 95),
    }


# ------------------------------------------------------------------------------------ driver


def run_backend(backend: str, args, url: str | None, work: Path) -> dict:
    port = free_port()
    result = work / f"{backend}-ingest.json"
    prefix = f"{rb.PREFIX}-conc-{backend.replace('.', '')}"
    cmd = [
        *WORKER,
        "--worker",
        backend,
        "--size",
        str(args.size),
        "--workload",
        args.workload,
        "--workdir",
        str(work / backend),
        "--result",
        str(result),
        "--port",
        str(port),
        "--prefix",
        prefix,
    ]
    if url:
        cmd += ["--url", url]
    print(f"# {rb.LABELS[backend]}: ingesting {args.size:,} chunks, then serving on :{port}", file=sys.stderr)
    proc = subprocess.Popen(cmd, env=WORKER_ENV)
    try:
        base = f"http://127.0.0.1:{port}"
        asyncio.run(wait_ready(base, proc, result, args.timeout))
        out = {"backend": backend, "size": args.size, "workload": args.workload, **json.loads(result.read_text())}
        queries = Corpus(args.workload).queries(2000)
        out["service"] = [asyncio.run(load(base, queries, c, args.seconds)) for c in args.clients]
        if backend in rb.FLAVOURS:
            out["cli"] = cli_searches(url, prefix, queries, args.per_process)
        return out
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


def tables(results: list[dict]) -> str:
    from bench.common import table

    rows = [
        [rb.LABELS[r["backend"]], s["clients"], rb.fmt(s["qps"], 1), rb.fmt(s["p50"]), rb.fmt(s["p95"]), s["failed"]]
        for r in results
        for s in r["service"]
    ]
    out = [
        table(
            ["backend", "clients", "searches/s", "p50 ms", "p95 ms", "failed"],
            rows,
            title=f"ReMe's service (`reme start`), search job limit {rb.JOB_LIMIT}, "
            f"{results[0]['size']:,} chunks, workload {results[0]['workload']}",
        )
    ]
    cli = [
        [
            rb.LABELS[r["backend"]],
            r["cli"]["processes"],
            r["cli"]["calls"],
            rb.fmt(r["cli"]["calls_per_s"], 1),
            rb.fmt(r["cli"]["p50"]),
            rb.fmt(r["cli"]["p95"]),
        ]
        for r in results
        if "cli" in r
    ]
    if cli:
        out.append(
            table(
                ["node", "processes", "calls", "calls/s", "p50 ms", "p95 ms"],
                cli,
                title="`reme-es search --mode keyword` from 4 processes at once (a new process per call)",
            )
        )
    return "\n".join(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=rb.parse_size, default=30_000)
    p.add_argument("--workload", default="topics", choices=SHAPES)
    p.add_argument("--backends", default="faiss,opensearch-3")
    p.add_argument("--clients", default="1,4,16")
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--per-process", type=int, default=10, help="`reme-es search` calls per process")
    p.add_argument("--url", action="append", default=[], help="flavour=URL: use this node instead of starting one")
    p.add_argument("--heap", default="2g")
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--json", default=str(RESULTS / "concurrency.json"))
    for hidden in ("--worker", "--workdir", "--result", "--prefix"):
        p.add_argument(hidden, help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        args.url = args.url[0] if args.url else None
        serve(args)
        return
    args.clients = [int(c) for c in args.clients.split(",")]
    urls = dict(u.split("=", 1) for u in args.url)
    results = []
    with tempfile.TemporaryDirectory(prefix="reme-concurrency-") as tmp:
        for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
            url, started = urls.get(backend), False
            if backend in rb.FLAVOURS and not url:
                url, started = rb.start_node(backend, args.heap), True
            try:
                results.append(run_backend(backend, args, url, Path(tmp)))
            finally:
                if started:
                    rb.stop_node(backend)
    print(tables(results))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
