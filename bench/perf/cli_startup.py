"""How long `reme-es --help` and `reme-es search` take from process start, for two checkouts side by side.

    python -m bench.perf.cli_startup --hosts http://127.0.0.1:9401 --workspace /tmp/ws --index-prefix bench \
        --tree before=/tmp/base --tree after=.

Each `--tree LABEL=PATH` is a checkout whose `reme_es/` runs first on `PYTHONPATH` (same interpreter, same
installed dependencies, so only the package's own code differs). The workspace must be synced into the index set
already (`reme-es sync`). Rounds alternate the trees command by command, so both see the same machine load; the
table gives the median and the spread of wall time and of the process's CPU time (user + system, from `os.wait4`).
Two floors are measured in the same rounds: an empty interpreter, and one that only imports opensearch-py (with
aiohttp and requests, which it imports). Then, from one `python -X importtime` run per tree, the cumulative import
time of the largest packages.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

PACKAGES = (
    "reme_es.cli",
    "reme_es.core.options",
    "reme_es.core.models",
    "reme_es.store",
    "reme_es.adapters.engines",
    "reme_es.sync",
    "reme_es.embeddings",
    "reme_es.server",
    "opensearchpy",
    "aiohttp",
    "requests",
    "pydantic",
    "yaml",
    "click",
    "asyncio",
    "importlib.metadata",
)


def _commands(args) -> dict[str, list[str]]:
    target = ["--hosts", args.hosts, "--index-prefix", args.index_prefix]
    return {
        "--help": ["--help"],
        "search": ["search", args.query, "--limit", "3", "--mode", args.mode, *target],
    }


FLOORS = {"python -c pass": ["-c", "pass"], "python -c 'import opensearchpy'": ["-c", "import opensearchpy"]}


def _run_once(
    tree: Path, argv: list[str], cwd: Path, importtime: bool = False, python: list[str] | None = None
) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds and stderr of one `python -m reme_es.cli ARGV` (or `python PYTHON`) with `tree`
    first on the path."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, *(["-X", "importtime"] if importtime else []), *(python or ["-m", "reme_es.cli", *argv])]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed in {tree}: {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, err


def _imports(stderr: str) -> dict[str, float]:
    """Cumulative import milliseconds of the packages in PACKAGES, from `-X importtime` output."""
    out: dict[str, float] = {}
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|")
        name = name.strip()
        if name in PACKAGES and cumulative.strip().isdigit():
            out[name] = out.get(name, 0.0) + int(cumulative) / 1000
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", required=True, help="LABEL=PATH of a checkout (repeat)")
    parser.add_argument("--hosts", required=True)
    parser.add_argument("--index-prefix", required=True)
    parser.add_argument("--workspace", type=Path, required=True, help="a folder synced into the index set")
    parser.add_argument("--query", default="how does the agent index its memory")
    parser.add_argument("--mode", default="keyword", choices=["keyword", "hybrid", "vector"])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    trees = {label: Path(path).resolve() for label, path in (t.split("=", 1) for t in args.tree)}
    commands = _commands(args)
    samples = {(c, t): [] for c in commands for t in trees} | {(f, "-"): [] for f in FLOORS}
    first = next(iter(trees.values()))
    for tree in trees.values():  # warm the file cache and the bytecode of each tree
        for argv in commands.values():
            _run_once(tree, argv, args.workspace)
    for _ in range(args.rounds):
        for command, argv in commands.items():
            for label, tree in trees.items():
                wall, cpu, _ = _run_once(tree, argv, args.workspace)
                samples[command, label].append((wall, cpu))
        for floor, python in FLOORS.items():
            wall, cpu, _ = _run_once(first, [], args.workspace, python=python)
            samples[floor, "-"].append((wall, cpu))
    load = os.getloadavg()
    print(
        f"{args.rounds} interleaved rounds; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on "
        f"{os.cpu_count()} cores; search: --mode {args.mode} against {args.hosts}"
    )
    print("| command | tree | wall p50 s | wall min-max s | CPU p50 s |")
    print("|---|---|--:|--:|--:|")
    for (command, label), rows in samples.items():
        walls, cpus = [w for w, _ in rows], [c for _, c in rows]
        print(
            f"| {command} | {label} | {statistics.median(walls):.3f} | {min(walls):.3f}-{max(walls):.3f} "
            f"| {statistics.median(cpus):.3f} |"
        )
    print("\ncumulative import ms (one -X importtime run of `search` per tree)")
    search = commands["search"]
    found = {label: _imports(_run_once(tree, search, args.workspace, True)[2]) for label, tree in trees.items()}
    print("| package | " + " | ".join(trees) + " |")
    print("|---|" + "--:|" * len(trees))
    for name in PACKAGES:
        cells = [f"{found[label][name]:.0f}" if name in found[label] else "-" for label in trees]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
