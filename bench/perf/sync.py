"""Benchmark `reme-es sync` against the raw `_bulk` ceiling of the same node.

    python -m bench.perf.sync                         # 1,000 and 10,000 files, ~10 chunks each, node at :9200
    python -m bench.perf.sync --sizes 500 --hosts http://127.0.0.1:9201

For each size: generate a workspace of Markdown files (10 `##` sections of ~700 characters each, so ~10
chunks per file, a few wikilinks), then
  * raw _bulk: the same chunk documents, pre-serialised as NDJSON, posted in 2,000-doc requests into a
    scratch index with the chunks mapping (one connection, no client library): the ceiling for this node;
  * sync: `reme-es sync` in a subprocess (chunking, three indices, links, refresh), docs/s = chunks / wall time;
  * re-run: `reme-es sync` again with nothing changed (walk + stat + one scan of the file index);
  * peak RSS of the sync process (os.wait4 rusage, so each run is measured on its own).
Every index is dropped afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import orjson

from reme_es.adapters.dialect import ClientSettings
from reme_es.adapters.templates import render_index
from reme_es.core.models import date_from_path
from reme_es.core.options import IndexOptions, SyncOptions
from reme_es.store import MemoryStore
from reme_es.store.connect import detect_engine, make_dialect
from reme_es.sync.scan import parse

_VOCABULARY = (
    "agent memory index chunk search vector keyword hybrid ranking fusion note digest daily resource link "
    "embedding segment shard refresh bulk mapping analyzer token query filter path date project atlas retention "
    "policy summary workspace sync watch rename delete update failure retry backoff cluster node alias template"
)
WORDS = _VOCABULARY.split()


def generate(root: Path, files: int, sections: int = 10, seed: int = 7) -> None:
    """Write `files` Markdown files under daily/ and digest/ (deterministic content)."""
    rng = random.Random(seed)
    for i in range(files):
        if i % 2:
            rel = f"daily/2026-{1 + i % 12:02d}-{1 + i % 28:02d}/note-{i:06d}.md"
        else:
            rel = f"digest/topic-{i:06d}.md"
        lines = ["---", f"name: Topic {i}", f"description: generated note {i}", "---", f"# Note {i}", ""]
        for s in range(sections):
            lines.append(f"## Section {s}")
            for _ in range(7):
                lines.append(" ".join(rng.choice(WORDS) for _ in range(14)))
            lines.append(f"See [[digest/topic-{rng.randrange(0, files, 2):06d}.md]].")
            lines.append("")
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines))


def chunk_ndjson(root: Path) -> tuple[list[bytes], int]:
    """The chunk documents sync would write, as pre-serialised `_bulk` bodies of 2,000 docs."""
    bodies, lines, docs = [], [], 0
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root).as_posix()
        for c in parse(rel, path.read_text(), lambda _m: None, SyncOptions().chunk_chars).chunks:
            lines.append(orjson.dumps({"index": {"_id": c.id, "routing": rel}}))
            lines.append(
                orjson.dumps(
                    {
                        "chunk_id": c.id,
                        "path": rel,
                        "date": date_from_path(rel),
                        "start_line": c.start_line,
                        "end_line": c.end_line,
                        "hash": c.hash,
                        "text": c.text,
                        "metadata": {},
                    }
                )
            )
            docs += 1
            if len(lines) >= 4000:
                bodies.append(b"\n".join(lines) + b"\n")
                lines = []
    if lines:
        bodies.append(b"\n".join(lines) + b"\n")
    return bodies, docs


def _http(method: str, url: str, body: bytes | None = None, ctype: str = "application/json") -> dict:
    req = urllib.request.Request(url, data=body, method=method, headers={"Content-Type": ctype})
    with urllib.request.urlopen(req, timeout=300) as resp:
        return json.loads(resp.read() or b"{}")


async def _scratch_body(host: str) -> tuple[dict, str]:
    """The chunks index body for this node, and "engine version"."""
    cs = ClientSettings([host])
    dialect = make_dialect(await detect_engine(cs), cs)
    try:
        caps = await dialect.probe()
        return render_index("chunks", dialect, caps, IndexOptions()), f"{caps.engine} {caps.version}"
    finally:
        await dialect.transport.close()


def raw_bulk(host: str, bodies: list[bytes], docs: int) -> float:
    """Docs/s of posting pre-serialised NDJSON into a scratch index with the chunks mapping."""
    index = f"bench-raw-{uuid.uuid4().hex[:8]}"
    _http("PUT", f"{host}/{index}", json.dumps(asyncio.run(_scratch_body(host))[0]).encode())
    try:
        started = time.perf_counter()
        for body in bodies:
            resp = _http("POST", f"{host}/{index}/_bulk", body, "application/x-ndjson")
            if resp.get("errors"):
                raise SystemExit(f"raw bulk had item errors: {str(resp)[:500]}")
        _http("POST", f"{host}/{index}/_refresh")
        seconds = time.perf_counter() - started
        count = _http("GET", f"{host}/{index}/_count")["count"]
        assert count == docs, (count, docs)
        return docs / seconds
    finally:
        _http("DELETE", f"{host}/{index}")


def _rss_mib(usage) -> int:
    return round(usage.ru_maxrss / 1024) if usage else -1


async def _drop(host: str, prefix: str) -> None:
    cs = ClientSettings([host])
    store = MemoryStore(make_dialect(await detect_engine(cs), cs), prefix)
    try:
        await store.drop()
    finally:
        await store.close()


def bench(size: int, host: str, tmp: Path) -> dict:
    workspace = tmp / f"ws-{size}"
    generate(workspace, size)
    bodies, docs = chunk_ndjson(workspace)
    ceiling = raw_bulk(host, bodies, docs)
    del bodies
    prefix = f"bench-sync-{uuid.uuid4().hex[:8]}"
    try:
        first, wall, usage = _sync_measured(workspace, host, prefix, tmp / "home")
        again, wall_again, _ = _sync_measured(workspace, host, prefix, tmp / "home")
    finally:
        asyncio.run(_drop(host, prefix))
    assert first["added"] == size and first["chunks"] == docs and not first["failed"], first
    assert again["added"] == again["modified"] == again["deleted"] == 0, again
    return {
        "files": size,
        "chunks": docs,
        "raw_bulk_docs_s": round(ceiling),
        "sync_docs_s": round(docs / wall),
        "sync_share": round(docs / wall / ceiling * 100),
        "sync_s": round(wall, 1),
        "rerun_s": round(wall_again, 2),
        "peak_rss_mib": _rss_mib(usage),
    }


def _sync_measured(workspace: Path, host: str, prefix: str, home: Path):
    """Like run_sync, but with the rusage of exactly this child (os.wait4 before Popen reaps it)."""
    cmd = [
        sys.executable,
        "-m",
        "reme_es.cli",
        "sync",
        str(workspace),
        "--chunker",  # the raw baseline's documents come from the built-in chunker
        "builtin",
        "--json",
        "--hosts",
        host,
        "--index-prefix",
        prefix,
    ]
    env = {**os.environ, "REME_ES_HOME": str(home)}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode:
            raise SystemExit(f"sync failed ({proc.returncode}): {err.read().decode()[-2000:]}")
        return json.loads(out.read().decode().strip().splitlines()[-1]), seconds, usage


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hosts", default=os.environ.get("REME_ES_BENCH_HOST", "http://127.0.0.1:9200"))
    ap.add_argument("--sizes", default="1000,10000", help="comma-separated file counts (default 1000,10000)")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON too")
    args = ap.parse_args()
    host = args.hosts.split(",")[0].rstrip("/")
    rows = []
    with tempfile.TemporaryDirectory(prefix="reme-es-bench-") as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            rows.append(bench(size, host, Path(tmp)))
            shutil.rmtree(Path(tmp) / f"ws-{size}", ignore_errors=True)
    print(
        f"node: {asyncio.run(_scratch_body(host))[1]} at {host}; {os.cpu_count()} CPUs; "
        "~10 chunks per file; docs/s = chunk docs per wall-clock second"
    )
    head = [
        "files",
        "chunks",
        "raw _bulk docs/s",
        "sync docs/s",
        "sync % of raw",
        "sync s",
        "no-change re-run s",
        "sync peak RSS MiB",
    ]
    keys = ["files", "chunks", "raw_bulk_docs_s", "sync_docs_s", "sync_share", "sync_s", "rerun_s", "peak_rss_mib"]
    widths = [max(len(h), *(len(str(r[k])) for r in rows)) for h, k in zip(head, keys)]
    print(" | ".join(h.rjust(w) for h, w in zip(head, widths)))
    print("-|-".join("-" * w for w in widths))
    for r in rows:
        print(" | ".join(str(r[k]).rjust(w) for k, w in zip(keys, widths)))
    if args.json:
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
