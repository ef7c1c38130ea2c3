"""The write protocol's rounds, without a server: each scenario's bulk rounds are compared with golden JSON.

The writer runs `reme_es.store.protocol` through `MemoryPort` (reme_es.testing.fakes), which applies the
actions as a node would (versions, 409 on a stale conditional write or a second `create`). Regenerate a golden
file deliberately with REME_ES_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from reme_es.core.errors import BulkError
from reme_es.core.models import doc_id
from reme_es.store import protocol
from reme_es.store.sources import file_source
from reme_es.store.writer import STREAM_MIN_ACTIONS, Writer
from reme_es.testing.data import chunk, file_with
from reme_es.testing.fakes import MemoryPort

GOLDEN = Path(__file__).parent / "golden"
IX = protocol.Indices("t-chunks", "t-files", "t-links")
PATH = "notes/a.md"
C1, C2, C3 = (chunk(PATH, f"line {n} of a", start=2 * n) for n in range(1, 4))


def writer(port: MemoryPort) -> Writer:
    return Writer(port, IX, lambda: None, port.refresh)


def rounds(port: MemoryPort) -> list[list[dict]]:
    """The bulk rounds as dicts; each write call's random `written` token named by its order: "call 1", "call 2"."""
    calls: dict[str, str] = {}
    out = [[a.as_dict() for a in r] for r in port.rounds]
    for action in (a for r in out for a in r):
        if token := (action.get("source") or {}).get("written"):
            action["source"] = {**action["source"], "written": calls.setdefault(token, f"call {len(calls) + 1}")}
    return out


def check(name: str, trace: dict) -> None:
    path = GOLDEN / f"protocol_{name}.json"
    if os.environ.get("REME_ES_UPDATE_GOLDEN"):
        path.write_text(json.dumps(trace, indent=2, ensure_ascii=False, sort_keys=True) + "\n")
    assert trace == json.loads(path.read_text())


async def _stored_v1(port: MemoryPort) -> None:
    await writer(port).upsert([file_with(PATH, [C1, C2], links=["x"], st_mtime=1.0)])
    port.rounds.clear()


def test_new_file_gets_a_placeholder_then_chunks_then_links_and_its_conditional_file_doc():
    port = MemoryPort()
    outcome = asyncio.run(writer(port).upsert([file_with(PATH, [C1, C2], links=["x", "y"], st_mtime=1.0)]))
    trace = {"rounds": rounds(port), "failures": [], "succeeded": outcome.succeeded}
    assert [len(r) for r in trace["rounds"]] == [1, 2, 3]  # placeholder; 2 chunks; 2 links + file doc
    assert port.ids(IX.chunks) == sorted([C1.id, C2.id]) and port.refreshes == 1
    check("new_file", trace)


def test_changed_file_deletes_stale_chunks_and_links_only_when_its_new_chunks_are_stored():
    port = MemoryPort()
    asyncio.run(_stored_v1(port))
    asyncio.run(writer(port).upsert([file_with(PATH, [C2, C3], links=["y"], st_mtime=2.0)]))
    trace = {"rounds": rounds(port)}
    assert trace["rounds"][0] == []  # stored before: no placeholder
    assert port.ids(IX.chunks) == sorted([C2.id, C3.id])
    check("changed_file", trace)


def test_unchanged_chunks_are_not_re_written():
    # C1 is stored and named unchanged: not sent. C3 is named unchanged but not stored: written as given. C2 is
    # stored but not named: written again. The commit keeps C1 (it is in the new file doc), so nothing is stale.
    port = MemoryPort()
    asyncio.run(_stored_v1(port))
    kept = port.docs[IX.chunks][doc_id(C1.id)]
    outcome = asyncio.run(
        writer(port).upsert([file_with(PATH, [C1, C2, C3], links=["x"], st_mtime=2.0)], unchanged={C1.id, C3.id})
    )
    trace = {"rounds": rounds(port)}
    assert [a["id"] for a in trace["rounds"][1]] == [doc_id(C2.id), doc_id(C3.id)]
    assert port.docs[IX.chunks][doc_id(C1.id)] is kept  # untouched: same doc, same seq_no
    assert port.ids(IX.chunks) == sorted(doc_id(c.id) for c in (C1, C2, C3))
    assert (IX.chunks, doc_id(C1.id)) not in outcome.versions and (IX.chunks, doc_id(C3.id)) in outcome.versions
    check("unchanged_chunks", trace)


def test_a_large_chunk_round_goes_out_as_two_streams_and_both_report_failures():
    port = MemoryPort()
    chunks = [chunk(PATH, f"part {i}", start=i + 1) for i in range(2 * STREAM_MIN_ACTIONS)]
    port.fail = {doc_id(chunks[1].id): 400, doc_id(chunks[-1].id): 400}
    with pytest.raises(BulkError) as err:
        asyncio.run(writer(port).upsert([file_with(PATH, chunks)]))
    assert [len(r) for r in port.rounds[1:3]] == [STREAM_MIN_ACTIONS, STREAM_MIN_ACTIONS]
    assert sorted(f.id for f in err.value.failures) == sorted([doc_id(chunks[1].id), doc_id(chunks[-1].id)])
    assert port.ids(IX.chunks) == [] and port.ids(IX.files) == []  # what landed is taken back, and the placeholder


def test_file_whose_chunks_fail_takes_back_what_landed_and_keeps_what_was_stored():
    port = MemoryPort()
    asyncio.run(_stored_v1(port))
    port.fail = {doc_id(C3.id): 400}
    with pytest.raises(BulkError) as err:
        asyncio.run(writer(port).upsert([file_with(PATH, [C1, C3], links=["z"], st_mtime=2.0)]))
    trace = {"rounds": rounds(port), "failures": [[f.id, f.status] for f in err.value.failures]}
    assert port.ids(IX.chunks) == sorted([C1.id, C2.id])  # C1 was stored before: not taken back
    assert port.docs[IX.files][PATH]["_source"]["st_mtime"] == 1.0
    check("failed_chunks", trace)


def test_new_file_whose_chunks_fail_takes_back_its_placeholder():
    port = MemoryPort(fail={doc_id(C2.id): 400})
    with pytest.raises(BulkError):
        asyncio.run(writer(port).upsert([file_with(PATH, [C1, C2])]))
    assert port.ids(IX.chunks) == [] and port.ids(IX.files) == []
    assert [a.op for a in port.rounds[2]] == ["delete", "delete"]
    assert all(a.version is not None for a in port.rounds[2])  # take-backs are conditional on this writer's writes


def test_lost_conditional_write_takes_back_this_writers_parts_and_marks_the_winner_stale():
    port = MemoryPort()
    asyncio.run(_stored_v1(port))
    other = file_with(PATH, [C1, C2], links=["x"], st_mtime=5.0)[0]

    def another_writer(p: MemoryPort) -> None:  # rewrites the file doc after this writer read it
        p.put(IX.files, doc_id(PATH), file_source(other))

    port.before_bulk = {2: another_writer}
    with pytest.raises(BulkError) as err:
        asyncio.run(writer(port).upsert([file_with(PATH, [C3], links=["y"], st_mtime=2.0)]))
    trace = {"rounds": rounds(port), "failures": [[f.id, f.status] for f in err.value.failures]}
    assert len(trace["rounds"]) == 4 and "another writer changed this file" in err.value.failures[0].reason
    winner = port.docs[IX.files][PATH]["_source"]
    assert winner["st_mtime"] == -1.0 and winner["chunk_ids"] == [C1.id, C2.id]  # marked stale: resynced next time
    assert C3.id not in port.ids(IX.chunks)
    check("lost_conditional_write", trace)


def test_resent_placeholder_that_had_landed_counts_as_written():
    port = MemoryPort()
    first = file_with(PATH, [C1], st_mtime=1.0)

    def landed_before(p: MemoryPort) -> None:  # the node applied the create, its answer was lost, it is resent
        p.put(IX.files, doc_id(PATH), {**file_source(first[0]), "st_mtime": -1.0, "links": []})

    port.before_bulk = {0: landed_before}
    outcome = asyncio.run(writer(port).upsert([first]))
    assert outcome.failures == []
    assert port.docs[IX.files][PATH]["_source"]["st_mtime"] == 1.0


def test_delete_removes_chunks_and_links_first_then_the_file_doc():
    port = MemoryPort()
    asyncio.run(_stored_v1(port))
    assert asyncio.run(writer(port).delete([PATH, "notes/unknown.md"])) == 1
    trace = {"rounds": rounds(port)}
    assert [{a["op"] for a in r} for r in trace["rounds"]] == [{"delete"}, {"delete"}]
    assert port.ids(IX.chunks) == port.ids(IX.links) == port.ids(IX.files) == []
    check("delete", trace)


def test_delete_keeps_the_file_doc_when_a_chunk_delete_fails():
    port = MemoryPort()
    asyncio.run(_stored_v1(port))
    port.fail = {doc_id(C1.id): 503}
    with pytest.raises(BulkError):
        asyncio.run(writer(port).delete(PATH))
    assert len(port.rounds) == 1 and port.ids(IX.files) == [PATH]
