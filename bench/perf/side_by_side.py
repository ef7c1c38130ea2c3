"""Issue 40's side-by-side tables in one command: every script they come from, run in turn, then one report.

    ./run bench-perf                       # installs, then two runs of everything below (~80 min on 2 cores)
    ./run bench-perf --runs 1 --quick      # 10k chunks, short agent runs: a smoke of the whole chain (~10 min)
    python -m bench.perf.side_by_side --report bench/results/side_by_side   # the report again from saved runs

One run is, one script after the other, each on nodes of its own (the managed node a user gets, 512 MiB heap):
  hash, topics   bench/compare/reme_backends.py: ReMe's `faiss` store, reme-es on OpenSearch 3 and on Elasticsearch 9,
                 100k chunks through ReMe's file-store interface (ingest to steady state, keyword, vector, filtered,
                 ReMe's search job, recall@10, restart, the same queries sent raw to the same node)
  breakdown      bench/perf/search_cost.py --meter breakdown at 10k: ReMe's keyword call against a bare `match`
                 returning the same sources, on the same client (where the client's milliseconds go)
  agents         bench/perf/many_agents.py: 1, 8, 32 and 64 agents on a 1,000-workspace set against as many faiss
                 processes (throughput, p50/p99, RSS)
  memorie        bench/memorie/backends.mjs at 100k (hash256, shapes topics and zipf): Memorie's stores against FTS5 +
                 brute force (add, keyword, bulk load, vector, recall@10); needs `node`, memorie/dist and
                 bench/memorie/node_modules (`./run bench-perf` builds them)

Each run's files go to `<out>/run<N>/` (N after the runs already there); the report (`<out>/report.md`, also
printed) puts every run there side by side, a cell per run ("a / b"), with issue 40's targets and whether each run
met them. How busy the CPUs were in the 3 s before each step (and the load average) is printed and kept: a figure
is only worth quoting from a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.common import RESULTS, ROOT, module_command
from bench.compare.reme_backends import start_node, stop_node
from bench.compare.reme_report import ingest_s

FULL = {"size": "100k", "memorie": "100000", "agents": "1,8,32,64", "seconds": "20", "warmup": "5", "queries": "40"}
QUICK = {"size": "10k", "memorie": "10000", "agents": "1,8", "seconds": "5", "warmup": "2", "queries": "20"}
STEPS = ("hash", "topics", "breakdown", "agents", "memorie")
HEAP = "512m"  # the managed node's default heap: what a user gets


def python_step(module: str, argv: list[str]) -> tuple[list[str], dict[str, str]]:
    cmd, env = module_command(module)
    return [*cmd, *argv], env


def cpu_busy(seconds: float = 3.0) -> float:
    """How busy the machine's CPUs were over the next `seconds` (0-1, from /proc/stat): is it quiet right now?"""

    def sample() -> tuple[int, int]:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return sum(fields), fields[3] + fields[4]  # all, idle + iowait

    total0, idle0 = sample()
    time.sleep(seconds)
    total1, idle1 = sample()
    return 1 - (idle1 - idle0) / max(1, total1 - total0)


def run_step(name: str, cmd: list[str], env: dict[str, str] | None, log: Path) -> dict:
    """Run one script, its output both shown and kept; what it cost and how busy the machine was before it."""
    load, busy = os.getloadavg()[0], cpu_busy()
    print(f"\n=== {name}: CPU {busy:.0%} busy, load average {load:.2f} before; {' '.join(cmd)}", flush=True)
    started = time.monotonic()
    with log.open("w") as sink:
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            sink.write(line)
        status = proc.wait()
    spent = time.monotonic() - started
    if status != 0:
        raise SystemExit(f"{name} failed (exit {status}); its output is in {log}")
    return {"step": name, "load_before": load, "busy_before": busy, "seconds": spent}


def one_run(args, run_dir: Path) -> None:
    p = QUICK if args.quick else FULL
    run_dir.mkdir(parents=True, exist_ok=True)
    steps: list[dict] = []
    for workload in ("hash", "topics"):
        if workload not in args.steps:
            continue
        cmd, env = python_step(
            "bench.compare.reme_backends",
            ["--sizes", p["size"], "--backends", args.backends, "--workload", workload, "--queries", p["queries"]]
            + ["--heap", HEAP, "--json", str(run_dir / f"{workload}.json"), "--png", str(run_dir / "reme.png")],
        )
        steps.append(run_step(workload, cmd, env, run_dir / f"{workload}.log"))
    if "agents" in args.steps:
        cmd, env = python_step(
            "bench.perf.many_agents",
            ["--agents", p["agents"], "--seconds", p["seconds"], "--warmup", p["warmup"], "--heap", HEAP]
            + ["--scale", "0.1" if args.quick else "1", "--json", str(run_dir / "agents.json")]
            + ["--png", str(run_dir / "agents.png")],
        )
        steps.append(run_step("agents", cmd, env, run_dir / "agents.log"))
    if {"breakdown", "memorie"} & set(args.steps):
        url = start_node("opensearch-3", HEAP)
        try:
            if "breakdown" in args.steps:
                cmd, env = python_step(
                    "bench.perf.search_cost",
                    ["--meter", "breakdown", "--url", url, "--sizes", "10k" if not args.quick else "2k"]
                    + ["--out", str(run_dir / "breakdown.txt"), "--json", str(run_dir / "breakdown.json")],
                )
                steps.append(run_step("breakdown", cmd, env, run_dir / "breakdown.log"))
            if "memorie" in args.steps:
                node = shutil.which("node")
                if node is None:
                    raise SystemExit(
                        "memorie: no `node` on PATH (Node 20 or later); ./run bench-perf installs the rest"
                    )
                cmd = [node, "bench/memorie/backends.mjs", "--url", url, "--sizes", p["memorie"], "--sets", "hash256"]
                cmd += ["--shapes", "topics,zipf", "--out", str(run_dir / "memorie.json")]
                steps.append(run_step("memorie", cmd, None, run_dir / "memorie.log"))
        finally:
            stop_node("opensearch-3")
    (run_dir / "steps.json").write_text(json.dumps(steps, indent=1))


# ------------------------------------------------------------------------------------------- report


def load(path: Path):
    return json.loads(path.read_text()) if path.exists() else None


def cells(values: list[float | None], fmt: str = "{:.2f}") -> str:
    return " / ".join("-" if v is None else fmt.format(v) for v in values)


def col(rows: list, get, fmt: str = "{:.2f}") -> str:
    """One table cell: `get` of each run's row ("-" where a run has none), the runs side by side."""
    return cells([get(r) if r else None for r in rows], fmt)


def p50s(rows: list, mode: str, kind: str = "latency") -> list[float | None]:
    """The p50 of one mode (`latency`: through ReMe's interface, `raw`: sent straight to the node) of each run's row."""
    return [r[kind][mode]["p50"] if r and mode in r.get(kind, {}) else None for r in rows]


def ingests(rows: list) -> list[float | None]:
    """Ingest to steady state of each run's row (bench/compare/reme_report.py's measure)."""
    return [ingest_s(r) if r else None for r in rows]


def reme_table(runs: list[Path], out: list[str]) -> dict[str, list]:
    """ReMe's interface at 100k, a row per workload and backend; returns the figures the targets need."""
    found: dict[str, list] = {}
    out.append(
        "| workload | backend | ingest to steady state s (x faiss) | keyword | vector | keyword, 1 month "
        "| vector, 1 month | search job | recall@10 | restart s | raw keyword | raw vector |"
    )
    out.append("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for workload in ("hash", "topics"):
        per_run = [{r["backend"]: r for r in (load(d / f"{workload}.json") or [])} for d in runs]
        backends = list(dict.fromkeys(b for rows in per_run for b in rows))
        for backend in backends:
            rows = [rows.get(backend) for rows in per_run]

            def lat(mode: str, rows=rows, kind: str = "latency") -> list[float | None]:
                return p50s(rows, mode, kind)

            ingest = ingests(rows)
            speed = ratio(ingests([rows_.get("faiss") for rows_ in per_run]), ingest)
            has_raw = any(r and "raw" in r for r in rows)
            raw = f"{cells(lat('keyword', kind='raw'))} | {cells(lat('vector', kind='raw'))}" if has_raw else " | "
            out.append(
                f"| {workload} | {backend} | {cells(ingest, '{:.1f}')} ({cells(speed, '{:.2f}x')}) "
                f"| {cells(lat('keyword'))} "
                f"| {cells(lat('vector'))} | {cells(lat('keyword filtered'))} | {cells(lat('vector filtered'))} "
                f"| {cells(lat('search job'))} | {col(rows, lambda r: r.get('recall_at_10'), '{:.3f}')} "
                f"| {col(rows, lambda r: r.get('restart_s'))} | {raw} |"
            )
            found[f"{workload}/{backend}"] = rows
    widths = [
        f"{key}: "
        + " / ".join(
            f"{r['knn_width']['width']:,} ({r['knn_width']['stopped']})" if r and "knn_width" in r else "-"
            for r in rows
        )
        for key, rows in found.items()
        if any(r and "knn_width" in r for r in rows)
    ]
    if widths:
        out.append("")
        out.append("k-NN width each run searched with (why its calibration stopped): " + "; ".join(widths))
    jobs = [
        f"{key}: " + " / ".join(_optimized(r) for r in rows)
        for key, rows in found.items()
        if any(r and "optimize" in r for r in rows)
    ]
    if jobs:
        out.append("")
        out.append(
            "The optimize job after the load (segments, merge s + calibration s, counted in ingest to steady state): "
            + "; ".join(jobs)
        )
    return found


def _optimized(row: dict | None) -> str:
    job = (row or {}).get("optimize")
    if not job:
        return "-"
    return f"{job['segments']}, {job['merge_s']:.1f} + {job.get('calibration_s') or 0:.1f} s"


def agents_table(runs: list[Path], out: list[str]) -> None:
    data = [load(d / "agents.json") for d in runs]
    if not any(data):
        return
    out.append("")
    out.append("| agents | backend | ops/s | search p50 / p99 ms | write p50 / p99 ms | RSS MiB (agents) |")
    out.append("|--:|---|--:|--:|--:|--:|")
    keys = list(dict.fromkeys((r["agents"], r["backend"]) for d in data if d for r in d["runs"]))
    for agents, backend in keys:
        rows = [
            next((r for r in d["runs"] if (r["agents"], r["backend"]) == (agents, backend)), None) if d else None
            for d in data
        ]
        search = f"{col(rows, lambda r: r['search']['p50'])} ; {col(rows, lambda r: r['search']['p99'], '{:.0f}')}"
        write = (
            f"{col(rows, lambda r: r['write']['p50'], '{:.0f}')} ; {col(rows, lambda r: r['write']['p99'], '{:.0f}')}"
        )
        ops = col(rows, lambda r: r["ops_per_s"], "{:.1f}")
        out.append(
            f"| {agents} | {backend} | {ops} | {search} | {write} | {col(rows, lambda r: r['rss_mib'], '{:.0f}')} |"
        )


def memorie_rows(runs: list[Path]) -> list[list[dict]]:
    return [(load(d / "memorie.json") or {}).get("rows", []) for d in runs]


def memorie_table(runs: list[Path], out: list[str]) -> None:
    data = memorie_rows(runs)
    if not any(data):
        return
    out.append("")
    out.append("| shape | memories | backend | add p50 ms | bulk memories/s | keyword | vector topK 50 | recall@10 |")
    out.append("|---|--:|---|--:|--:|--:|--:|--:|")
    keys = list(dict.fromkeys((r["shape"], r["size"], r["backend"].split(" (")[0]) for rows in data for r in rows))
    for shape, size, backend in keys:
        rows = [
            next(
                (r for r in rs if (r["shape"], r["size"], r["backend"].split(" (")[0]) == (shape, size, backend)), None
            )
            for rs in data
        ]
        bulk = col(rows, lambda r: r["loadN"] / r["loadS"] if r["loadS"] else None, "{:,.0f}")
        out.append(
            f"| {shape} | {size:,} | {backend} | {col(rows, lambda r: r['add']['p50'])} | {bulk} "
            f"| {col(rows, lambda r: r['keyword']['p50'])} | {col(rows, lambda r: r['vector']['p50'])} "
            f"| {col(rows, lambda r: r['recall'], '{:.3f}')} |"
        )


def ratio(a: list[float | None], b: list[float | None]) -> list[float | None]:
    return [x / y if x is not None and y else None for x, y in zip(a, b, strict=True)]


def targets_table(runs: list[Path], reme: dict[str, list], out: list[str]) -> None:
    """Issue 40's targets, each run's figure and whether it met the target."""
    out.append("")
    out.append("| item | target | figure per run | met |")
    out.append("|---|---|--:|---|")

    def line(item: str, target: str, values: list[float | None], ok, fmt: str = "{:.2f}") -> None:
        verdict = " / ".join("-" if v is None else ("yes" if ok(v) else "no") for v in values)
        out.append(f"| {item} | {target} | {cells(values, fmt)} | {verdict} |")

    def p50(key: str, mode: str, kind: str = "latency") -> list[float | None]:
        return p50s(reme.get(key, [None] * len(runs)), mode, kind)

    breakdown = [load(d / "breakdown.json") for d in runs]
    bare = [
        b["runs"][0]["calls"]["keyword"]["p50"] / b["runs"][0]["calls"]["bare match"]["p50"]
        if b and b["runs"]
        else None
        for b in breakdown
    ]
    for workload in ("hash", "topics"):
        for flavour in ("opensearch-3", "elasticsearch-9"):
            key = f"{workload}/{flavour}"
            if key not in reme:
                continue
            line(
                f"2 ({workload}, {flavour})",
                "keyword ≤ 1.2x the same request sent raw",
                ratio(p50(key, "keyword"), p50(key, "keyword", "raw")),
                lambda v: v <= 1.2,
            )
            line(
                f"3 ({workload}, {flavour})",
                "vector ≤ 3x faiss",
                ratio(p50(key, "vector"), p50(f"{workload}/faiss", "vector")),
                lambda v: v <= 3,
            )
            line(
                f"3 ({workload}, {flavour})",
                "recall@10 ≥ 0.97",
                [r.get("recall_at_10") if r else None for r in reme[key]],
                lambda v: v >= 0.97,
                "{:.3f}",
            )
            ingest = ingests(reme[key])
            faiss = ingests(reme.get(f"{workload}/faiss", [None] * len(runs)))
            line(
                f"4 ({workload}, {flavour})",
                "ingest to steady state ≥ 0.8x faiss speed",
                ratio(faiss, ingest),
                lambda v: v >= 0.8,
            )
    line("2 (hash 10k, opensearch-3)", "keyword ≤ 1.2x a bare `match`, same sources", bare, lambda v: v <= 1.2)
    data = memorie_rows(runs)
    for shape in ("topics", "zipf"):

        def pick(backend: str, shape: str = shape) -> list[dict | None]:
            return [
                next(
                    (
                        r
                        for r in rs
                        if r["shape"] == shape and r["backend"].startswith(backend) and r["size"] >= 100_000
                    ),
                    None,
                )
                for rs in data
            ]

        es, fts = pick("reme-es"), pick("fts5")
        if not any(es):
            continue
        line(
            f"6 (Memorie, {shape})",
            "keyword ≤ 5x FTS5",
            ratio([r["keyword"]["p50"] if r else None for r in es], [r["keyword"]["p50"] if r else None for r in fts]),
            lambda v: v <= 5,
            "{:.1f}",
        )
        line(
            f"6 (Memorie, {shape})",
            "bulk ≥ 5,000 memories/s",
            [r["loadN"] / r["loadS"] if r else None for r in es],
            lambda v: v >= 5000,
            "{:,.0f}",
        )
        line(f"6 (Memorie, {shape})", "add ≤ 5 ms", [r["add"]["p50"] if r else None for r in es], lambda v: v <= 5)
        line(
            f"6 (Memorie, {shape})",
            "recall@10 ≥ 0.97",
            [r["recall"] if r else None for r in es],
            lambda v: v >= 0.97,
            "{:.3f}",
        )


def report(out_dir: Path) -> str:
    runs = sorted(d for d in out_dir.glob("run*") if d.is_dir())
    if not runs:
        raise SystemExit(f"no runs under {out_dir}: run `python -m bench.perf.side_by_side` first")
    lines = [f"# Side by side: {len(runs)} run(s), a cell per run ({', '.join(d.name for d in runs)})", ""]
    for d in runs:
        steps = load(d / "steps.json") or []
        said = ", ".join(
            f"{s['step']} {s['seconds'] / 60:.1f} min (CPU {s['busy_before']:.0%} busy before)" for s in steps
        )
        lines.append(f"- {d.name}: {said}")
    lines += ["", "## ReMe's file-store interface (p50 ms; limit 50 per branch, ReMe's depth at limit 10)", ""]
    lines += [
        "raw: the same queries sent straight to the same node by the same client, interleaved with reme-es' own",
        "",
    ]
    reme = reme_table(runs, lines)
    lines += ["", "## Many agents at once"]
    agents_table(runs, lines)
    lines += ["", "## Memorie's stores against FTS5 + brute force"]
    memorie_table(runs, lines)
    lines += ["", "## Issue 40's targets"]
    targets_table(runs, reme, lines)
    text = "\n".join(lines) + "\n"
    (out_dir / "report.md").write_text(text)
    return text


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--runs", type=int, default=2, help="how many times to run every step (default 2)")
    p.add_argument("--quick", action="store_true", help="10k chunks, 1 and 8 agents for 5 s, Memorie at 10k")
    p.add_argument("--steps", default=",".join(STEPS), help=f"which steps, any of {','.join(STEPS)}")
    p.add_argument("--backends", default="faiss,opensearch-3,elasticsearch-9", help="backends of the hash/topics steps")
    p.add_argument("--out", default=str(RESULTS / "side_by_side"), help="where the runs and the report go")
    p.add_argument("--report", default=None, metavar="DIR", help="only print the report of the runs saved in DIR")
    args = p.parse_args()
    if args.report:
        print(report(Path(args.report)))
        return
    args.steps = args.steps.split(",")
    unknown = set(args.steps) - set(STEPS)
    if unknown:
        raise SystemExit(f"--steps: unknown {', '.join(sorted(unknown))}: use any of {','.join(STEPS)}")
    out = Path(args.out)
    first = 1 + max((int(d.name[3:]) for d in out.glob("run*") if d.name[3:].isdigit()), default=0)
    for n in range(first, first + args.runs):
        one_run(args, out / f"run{n}")
    print("\n" + report(out))


if __name__ == "__main__":
    main()
