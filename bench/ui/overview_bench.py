"""`reme-es ui`'s own cost: the overview of a set of many workspaces, and the search page against the search it runs.

    python -m bench.ui.overview_bench --url http://127.0.0.1:9200 [--workspaces 1000] [--runs 5] [--queries 20]

Writes `--workspaces` workspaces of two files (two chunks each, no vectors) into a set of its own, then:
  * the overview page (`GET /`, two aggregations in one `_msearch`, rendered) `--runs` times: median and worst ms
    (issue 48's target: under 1 s at 1,000 workspaces);
  * for `--queries` keyword questions, the search's own time (`MemoryStore.search`) and the search page's time
    (`GET /w/<ws>/search`: the same search explained, with its requests recorded, rendered): medians and the page's
    overhead in % (target: at most 20%).
The app runs in-process (Starlette's test client, no socket); the set is dropped afterwards. Timings are only
meaningful on a quiet machine.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid

from reme_es.adapters.dialect import ClientSettings
from reme_es.store.connect import open_store
from reme_es.testing.data import chunk, file_with

WORDS = "memory search index shard replica vector keyword fusion note agent session release deploy".split()
QUERIES = [f"{a} {b}" for a in WORDS[:5] for b in WORDS[5:9]]


async def _write(url: str, prefix: str, workspaces: int) -> None:
    gate = asyncio.Semaphore(8)

    async def one(i: int) -> None:
        async with gate:
            store = await open_store(ClientSettings([url]), prefix, workspace=f"ws-{i:04d}")
            try:
                files = []
                for n in range(2):
                    path = f"notes/{n}.md"
                    texts = [
                        f"{WORDS[(i + n + k) % len(WORDS)]} {WORDS[(i * 7 + k) % len(WORDS)]} note {i}" for k in (0, 1)
                    ]
                    files.append(file_with(path, [chunk(path, t, start=1 + 2 * k) for k, t in enumerate(texts)]))
                await store.upsert(files, refresh=False)
            finally:
                await store.close()

    await (await open_store(ClientSettings([url]), prefix)).close()  # create the set once, before the writers race to
    await asyncio.gather(*(one(i) for i in range(workspaces)))


async def _explained(store, q: str) -> dict:
    from reme_es.core.models import SearchFilter
    from reme_es.ui import data

    return await data.search(store, q, None, "keyword", 10, SearchFilter())


def _ms(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--workspaces", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--queries", type=int, default=20)
    args = parser.parse_args()
    from starlette.testclient import TestClient

    from reme_es.cli.app import _settings
    from reme_es.ui.app import COOKIE, UiConfig, build_app

    prefix = f"bench-ui-{uuid.uuid4().hex[:6]}"
    asyncio.run(_write(args.url, prefix, args.workspaces))
    settings = _settings(None, None, hosts=args.url, index_prefix=prefix)
    config = UiConfig(settings=settings, client=(ClientSettings([args.url]), "auto"), prefix=prefix, token="bench")
    try:
        with TestClient(build_app(config)) as client:
            client.cookies.set(COOKIE, "bench")
            client.get("/")  # warm: the store opens, the client connects
            overview = [_ms(lambda: client.get("/").raise_for_status()) for _ in range(args.runs)]
            rows = client.get("/").text.count("<tr data-ws=")
            median, worst = statistics.median(overview), max(overview)
            print(f"overview of {rows} workspaces: median {median:.0f} ms, worst {worst:.0f} ms")
            store = client.portal.call(config.store, "ws-0000")
            own, explained, page = [], [], []
            for q in (QUERIES * 10)[: args.queries]:
                own.append(_ms(lambda q=q: client.portal.call(store.search, q, None, 10, None, "keyword")))
                explained.append(_ms(lambda q=q: client.portal.call(_explained, store, q)))
                page.append(_ms(lambda q=q: client.get(f"/w/ws-0000/search?q={q}&mode=keyword").raise_for_status()))
            o, e, p = (statistics.median(x) for x in (own, explained, page))
            print(
                f"search (median of {len(own)}): own {o:.1f} ms; explained with its requests recorded {e:.1f} ms "
                f"(+{100 * (e - o) / o:.0f}%); the page {p:.1f} ms (+{100 * (p - o) / o:.0f}%, with HTTP and rendering)"
            )
    finally:

        async def drop() -> None:
            store = await open_store(ClientSettings([args.url]), prefix, create=False)
            try:
                await store.drop()
            finally:
                await store.close()

        asyncio.run(drop())


if __name__ == "__main__":
    main()
