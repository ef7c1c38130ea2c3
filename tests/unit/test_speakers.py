"""A chunk has a speaker only where its file is a dialog (issue 50 item 6): its turns alternate between a few names
and some name speaks again. A note whose lines open `Note:`, `TODO:` or `Decision:`, or a list of fields, has none."""

from __future__ import annotations

from reme_es.core.models import Chunk
from reme_es.store.sources import dialog_speakers, is_dialog


def _file(path: str, *texts: str) -> list[Chunk]:
    return [Chunk(id=f"{path}#{i}", path=path, start_line=i, end_line=i, text=t) for i, t in enumerate(texts, 1)]


def test_a_conversation_keeps_its_speakers():
    chunks = _file(
        "daily/2023-05-08/s1.md",
        "Caroline: I went to a support group.",
        "Melanie: How was it?",
        "Caroline: Good. [shares a photo]",
        "Melanie: Glad to hear.",
    )
    assert dialog_speakers(chunks) == {
        "daily/2023-05-08/s1.md#1": "caroline",
        "daily/2023-05-08/s1.md#2": "melanie",
        "daily/2023-05-08/s1.md#3": "caroline",
        "daily/2023-05-08/s1.md#4": "melanie",
    }


def test_label_openings_are_not_speakers_even_where_they_alternate():
    chunks = _file("notes/meeting.md", "Note: the venue moved.", "TODO: book it", "Decision: go", "TODO: pay")
    assert dialog_speakers(chunks) == {}


def test_a_list_of_fields_is_not_a_dialog():
    chunks = _file("notes/plan.md", "Budget: 300 euros", "Venue: the old mill", "Guests: forty")
    assert dialog_speakers(chunks) == {}


def test_one_voice_is_not_a_dialog():
    assert dialog_speakers(_file("notes/j.md", "Sam: first thought", "Sam: second thought")) == {}


def test_turns_inside_one_chunk_make_a_dialog_and_the_chunk_has_its_opening_speaker():
    chunks = _file("daily/2024-01-02/x.md", "- **Sam:** hi\n- **Ana:** hello\n- **Sam:** how are you?", "# Notes")
    assert dialog_speakers(chunks) == {"daily/2024-01-02/x.md#1": "sam"}


def test_files_are_judged_each_on_their_own():
    dialog = _file("a.md", "Jon: hi", "Gina: hey", "Jon: bye")
    notes = _file("b.md", "Jon: hi", "Note: later")
    assert dialog_speakers(dialog + notes) == {"a.md#1": "jon", "a.md#2": "gina", "a.md#3": "jon"}


def test_is_dialog_bounds():
    assert is_dialog(["a", "b", "a"]) is True
    assert is_dialog(["a", "b"]) is False  # each once: a pair of fields as much as a dialog
    assert is_dialog(["a", "a", "b", "b"]) is True
    assert is_dialog([str(i) for i in range(9)] * 2) is False  # nine names: more than a few
    assert is_dialog([]) is False
