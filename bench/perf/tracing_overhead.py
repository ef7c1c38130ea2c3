"""What tracing costs a keyword search: p50 with reme-es' instrumentation and no OpenTelemetry SDK configured (what a
user gets by default), against the same searches with the instrumentation taken out, and with an SDK recording every
span to memory (for scale), in one run.

    python -m bench.perf.tracing_overhead --url http://127.0.0.1:9200 [--chunks 2000] [--queries 300] [--rounds 5]

`off` replaces the memory-operation span, the engine-request span and the metric recording with no-ops (what reme-es
was before them); `api` is reme-es as shipped with no SDK (non-recording spans, no-op instruments); `sdk` sets an SDK
tracer and meter provider (in-memory exporter and reader) and so comes last (a global provider is set once). `off` and
`api` alternate query by query, `--rounds` times over the queries after `--warmup`, so the machine's drift falls on
both alike; p50/p95 are over every search of a variant. The load is `--chunks` chunks of generated 60-word notes in
one workspace of the set `--prefix` (dropped at the end unless `--keep`). Timing figures from a busy machine are not
results: run it on a quiet one.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import statistics
import time
from collections.abc import Iterator
from typing import Any

from reme_es.adapters.dialect import ClientSettings
from reme_es.core import telemetry
from reme_es.core.models import Chunk, FileDoc
from reme_es.store import MemoryStore
from reme_es.store.connect import open_store

WORDS = "agent memory index search shard snapshot vector keyword team workspace note plan tool user answer".split()


class _NoSpan:
    def set_attribute(self, *args: Any) -> None:
        pass


class _NoRequest:
    def __init__(self, *args: Any) -> None:
        pass

    def end(self, error: BaseException | None = None) -> None:
        pass

    def retried(self) -> None:
        pass


@contextlib.contextmanager
def _no_operation(*args: Any, **kwargs: Any) -> Iterator[_NoSpan]:
    yield _NoSpan()


@contextlib.contextmanager
def instrumentation(on: bool) -> Iterator[None]:
    """reme-es as shipped (`on`), or with its spans and metrics replaced by no-ops."""
    if on:
        yield
        return
    import reme_es.adapters.transport as transport_module
    import reme_es.store as store_module

    saved = (store_module.memory_operation, transport_module.EngineRequest, telemetry.record, telemetry.stage)
    store_module.memory_operation = _no_operation  # type: ignore[assignment]
    transport_module.EngineRequest = _NoRequest  # type: ignore[assignment, misc]
    telemetry.record = lambda *a, **k: None  # type: ignore[assignment]
    telemetry.stage = lambda *a, **k: None  # type: ignore[assignment]
    try:
        yield
    finally:
        store_module.memory_operation, transport_module.EngineRequest, telemetry.record, telemetry.stage = saved


async def load(store: MemoryStore, chunks: int, seed: int = 7) -> None:
    rng, files = random.Random(seed), []
    for f in range(max(1, chunks // 20)):
        path = f"daily/{f:05d}.md"
        cs = [Chunk(id=f"{f}-{i}", path=path, text=" ".join(rng.choices(WORDS, k=60))) for i in range(20)]
        files.append((FileDoc(path=path, chunk_ids=[c.id for c in cs]), cs))
        if len(files) == 50:
            await store.upsert(files, refresh=False)
            files = []
    if files:
        await store.upsert(files, refresh=False)
    await store.refresh()


async def timed(store: MemoryStore, query: str) -> float:
    started = time.perf_counter()
    await store.keyword_search(query, 10)
    return (time.perf_counter() - started) * 1000


async def measure(store: MemoryStore, queries: list[str], rounds: int, warmup: int) -> dict[str, list[float]]:
    """ms per search of `off` and `api`, alternating query by query."""
    out: dict[str, list[float]] = {"off": [], "api": []}
    for q in queries[:warmup]:
        await timed(store, q)
    for r in range(rounds):
        for n, q in enumerate(queries):
            order = ("off", "api") if (n + r) % 2 == 0 else ("api", "off")
            for variant in order:
                with instrumentation(variant == "api"):
                    out[variant].append(await timed(store, q))
    return out


async def with_sdk(store: MemoryStore, queries: list[str]) -> list[float]:
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
    return [await timed(store, q) for q in queries]


def micro(n: int = 20000) -> float:
    """µs of reme-es' instrumentation of one keyword search (one operation span, one request span, their metrics)
    with no SDK, timed without a server: the part of `api - off` that is not the machine's noise."""
    from reme_es.adapters.traced import EngineRequest, server_of

    server = server_of(("http://127.0.0.1:9200",))
    started = time.perf_counter()
    for _ in range(n):
        with telemetry.memory_operation("search_memory", "set/ws", "q") as span:
            EngineRequest("opensearch", "POST", "/set-chunks/_search", server).end()
            span.set_attribute("gen_ai.memory.record.count", 10)
    return (time.perf_counter() - started) / n * 1e6


def row(name: str, ms: list[float]) -> str:
    p95 = statistics.quantiles(ms, n=20)[-1] if len(ms) >= 20 else max(ms)
    return f"{name:<34} {statistics.median(ms):8.3f} {p95:8.3f} {len(ms):6d}"


async def main(args: argparse.Namespace) -> None:
    store = await open_store(ClientSettings([args.url]), args.prefix, workspace="bench")
    try:
        if await store.inspect.count("chunks") < args.chunks:
            await load(store, args.chunks)
        rng = random.Random(11)
        queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(args.queries)]
        ms = await measure(store, queries, args.rounds, args.warmup)
        cost = micro()
        sdk = await with_sdk(store, queries)
        print(f"keyword search, {args.chunks} chunks, {args.queries} queries x {args.rounds} rounds, {store.hosts[0]}")
        print(f"{'variant':<34} {'p50 ms':>8} {'p95 ms':>8} {'n':>6}")
        print(row("off (no instrumentation)", ms["off"]))
        print(row("api (instrumented, no SDK)", ms["api"]))
        print(row("sdk (in-memory exporter)", sdk))
        diff = statistics.median(ms["api"]) - statistics.median(ms["off"])
        print(f"api - off p50: {diff:+.3f} ms ({diff / statistics.median(ms['off']):+.1%})")
        print(f"instrumentation of one search with no SDK, client CPU without a server: {cost:.1f} µs")
    finally:
        if not args.keep:
            await store.drop()
        await store.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--prefix", default="bench-tracing")
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--keep", action="store_true")
    asyncio.run(main(parser.parse_args()))
