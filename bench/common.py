"""Shared helpers of the bench scripts: connect, raw requests, timing, summaries, tables, synthetic data.

The bench scripts print tables; they are not tests. Each script uses its own index prefix, removes what a
killed earlier run left behind under it, and drops it again at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

import numpy as np

from reme_es.adapters.dialect import ClientSettings, Dialect
from reme_es.core.options import IndexOptions
from reme_es.store import MemoryStore
from reme_es.store.connect import detect_engine, make_dialect, open_store

DEFAULT_URL = "http://127.0.0.1:9200"
ROOT = Path(__file__).resolve().parents[1]  # the checkout
RESULTS = ROOT / "bench" / "results"  # result files (git-ignored)
PLOTS = ROOT / "docs" / "img"  # plots, where the docs' pages show them
_JSON = {"accept": "application/json", "content-type": "application/json"}
_NDJSON = {"accept": "application/json", "content-type": "application/x-ndjson"}


# ------------------------------------------------------------------------------------------ setup


def module_command(module: str) -> tuple[list[str], dict[str, str]]:
    """The command and environment that run a bench module (`bench.perf.x`) in a worker process, from any folder."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return [sys.executable, "-m", module], env


def parser(description: str, prefix: str) -> argparse.ArgumentParser:
    """An argument parser with the options every bench script takes (--url, --prefix, --out)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--url", default=DEFAULT_URL, help=f"node to measure (default {DEFAULT_URL}); engine is detected")
    p.add_argument("--prefix", default=prefix, help=f"index prefix of this script (default {prefix})")
    p.add_argument(
        "--out", default=None, help="file for the printed tables (default bench/results/<script>-<engine>.txt)"
    )
    return p


async def connect(url: str, prefix: str, dims: int | None = None, **store_kwargs: Any) -> MemoryStore:
    """A connected MemoryStore on a fresh prefix (leftovers of a killed run under it are removed first)."""
    settings = ClientSettings(hosts=[url], timeout=600.0, max_retries=2)
    engine = await detect_engine(settings)
    dialect = make_dialect(engine, settings)
    try:
        await drop_prefix(Raw(dialect), prefix)
    finally:
        await dialect.transport.close()
    return await open_store(settings, prefix, engine=engine, options=IndexOptions(dims=dims), **store_kwargs)


async def drop_prefix(raw: Raw, prefix: str) -> None:
    """Delete every index and search pipeline whose name starts with `prefix-` (by exact name, no wildcards)."""
    for row in await raw.request(
        "GET", f"/_cat/indices/{prefix}-*", params={"format": "json", "expand_wildcards": "all"}
    ):
        await raw.request("DELETE", f"/{row['index']}")
    if raw.engine == "opensearch":
        try:
            pipelines = await raw.request("GET", "/_search/pipeline")
        except Exception:  # noqa: BLE001 - no search pipelines on this node
            pipelines = {}
        for name in pipelines:
            if name.startswith(f"{prefix}-"):
                await raw.request("DELETE", f"/_search/pipeline/{name}")


class Raw:
    """Requests sent with the store's own client, bypassing the store and the dialect (the baseline)."""

    def __init__(self, dialect: Dialect):
        self.engine = dialect.engine
        self.client = dialect.transport.client
        self.retries = 0

    async def request(self, method: str, path: str, body: Any = None, params: dict | None = None) -> Any:
        """One request; the decoded response body. A 429 (a shared node's circuit breaker) is retried up to 5 times."""
        for attempt in range(6):
            try:
                return await self._send(method, path, body, params)
            except Exception as exc:
                if getattr(exc, "status_code", None) != 429 or attempt == 5:
                    raise
                self.retries += 1
                await asyncio.sleep(0.5 * 2**attempt)

    async def _send(self, method: str, path: str, body: Any, params: dict | None) -> Any:
        if self.engine == "opensearch":
            return await self.client.transport.perform_request(method, path, params=params, body=body)
        headers = _NDJSON if isinstance(body, (bytes, str)) else _JSON
        resp = await self.client.perform_request(method, path, params=params, headers=headers, body=body)
        return resp.body


def environment(store: MemoryStore, url: str) -> str:
    """One line naming what was measured, on what, and when."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).parent,
            check=False,
        ).stdout.strip()
    except OSError:
        commit = "?"
    caps = store.caps
    return (
        f"{caps.engine} {caps.version} at {url} | reme-es {commit or '?'} | python {platform.python_version()} | "
        f"{os.cpu_count()} cpu | {dt.datetime.now().isoformat(timespec='seconds')}"
    )


# ----------------------------------------------------------------------------------------- timing


class Stopwatch:
    """Wall (perf_counter) and client CPU (process_time) seconds of a block."""

    def __enter__(self) -> Self:
        self.wall = self.cpu = 0.0
        self._w, self._c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._w
        self.cpu = time.process_time() - self._c


def run_report(tables: Any, module: str, out: str) -> str:
    """Run `tables` (a coroutine answering the report's text), add the run time and the command, print the report and
    write it to `out`."""
    started = time.perf_counter()
    text = asyncio.run(tables)
    command = " ".join([f"python -m {module}", *sys.argv[1:]])
    text += f"\n\nRun time {time.perf_counter() - started:.0f} s (`{command}`).\n"
    print(text)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(text)
    return text


def median(values: Sequence[float]) -> float:
    """The median (nan for no values)."""
    return percentile(values, 50)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile with linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return math.nan
    return float(np.percentile(np.asarray(values, dtype=float), q))


# ----------------------------------------------------------------------------------------- tables


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None) -> str:
    """A pipe table; numbers right-aligned, floats as given (format them before)."""
    cells = [[str(h) for h in headers]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    numeric = [all(_is_number(r[i]) for r in cells[1:]) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        return "| " + " | ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(row, widths, numeric)) + " |"

    out = [
        line(cells[0]),
        "|" + "|".join(("-" * (w + 1) + ":") if n else ("-" * (w + 2)) for w, n in zip(widths, numeric)) + "|",
    ]
    out += [line(r) for r in cells[1:]]
    return "\n".join(([f"\n{title}"] if title else []) + out)


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return "-" if math.isnan(v) else f"{v:.3f}"
    return str(v)


def _is_number(s: str) -> bool:
    try:
        float(s.replace(",", "").rstrip("%x"))
    except ValueError:
        return s == "-"
    return True


class Report:
    """Prints as it goes and keeps what it printed for bench/results."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, text: str = "") -> None:
        print(text, flush=True)
        self.lines.append(text)

    def save(self, out: str | None, script: str, engine: str) -> Path:
        """Write everything printed to `out` (default bench/results/<script>-<engine>.txt)."""
        path = Path(out) if out else RESULTS / f"{script}-{engine}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(self.lines) + "\n")
        print(f"\nsaved to {path}", file=sys.stderr)
        return path


# ----------------------------------------------------------------------------------- synthetic data


def vocabulary(size: int, rng: np.random.Generator) -> list[str]:
    """`size` distinct pronounceable pseudo-words (2-4 syllables)."""
    onsets = ["b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z", "br", "st", "tr"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ou"]
    codas = ["", "", "n", "r", "s", "l", "x"]
    words: dict[str, None] = {}
    while len(words) < size:
        n = int(rng.integers(2, 5))
        w = "".join(onsets[rng.integers(len(onsets))] + vowels[rng.integers(len(vowels))] for _ in range(n))
        words[w + codas[rng.integers(len(codas))]] = None
    return list(words)


class TextGenerator:
    """Chunks of Zipf-distributed words from a fixed vocabulary (exponent ~1.1, like natural text)."""

    def __init__(self, vocab_size: int = 20_000, seed: int = 7, exponent: float = 1.1):
        self.rng = np.random.default_rng(seed)
        self.words = np.asarray(vocabulary(vocab_size, self.rng), dtype=object)
        weights = 1.0 / np.arange(1, vocab_size + 1) ** exponent
        self.p = weights / weights.sum()

    def texts(self, n: int, words: int = 100) -> list[str]:
        """`n` texts of about `words` words, with a sentence break every ~15 words."""
        ids = self.rng.choice(len(self.words), size=(n, words), p=self.p)
        out = []
        for row in self.words[ids]:
            parts = list(row)
            for i in range(14, len(parts), 15):
                parts[i] += " ."
            out.append(" ".join(parts))
        return out

    def queries(self, n: int, lo: int = 2, hi: int = 4) -> list[str]:
        """`n` queries of lo..hi words drawn from the mid-frequency band (ranks 50-5,000)."""
        band = self.words[50:5000]
        return [" ".join(self.rng.choice(band, size=int(self.rng.integers(lo, hi + 1)))) for _ in range(n)]

    def vectors(self, n: int, dims: int) -> np.ndarray:
        """`n` random unit vectors (float32)."""
        v = self.rng.standard_normal((n, dims), dtype=np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        return v


def mib(nbytes: float) -> str:
    """Bytes as MiB with one decimal."""
    return f"{nbytes / (1 << 20):.1f}"
