"""Per-item bulk failures injected between the real bulk helper and the real node.

`FaultyBulk` replaces the client's `bulk` call: chosen items come back with an injected status (429 for the
first N attempts, or 400 always) and the rest go to the node. It counts every attempt per document id, so the
tests can assert exactly how often Dialect.bulk retried each item.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from types import SimpleNamespace

import orjson
import pytest

from reme_es.adapters import retry
from reme_es.adapters.retry import BULK, RetryPolicy
from reme_es.core.errors import BulkError, BulkItemFailure
from reme_es.core.models import doc_id
from reme_es.store.indices import DEFAULT_WORKSPACE
from reme_es.testing.data import chunk, file_with

from .conftest import chunk_ids, count


class FaultyBulk:
    """Wraps the bulk call of a dialect's client: items whose id is in `faults` fail with (status, for how many
    attempts); the rest go to the node in one real bulk request.

    opensearch-py's helper calls `client.bulk(body=<ndjson>)` and reads a dict; elasticsearch-py's calls
    `client.options().bulk(operations=[<bytes>, ...])` on a copy of the client (itself a copy with the bulk try
    timeout) and reads `.body`.
    """

    def __init__(
        self,
        dialect,
        faults: dict[str, tuple[int, int | None] | tuple[int, int | None, int]],
        workspace: str = DEFAULT_WORKSPACE,
    ):
        self.faults = faults  # id -> (status, failing attempts or None = always[, attempts that pass first])
        self.namespace = f"{workspace}:"  # the store writes ids as `<workspace>:<id>`; faults and attempts use <id>
        self.attempts: Counter[str] = Counter()
        client = dialect.transport.client
        if dialect.engine == "elasticsearch":
            self._wrap_options(client)
        else:
            self.real, client.bulk = client.bulk, self

    def _wrap_options(self, client) -> None:
        """Every copy `client.options(...)` makes (the store's copy with the bulk try timeout, the helper's copy of
        that) bulks through this wrapper."""
        real_options = client.options

        def options(**kwargs):
            copy = real_options(**kwargs)
            self.real, copy.bulk = copy.bulk, self
            self._wrap_options(copy)
            return copy

        client.options = options

    async def __call__(self, *args, body: str | None = None, operations: list | None = None, **kwargs):
        raw = operations if operations is not None else body.splitlines()
        lines = [orjson.loads(x) for x in raw if x.strip()]
        items: list[tuple[str, dict, list[dict]]] = []  # (op, action meta, lines to send)
        i = 0
        while i < len(lines):
            op, meta = next(iter(lines[i].items()))
            meta = {**meta, "_id": meta["_id"].removeprefix(self.namespace)}
            sent = lines[i : i + (1 if op == "delete" else 2)]
            items.append((op, meta, sent))
            i += len(sent)
        passing, injected = [], {}
        for n, (op, meta, sent) in enumerate(items):
            self.attempts[meta["_id"]] += 1
            status, times, passes = (*self.faults.get(meta["_id"], (0, 0)), 0)[:3]
            n_fail = self.attempts[meta["_id"]] - passes
            if status and n_fail > 0 and (times is None or n_fail <= times):
                kind = "es_rejected_execution_exception" if status == 429 else "mapper_parsing_exception"
                injected[n] = {
                    op: {
                        "_index": f"{meta['_index']}-1",
                        "_id": meta["_id"],
                        "status": status,
                        "error": {"type": kind, "reason": f"injected {status} for {meta['_id']}"},
                    }
                }
            else:
                passing.append(sent)
        real_items = []
        if passing:
            if operations is not None:
                resp = await self.real(*args, operations=[orjson.dumps(x) for s in passing for x in s], **kwargs)
                real_items = resp.body["items"]
            else:
                payload = "\n".join(orjson.dumps(x).decode() for sent in passing for x in sent) + "\n"
                real_items = (await self.real(*args, body=payload, **kwargs))["items"]
        it = iter(real_items)
        merged = [injected[n] if n in injected else next(it) for n in range(len(items))]
        result = {"took": 1, "errors": any("error" in next(iter(x.values())) for x in merged), "items": merged}
        return SimpleNamespace(body=result) if operations is not None else result


def _retries(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "reme_es.adapters.retry"]


BULK_POLICY = RetryPolicy.shared(BULK)  # the shared policy (engine_settings.json `retry.bulk`)
RETRY_CAP = BULK_POLICY.tries - 1


class _Backoff:
    """Records the backoff delays (`.sleeps`) instead of waiting them (at the retry cap, 16 s per test)."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []

    async def sleep(self, delay: float) -> None:  # set on the Clock class as a bound method: no clock argument
        self.sleeps.append(round(delay, 6))
        await asyncio.sleep(0)


@pytest.fixture
def no_jitter(monkeypatch) -> _Backoff:
    """Backoff without jitter: delays are exactly the low end of the jitter range of the shared policy's nominal
    delays; they are recorded in `.sleeps`, not waited."""
    monkeypatch.setattr(retry.Clock, "random", lambda clock: 0.0)
    backoff = _Backoff()
    monkeypatch.setattr(retry.Clock, "sleep", backoff.sleep)
    return backoff


def _delays(retries: int) -> list[float]:
    return [round(BULK_POLICY.delay(n, 0.0), 6) for n in range(retries)]


def _workspace(n_files: int = 4, chunks_per_file: int = 3, tag: str = "v1"):
    return [
        file_with(
            f"notes/f{i}.md",
            [
                chunk(f"notes/f{i}.md", f"{tag} file {i} part {j} about retries", start=1 + 10 * j)
                for j in range(chunks_per_file)
            ],
            links=[f"notes/f{(i + 1) % n_files}.md"],
        )
        for i in range(n_files)
    ]


async def test_429_items_are_retried_until_stored(store_factory, no_jitter, caplog):
    store = await store_factory()
    files = _workspace()
    victims = [files[0][1][1].id, files[2][1][0].id, files[3][1][2].id]  # three chunks of three files
    faulty = FaultyBulk(store.dialect, {doc_id(v): (429, 2) for v in victims})
    with caplog.at_level(logging.WARNING, logger="reme_es.adapters.retry"):
        outcome = await store.upsert(files)

    assert outcome.failures == []
    # phase 1: 12 chunks; phase 2: 4 links + 4 file docs
    assert outcome.succeeded == 12 + 4 + 4
    assert {v: faulty.attempts[v] for v in victims} == {v: 3 for v in victims}
    others = [c.id for _, chunks in files for c in chunks if c.id not in victims]
    assert {faulty.attempts[o] for o in others} == {1}
    assert _retries(caplog) == [
        "bulk: 3 item(s) rejected with 429/5xx, retry 1 in 0.1s",
        "bulk: 3 item(s) rejected with 429/5xx, retry 2 in 0.2s",
    ]
    assert no_jitter.sleeps == [0.1, 0.2]
    assert await chunk_ids(store) == sorted(c.id for _, chunks in files for c in chunks)
    assert (await count(store, "files"), await count(store, "links")) == (4, 4)


async def test_400_items_are_not_retried_and_the_file_keeps_its_stored_version(store_factory, no_jitter):
    store = await store_factory()
    await store.upsert(_workspace(tag="v1"))
    v1_ids = await chunk_ids(store)
    v2 = _workspace(tag="v2")
    bad = v2[1][1][0].id  # the first chunk of notes/f1.md, version 2
    faulty = FaultyBulk(store.dialect, {doc_id(bad): (400, None)})

    with pytest.raises(BulkError) as err:
        await store.upsert(v2)

    assert faulty.attempts[bad] == 1
    assert no_jitter.sleeps == []
    assert err.value.failures == [BulkItemFailure(f"{store.index('chunks')}-1", bad, 400, f"injected 400 for {bad}")]
    # 11 v2 chunks; then f1's 2 landed v2 chunks taken back, 3 x 3 stale v1 chunks deleted, 3 links, 3 file docs
    assert err.value.succeeded == 11 + 2 + 9 + 3 + 3
    assert f"{bad}: 400 injected 400 for {bad}" in str(err.value)
    # notes/f1.md keeps version 1 (chunks and file doc); the other three files are at version 2
    f1_v1 = [c.id for c in _workspace(tag="v1")[1][1]]
    expected = sorted(f1_v1 + [c.id for i, (_, chunks) in enumerate(v2) if i != 1 for c in chunks])
    assert await chunk_ids(store) == expected
    assert set(v1_ids) & set(expected) == set(f1_v1)
    by_path = {f.path: f for f in await store.links.get_files()}
    assert by_path["notes/f1.md"].chunk_ids == f1_v1
    assert [by_path[f"notes/f{i}.md"].chunk_ids for i in (0, 2, 3)] == [[c.id for c in v2[i][1]] for i in (0, 2, 3)]


async def test_items_failing_past_the_retry_cap_are_all_reported(store_factory, no_jitter, caplog):
    store = await store_factory()
    files = _workspace(n_files=5)
    stuck_chunks = [files[0][1][0].id, files[0][1][2].id, files[3][1][1].id]
    faulty = FaultyBulk(store.dialect, {doc_id(v): (429, None) for v in stuck_chunks})
    with caplog.at_level(logging.WARNING, logger="reme_es.adapters.retry"), pytest.raises(BulkError) as err:
        await store.upsert(files)

    failures = err.value.failures
    assert sorted(f.id for f in failures) == sorted(stuck_chunks)
    assert {(f.index, f.status) for f in failures} == {(f"{store.index('chunks')}-1", 429)}
    assert {v: faulty.attempts[v] for v in stuck_chunks} == {v: 1 + RETRY_CAP for v in stuck_chunks}
    assert _retries(caplog) == [
        f"bulk: 3 item(s) rejected with 429/5xx, retry {n + 1} in {BULK_POLICY.delay(n, 0.0):.1f}s"
        for n in range(RETRY_CAP)
    ]
    assert no_jitter.sleeps == _delays(RETRY_CAP)
    # files 0 and 3 are not written (their landed chunks and their phase-0 placeholders are taken back);
    # 1, 2 and 4 are stored completely.
    stored = [1, 2, 4]
    assert await chunk_ids(store) == sorted(c.id for i in stored for c in files[i][1])
    assert [(f.path, f.st_mtime, len(f.links)) for f in await store.links.get_files()] == [
        (f"notes/f{i}.md", 1_716_000_000.0, 1) for i in stored
    ]
    assert await count(store, "links") == 3


async def test_phase_two_failures_are_reported_with_their_ids(store_factory, no_jitter):
    store = await store_factory()
    await store.upsert(_workspace(tag="v1"))
    files = _workspace(tag="v2")
    file_doc, link_id = doc_id("notes/f2.md"), files[3][0].links[0].id
    faulty = FaultyBulk(store.dialect, {file_doc: (503, None), link_id: (400, None)})
    with pytest.raises(BulkError) as err:
        await store.upsert(files)

    assert sorted((f.id, f.status) for f in err.value.failures) == sorted([(file_doc, 503), (link_id, 400)])
    assert (faulty.attempts[file_doc], faulty.attempts[link_id]) == (1 + RETRY_CAP, 1)
    assert no_jitter.sleeps == _delays(RETRY_CAP)
    # Phase 1 succeeded for every file: all v2 chunks are stored and the v1 ones deleted. The file doc of f2
    # still describes v1 (the failure is reported; the next write of f2 makes them agree).
    assert await chunk_ids(store) == sorted(c.id for _, chunks in files for c in chunks)
    by_path = {f.path: f for f in await store.links.get_files()}
    assert by_path["notes/f2.md"].chunk_ids == [c.id for c in _workspace(tag="v1")[2][1]]
    assert [by_path[f"notes/f{i}.md"].chunk_ids for i in (0, 1, 3)] == [[c.id for c in files[i][1]] for i in (0, 1, 3)]
    assert await count(store, "links") == 4  # f3's link was stored by the v1 write; only its rewrite failed


async def test_a_failed_placeholder_skips_the_file(store_factory, no_jitter):
    store = await store_factory()
    files = _workspace()
    faulty = FaultyBulk(store.dialect, {doc_id("notes/f2.md"): (400, None)})
    with pytest.raises(BulkError) as err:
        await store.upsert(files)

    assert [(f.id, f.status) for f in err.value.failures] == [("notes/f2.md", 400)]
    assert faulty.attempts["notes/f2.md"] == 1
    assert no_jitter.sleeps == []
    assert faulty.attempts[files[2][1][0].id] == 0  # no chunk of f2 was sent
    assert await chunk_ids(store) == sorted(c.id for i in (0, 1, 3) for c in files[i][1])
    assert [f.path for f in await store.links.get_files()] == ["notes/f0.md", "notes/f1.md", "notes/f3.md"]
