"""What ReMe's own chunkers cost `reme-es sync`: wall time of a first sync, built-in against ReMe's chunkers.

    python -m bench.perf.chunkers                           # 1,000 generated files, node at :9200, 3 runs each
    python -m bench.perf.chunkers --files 500 --runs 5 --hosts http://127.0.0.1:9250

The workspace comes from bench/perf/sync.py's generator (front matter, 10 `##` sections, wikilinks). Each run syncs it
from scratch into a fresh prefix, alternating `--chunker builtin` and `--chunker reme`, and drops the prefix with
`reme-es drop --yes`; medians of the runs are printed with the chunk counts. Needs reme-ai for `reme`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench.perf.sync import generate


def _cli(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "REME_ES_HOME": str(home)}
    cmd = [sys.executable, "-m", "reme_es.cli", *args]
    return subprocess.run(cmd, check=False, capture_output=True, text=True, env=env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hosts", default=os.environ.get("REME_ES_BENCH_HOST", "http://127.0.0.1:9200"))
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    host = args.hosts.split(",")[0].rstrip("/")
    seconds: dict[str, list[float]] = {"builtin": [], "reme": []}
    chunks: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="reme-es-bench-") as tmp:
        workspace, home = Path(tmp) / "ws", Path(tmp) / "home"
        generate(workspace, args.files)
        for _ in range(args.runs):
            for chunker, runs in seconds.items():
                prefix = f"bench-chunkers-{uuid.uuid4().hex[:8]}"
                started = time.perf_counter()
                out = _cli(
                    "sync",
                    str(workspace),
                    "--chunker",
                    chunker,
                    "--json",
                    "--hosts",
                    host,
                    "--index-prefix",
                    prefix,
                    home=home,
                )
                runs.append(time.perf_counter() - started)
                _cli("drop", "--yes", "--hosts", host, "--index-prefix", prefix, home=home)
                if out.returncode:
                    raise SystemExit(f"sync --chunker {chunker} failed ({out.returncode}): {out.stderr[-2000:]}")
                chunks[chunker] = json.loads(out.stdout.strip().splitlines()[-1])["chunks"]
    print(f"{args.files} files at {host}, {os.cpu_count()} CPUs, {args.runs} runs each")
    print("chunker | chunks | first sync s (median) | runs")
    for chunker, runs in seconds.items():
        print(f"{chunker} | {chunks[chunker]} | {statistics.median(runs):.1f} | {', '.join(f'{s:.1f}' for s in runs)}")


if __name__ == "__main__":
    main()
