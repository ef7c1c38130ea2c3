"""How deep the keyword path is: the frames from ReMe's `EsFileStore.keyword_search` down to the HTTP send.

The engine client is a fake at the bottom (no server): its `perform_request` records the call chain at the moment of
the send. What is counted is every frame of reme-es code (`reme_es/`) on that chain, the file store's method and the
transport's `_perform` included, across the task hop of `IndexPort._unless_unavailable` (the request runs in a task the
search awaits: the awaiting chain of the caller's task, then the stack of the request's task). Not counted: asyncio's
frames (`wait_for`, the task step) and the client's frames below `_perform`. docs/ARCHITECTURE.md shows the walk.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
from pathlib import Path
from types import FrameType, SimpleNamespace
from typing import Any

import pytest

import reme_es
from reme_es.adapters.opensearch import OpenSearchDialect
from reme_es.adapters.transport import ClientSettings
from reme_es.core.models import Chunk
from reme_es.reme.file_store import EsFileStore
from reme_es.store import MemoryStore
from reme_es.store.sources import chunk_source

PACKAGE = Path(reme_es.__file__).parent
MAX_FRAMES = 6  # the budget of issue 41: Haystack's OpenSearch store does it in about 4 frames over 2 files


def _ours(frame: FrameType) -> bool:
    return Path(frame.f_code.co_filename).is_relative_to(PACKAGE)


def _awaiting(task: asyncio.Task) -> list[FrameType]:
    """The frames of a suspended task's coroutines, outermost first, down to the future it waits for."""
    frames, coro = [], task.get_coro()
    while coro is not None and getattr(coro, "cr_frame", None) is not None:
        frames.append(coro.cr_frame)
        coro = coro.cr_await
    return frames


def _where(frame: FrameType) -> str:
    return f"{Path(frame.f_code.co_filename).relative_to(PACKAGE.parent)}:{frame.f_code.co_qualname}"


class _Client:
    """An opensearch-py client stand-in: `transport.perform_request` records the chain and answers one hit."""

    def __init__(self, caller: asyncio.Task, chains: list[list[str]]):
        self.transport, self.caller, self.chains = self, caller, chains

    async def perform_request(self, method: str, path: str, params: Any = None, body: Any = None, timeout: Any = None):
        here = asyncio.current_task()
        outer = _awaiting(self.caller) if here is not self.caller else []
        inner = [f.frame for f in reversed(inspect.stack()[1:])]  # this frame (the send) left out
        self.chains.append([_where(f) for f in outer + inner if _ours(f)])
        src = chunk_source(Chunk(id="c1", path="notes/a.md", text="the lighthouse keeper"))
        return {"hits": {"hits": [{"_score": 1.5, "_source": src}]}}

    async def close(self) -> None:
        pass


def keyword_chain() -> tuple[list[str], list]:
    """The reme-es frames on the way from `EsFileStore.keyword_search` to the send, and the search's answer."""

    async def run() -> tuple[list[str], list]:
        chains: list[list[str]] = []
        dialect = OpenSearchDialect(ClientSettings(["http://127.0.0.1:1"]))
        dialect.transport._client = _Client(asyncio.current_task(), chains)
        store = MemoryStore(dialect, "frames", workspace="w")

        async def visible() -> None:
            return None

        file_store = SimpleNamespace(refresher=SimpleNamespace(visible=visible), store=store, name="frames")
        file_store._require_store = lambda: store
        hits = await EsFileStore.keyword_search(file_store, "lighthouse", 5, {})  # type: ignore[arg-type]
        assert len(chains) == 1, chains  # one request: one hit, so no file doc is read for `one_version`
        return chains[0], hits

    return asyncio.run(run())


def test_the_keyword_path_is_at_most_six_frames_deep() -> None:
    chain, hits = keyword_chain()
    assert [h.id for h in hits] == ["c1"]
    assert chain[0] == "reme_es/reme/file_store.py:EsFileStore.keyword_search"
    assert chain[-1] == "reme_es/adapters/opensearch.py:OpenSearchTransport._perform"
    assert len(chain) <= MAX_FRAMES, "\n".join(chain)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="co_qualname")
def test_the_walk_is_the_one_docs_architecture_shows() -> None:
    chain, _ = keyword_chain()
    assert chain == [
        "reme_es/reme/file_store.py:EsFileStore.keyword_search",
        "reme_es/store/__init__.py:MemoryStore.keyword_search",
        "reme_es/adapters/port.py:IndexPort.ranked_sources",
        "reme_es/adapters/port.py:IndexPort._unless_unavailable",
        "reme_es/adapters/transport.py:Transport.request",
        "reme_es/adapters/opensearch.py:OpenSearchTransport._perform",
    ]


if __name__ == "__main__":  # python -m tests.unit.test_keyword_frames: print the walk
    for i, where in enumerate(keyword_chain()[0], 1):
        print(f"{i:2}  {where}")
