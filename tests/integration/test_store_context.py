"""A chunk is found by its neighbours' words (the `context` field, issue 38), the turns of the speaker a question
names lead (the `speaker` field), a turn that is itself a question comes after the answer it got (the `question`
field), a longer turn before a short one (the `words` field), and a chunks index made before those fields gets them
when a store opens it, on every engine under test.

A dialog turn that answers a question often holds none of its words ("Caroline: Adoption agencies, mostly." answers
"what did Caroline research?", whose other word is in the turn before). Each chunk is written with the text of the
chunks around it in its file; hybrid search matches that text at `context_boost`.
"""

from __future__ import annotations

from reme_es.adapters.dialect import ClientSettings
from reme_es.adapters.templates import render_index
from reme_es.store.connect import open_store
from reme_es.testing.data import chunk, file_with

SESSION = "daily/2026-05-01/chat.md"
TURNS = [
    "Melanie: So what have you been researching lately?",
    "Caroline: Adoption agencies, mostly.",
    "Melanie: That sounds like a big step!",
]
OTHER = "daily/2026-05-02/other.md"
OTHER_TURNS = ["Caroline: The weather was lovely.", "Jon: Indeed.", "Caroline: We walked for hours."]


def _files():
    turns = [chunk(SESSION, t, start=2 * i + 1) for i, t in enumerate(TURNS)]
    other = [chunk(OTHER, t, start=2 * i + 1) for i, t in enumerate(OTHER_TURNS)]
    return [file_with(SESSION, turns), file_with(OTHER, other)], turns


async def _ranked_texts(store, query: str) -> list[str]:
    result = await store.ranked(query, None, 50)
    return [h.chunk.text for h in await store.searches.with_chunks(result.hits)]


async def test_a_turn_is_found_by_the_words_of_the_turns_around_it(server, es_prefix):
    # collapse off: a hit of the twin (same text) would show as a second copy instead of being folded into one
    store = await open_store(ClientSettings([server.url]), es_prefix, server.engine, collapse=False, question_factor=1)
    twin = await open_store(ClientSettings([server.url]), es_prefix, server.engine, workspace="twin")
    try:
        files, turns = _files()
        await twin.upsert(_files()[0])  # another workspace of the set holds the same paths and texts
        await store.upsert(files)
        texts = await _ranked_texts(store, "researching")
        assert texts == [TURNS[0], TURNS[1]]  # the turn that says it first, then the one after it (by its context)
        store.indices.context_boost = 0.0  # off: only the turn's own text
        assert await _ranked_texts(store, "researching") == [TURNS[0]]
        stored = await store.vectors.get_chunks({SESSION: [t.id for t in turns]})
        assert stored[turns[1].id]["context"] == f"{TURNS[0]}\n{TURNS[2]}"
        assert stored[turns[0].id]["context"] == TURNS[1]
        assert [stored[t.id]["speaker"] for t in turns] == ["melanie", "caroline", "melanie"]
    finally:
        await twin.close()
        await store.close()


async def test_a_note_whose_lines_open_with_labels_has_no_speakers(server, es_prefix):
    store = await open_store(ClientSettings([server.url]), es_prefix, server.engine)
    try:
        path = "notes/meeting.md"
        notes = [chunk(path, t, start=2 * i + 1) for i, t in enumerate(["Note: moved", "TODO: book", "Decision: go"])]
        await store.upsert([file_with(path, notes), *_files()[0]])
        stored = await store.vectors.get_chunks({path: [c.id for c in notes]})
        assert [stored[c.id].get("speaker") for c in notes] == [None, None, None]
    finally:
        await store.close()


async def test_the_turns_of_the_speaker_a_question_names_come_first(server, es_prefix):
    store = await open_store(
        ClientSettings([server.url]), es_prefix, server.engine, note_boost=0.0, context_boost=0.0, speaker_boost=1.5
    )
    try:
        files, _ = _files()
        await store.upsert(files)
        # Melanie's "That sounds like a big step!" holds four of the question's words, Caroline's turns one or two:
        # BM25 ranks Melanie's first; the question names Caroline, and with a boost above the fused range (1.5) her
        # turns come first
        query = "Did Caroline say that sounds like a big step or lovely?"
        texts = await _ranked_texts(store, query)
        assert texts[0].startswith("Caroline: ") and TURNS[2] in texts
        assert [t.split(":")[0] for t in texts].index("Melanie") == len([t for t in texts if t.startswith("Caroline")])
        store.indices.speaker_boost = 0.0
        assert (await _ranked_texts(store, query))[0] == TURNS[2]
    finally:
        await store.close()


async def test_a_turn_that_asks_comes_after_the_answer_it_got(server, es_prefix):
    store = await open_store(
        ClientSettings([server.url]), es_prefix, server.engine, question_factor=0.3, turn_length=0.0
    )
    try:
        files, turns = _files()
        await store.upsert(files)
        stored = await store.vectors.get_chunks({SESSION: [t.id for t in turns]})
        assert [stored[t.id].get("question", False) for t in turns] == [True, False, False]
        # "researching" is the question's own word and in the answer's context only: the question leads unless it is
        # lowered to 0.3 of its score
        assert await _ranked_texts(store, "researching") == [TURNS[1], TURNS[0]]
        store.indices.question_factor = 1.0
        assert await _ranked_texts(store, "researching") == [TURNS[0], TURNS[1]]
    finally:
        await store.close()


async def test_a_longer_turn_comes_before_a_short_one_that_bm25_prefers(server, es_prefix):
    store = await open_store(ClientSettings([server.url]), es_prefix, server.engine, turn_length=1.0, note_boost=0.0)
    try:
        path = "daily/2026-05-03/chat.md"
        short = "Melanie: The museum!"
        long = (
            "Melanie: Yesterday I took the kids to the museum, and they spent the whole afternoon with the dinosaurs."
        )
        turns = [chunk(path, t, start=i + 1) for i, t in enumerate([short, long, "Caroline: Sounds like a fun day."])]
        await store.upsert([file_with(path, turns)])
        stored = await store.vectors.get_chunks({path: [t.id for t in turns]})
        assert [stored[t.id]["words"] for t in turns] == [3, 18, 6]
        # BM25's length normalisation ranks the three-word turn first; the turn length lifts the one that says more
        assert (await _ranked_texts(store, "museum"))[:2] == [long, short]
        store.indices.turn_length = 0.0
        assert (await _ranked_texts(store, "museum"))[:2] == [short, long]
    finally:
        await store.close()


async def test_a_chunks_index_from_before_the_context_field_gets_it_when_opened(server, es_prefix):
    store = await open_store(ClientSettings([server.url]), es_prefix, server.engine)
    try:
        alias = store.index("chunks")
        for concrete in await store.port.concrete(alias):  # the chunks index as template 3 made it
            await store.port.delete_index(concrete)
        body = render_index("chunks", store.dialect, store.indices.caps, store.options)
        for grown in ("context", "speaker", "question", "words", "written"):
            del body["mappings"]["properties"][grown]
        body["aliases"] = {alias: {}}
        await store.port.create_index(f"{alias}-1", body)
    finally:
        await store.close()
    store = await open_store(ClientSettings([server.url]), es_prefix, server.engine)
    try:
        properties = (await store.port.mapping(alias))["properties"]
        assert properties["context"]["type"] == "text" and properties["speaker"]["type"] == "keyword"
        assert properties["question"]["type"] == "boolean" and properties["words"]["type"] == "integer"
        assert properties["written"] == {"type": "keyword", "index": False, "doc_values": False}
        files, _ = _files()
        await store.upsert(files)  # a strict mapping without the field would refuse these documents
        assert TURNS[1] in await _ranked_texts(store, "researching")
    finally:
        await store.close()
