"""Client-side fusion reproduces ReMe's SearchStep._rrf_merge exactly."""

from __future__ import annotations

import random

import pytest

from reme_es.core.models import Chunk, Hit
from reme_es.store.fusion import apply_min_score, candidate_depth, note_rescore, weighted_rrf


def _hit(cid: str, branch: str, score: float) -> Hit:
    return Hit(chunk=Chunk(id=cid, path=f"p/{cid}.md", text=cid), scores={branch: score, "score": score})


def _lists(seed: int) -> tuple[list[Hit], list[Hit]]:
    rng = random.Random(seed)
    ids = [f"c{i}" for i in range(40)]
    vec = [_hit(i, "vector", 1 - n / 100) for n, i in enumerate(rng.sample(ids, 25))]
    kw = [_hit(i, "keyword", 30 - n) for n, i in enumerate(rng.sample(ids, 25))]
    return vec, kw


def test_rrf_by_hand():
    vec = [_hit("a", "vector", 0.9), _hit("b", "vector", 0.8)]
    kw = [_hit("b", "keyword", 7.0), _hit("c", "keyword", 3.0)]
    fused = weighted_rrf(vec, kw, vector_weight=0.7)
    assert [h.chunk.id for h in fused] == ["b", "a", "c"]
    assert fused[0].scores == pytest.approx({"vector": 0.8, "keyword": 7.0, "score": 0.7 / 62 + 0.3 / 61})
    assert fused[1].scores == pytest.approx({"vector": 0.9, "score": 0.7 / 61})
    assert fused[2].scores == pytest.approx({"keyword": 3.0, "score": 0.3 / 62})


def test_candidate_depth_and_min_score():
    assert [candidate_depth(n, 5) for n in (1, 10, 40, 41, 500)] == [5, 50, 200, 200, 500]
    hits = [_hit("a", "keyword", 0.5), _hit("b", "keyword", 0.1)]
    assert [h.chunk.id for h in apply_min_score(hits, 0.2)] == ["a"]
    assert apply_min_score(hits, 0.0) == hits


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("weight", [0.0, 0.3, 0.7, 1.0])
def test_matches_reme_rrf_merge(seed, weight):
    search = pytest.importorskip(
        "reme.steps.index.search", reason="reme-ai is not installed (pip install 'reme-es[reme]')"
    )
    from reme.schema import FileChunk

    vec, kw = _lists(seed)

    def to_reme(hits):
        return [FileChunk(id=h.chunk.id, path=h.chunk.path, text=h.chunk.text, scores=dict(h.scores)) for h in hits]

    theirs = search.SearchStep._rrf_merge(to_reme(vec), to_reme(kw), weight)
    ours = weighted_rrf(vec, kw, weight)
    assert [h.chunk.id for h in ours] == [c.id for c in theirs]
    assert [h.scores for h in ours] == [c.scores for c in theirs]


def test_minmax_convex_by_hand():
    from reme_es.store.fusion import convex

    vec = [_hit("a", "vector", 0.9), _hit("b", "vector", 0.5), _hit("c", "vector", 0.1)]
    kw = [_hit("c", "keyword", 12.0), _hit("d", "keyword", 2.0)]
    fused = convex(vec, kw, vector_weight=0.5, method="minmax")
    # a: 0.5*1 + 0.5*0 (missed by keyword: its floor 0); b: 0.5*0.5; c: 0.5*0 + 0.5*1; d: 0 + 0.5*0
    assert [(h.chunk.id, round(h.score, 6)) for h in fused] == [("a", 0.5), ("c", 0.5), ("b", 0.25), ("d", 0.0)]
    assert fused[1].scores == pytest.approx({"vector": 0.1, "keyword": 12.0, "score": 0.5})


def test_zscore_convex_by_hand():
    from reme_es.store.fusion import convex

    vec = [_hit("a", "vector", 3.0), _hit("b", "vector", 1.0)]  # z: +1, -1
    kw = [_hit("b", "keyword", 10.0), _hit("c", "keyword", 4.0), _hit("d", "keyword", 4.0)]  # z: +1.414, -0.707 x2
    fused = convex(vec, kw, vector_weight=0.7, method="zscore")
    z_hi, z_lo = 2**0.5, -(2**0.5) / 2
    expected = {"a": 0.7 * 1 + 0.3 * z_lo, "b": 0.7 * -1 + 0.3 * z_hi, "c": 0.7 * -1 + 0.3 * z_lo}
    assert [h.chunk.id for h in fused] == ["a", "b", "c", "d"]
    assert {h.chunk.id: h.score for h in fused if h.chunk.id != "d"} == pytest.approx(expected)


def test_fuse_dispatch_and_errors():
    from reme_es.store.fusion import convex, fuse

    vec, kw = _lists(3)
    assert [h.chunk.id for h in fuse(vec, kw, "rrf", 0.3)] == [h.chunk.id for h in weighted_rrf(vec, kw, 0.3)]
    assert [h.chunk.id for h in fuse(vec, kw, "zscore", 0.3)] == [h.chunk.id for h in convex(vec, kw, 0.3, "zscore")]
    with pytest.raises(ValueError, match="fusion must be one of rrf, minmax, zscore, got 'borda'"):
        fuse(vec, kw, "borda", 0.5)
    with pytest.raises(ValueError, match="normalises by 'minmax' or 'zscore'"):
        convex(vec, kw, 0.5, "rrf")


def test_proximity_and_rescore():
    from reme_es.store.fusion import proximity, proximity_rescore, terms

    assert terms("What did Sam name the new dog?") == ["sam", "name", "new", "dog"]
    assert terms("小林的狗") == ["小", "林", "的", "狗"]
    q = terms("old harbour flights")
    assert proximity(q, "Booked flights for June, staying near the old harbour") == pytest.approx((1 + 0.5) / 2)
    assert proximity(q, "Booked flights near the old harbour") == 1.0
    assert proximity(q, "nothing here") == 0.0
    hits = [
        Hit(chunk=Chunk(id="x", path="p", text="small talk"), scores={"score": 0.9}),
        Hit(chunk=Chunk(id="y", path="p", text="the old harbour"), scores={"score": 0.8}),
        Hit(chunk=Chunk(id="z", path="p", text="old harbour flights"), scores={"score": 0.1}),
    ]
    assert [h.chunk.id for h in proximity_rescore(hits, "old harbour flights", boost=0.1)] == ["x", "y", "z"]
    # base (min-max over the head) x 1, y 0.875, z 0; proximity x 0, y (2/3 + 1/2) / 2, z 1
    assert [h.chunk.id for h in proximity_rescore(hits, "old harbour flights", boost=2.0)] == ["y", "z", "x"]
    assert [h.chunk.id for h in proximity_rescore(hits, "old harbour flights", top=2, boost=2.0)] == ["y", "x", "z"]


# ------------------------------------------------------------------------------ pseudo-relevance feedback


def test_rocchio_moves_the_query_toward_the_mean_of_its_unit_feedback_vectors():
    from reme_es.store.fusion import rocchio

    # q = (2, 0) -> (1, 0); feedback (0, 3) and (0, 1) -> both (0, 1); (1, 0) + 0.5 x (0, 1) = (1, 0.5) -> unit
    moved = rocchio([2.0, 0.0], [[0.0, 3.0], [0.0, 1.0]], beta=0.5)
    assert moved == pytest.approx([1 / 1.25**0.5, 0.5 / 1.25**0.5])
    assert sum(x * x for x in moved) == pytest.approx(1.0)


def test_rocchio_without_usable_feedback_keeps_the_query():
    from reme_es.store.fusion import rocchio

    assert rocchio([0.6, 0.8], []) == [0.6, 0.8]
    assert rocchio([0.6, 0.8], [[1.0, 0.0, 0.0], []]) == [0.6, 0.8]  # another dimension, an empty vector: ignored
    assert rocchio([0.6, 0.8], [[1.0, 0.0]], beta=0.0) == [0.6, 0.8]


@pytest.mark.parametrize("bad", [-1, 1.5, "2", True, None])
def test_feedback_depth_is_a_whole_number_of_hits(bad):
    from reme_es.core.checks import validate_feedback
    from reme_es.core.errors import ConfigError

    assert validate_feedback(0) == 0 and validate_feedback(2) == 2 and validate_feedback(3.0) == 3
    with pytest.raises(ConfigError, match="feedback must be a whole number of hits >= 0"):
        validate_feedback(bad)


def test_the_cli_fuses_as_the_drop_in_unless_told_otherwise(tmp_path):
    from reme_es.core.errors import ConfigError
    from reme_es.core.options import SearchOptions, load_options
    from reme_es.reme.keys import plugin_options

    drop_in = plugin_options({}, "opensearch").search
    s = load_options(tmp_path, environ={}).search
    assert s == drop_in == SearchOptions()  # one set of defaults: the CLI, the drop-in and a MemoryStore
    assert (s.fusion, s.vector_weight, s.feedback, s.collapse) == ("zscore", 0.55, 1, True)
    env = {
        "REME_ES_FUSION": "rrf",
        "REME_ES_FEEDBACK": "0",
        "REME_ES_VECTOR_WEIGHT": "0.7",
        "REME_ES_COLLAPSE": "false",
    }
    s = load_options(tmp_path, environ=env).search
    assert (s.fusion, s.vector_weight, s.feedback, s.collapse) == ("rrf", 0.7, 0, False)
    with pytest.raises(ConfigError, match="fusion"):
        load_options(tmp_path, environ={"REME_ES_FUSION": "borda"})
    with pytest.raises(ConfigError, match="feedback"):
        load_options(tmp_path, environ={"REME_ES_FEEDBACK": "-1"})
    with pytest.raises(ConfigError, match="collapse must be true or false, got 'maybe'"):
        load_options(tmp_path, environ={"REME_ES_COLLAPSE": "maybe"})
    assert load_options(tmp_path, environ={"REME_ES_COLLAPSE": "no"}).search.collapse is False


# ------------------------------------------------------------------------------ repeated texts


def _said(cid: str, text: str, score: float) -> Hit:
    import hashlib

    digest = hashlib.sha256(text.encode()).hexdigest() if text else ""
    return Hit(chunk=Chunk(id=cid, path=f"daily/{cid}.md", text="", hash=digest), scores={"score": score})


def test_collapse_keeps_each_repeated_text_once_at_its_best_rank_and_counts_the_copies():
    from reme_es.store.fusion import collapse_repeats

    ranked = [
        _said("a", "Long day, talk tomorrow?", 0.9),
        _said("b", "Long day, talk tomorrow?", 0.9),
        _said("c", "We adopted a puppy.", 0.8),
        _said("d", "Long day, talk tomorrow?", 0.7),
        _said("e", "", 0.6),
        _said("f", "", 0.5),
    ]  # no hash stored: never folded
    out = collapse_repeats(ranked)
    assert [h.chunk.id for h in out] == ["b", "c", "e", "f"]  # a and b tie: the later path shows the text
    assert out[0].scores == {"score": 0.9, "repeats": 2.0}
    assert "repeats" not in out[1].scores
    assert "repeats" not in ranked[0].scores  # the input hits are left as they were


def test_copies_that_tie_are_shown_by_the_latest_path():
    from reme_es.store.fusion import collapse_repeats

    ranked = [
        _said("2026-03-01", "Work has been hectic.", 0.9),
        _said("2026-03-09", "Work has been hectic.", 0.9),
        _said("2026-03-05", "Work has been hectic.", 0.9),
        _said("2026-03-20", "Work has been hectic.", 0.4),
    ]
    (kept,) = collapse_repeats(ranked)
    assert kept.chunk.path == "daily/2026-03-09.md"  # the newest of the tied copies, not the lower-scored 03-20
    assert kept.scores == {"score": 0.9, "repeats": 3.0}
    assert ranked[0].chunk.path == "daily/2026-03-01.md"


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_collapse_is_true_or_false(bad):
    from reme_es.core.checks import validate_collapse
    from reme_es.core.errors import ConfigError

    assert validate_collapse(True) is True and validate_collapse(False) is False
    with pytest.raises(ConfigError, match="collapse must be true or false"):
        validate_collapse(bad)


def test_the_cli_shows_how_many_copies_of_a_hit_were_left_out():
    from reme_es.cli.search_command import _format_scores

    assert _format_scores({"score": 0.5, "vector": 0.8, "repeats": 2.0}) == "score=0.5000 vector=0.8000 repeats=2"
    assert _format_scores({"score": 0.5, "keyword": 3.0}) == "score=0.5000 keyword=3.0000"


# ------------------------------------------------------------------------------ a question naming a relation


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("What kind of restaurant did Kwame's old roommate open?", True),
        ("Which marathon is Dario\u2019s stepsister running?", True),
        ("When is Maya's optician visit now?", True),
        ("What's the name of the boat?", False),  # a question word's contraction
        ("It's the boat my uncle bought, what is it called?", False),
        ("what kind of restaurant did kwame's roommate open", False),  # no capitalised name
        ("What vegetable is Hugo planting?", False),  # a name, no relation through it
    ],
)
def test_a_question_names_someone_through_a_named_person(query, named):
    from reme_es.store.fusion import names_relation

    assert names_relation(query) is named


def test_the_relation_weight_is_used_only_for_such_a_question():
    from reme_es.store.fusion import query_weight

    assert query_weight("What did Kwame's stepsister open?", 0.55, 0.2) == 0.2
    assert query_weight("What did Kwame open?", 0.55, 0.2) == 0.55
    assert query_weight("What did Kwame's stepsister open?", 0.55, None) == 0.55


def test_the_new_defaults_and_how_to_turn_them_off(tmp_path):
    from reme_es.core.errors import ConfigError
    from reme_es.core.options import SearchOptions, load_options

    d = SearchOptions()
    assert (d.relation_vector_weight, d.date_boost, d.context_boost, d.speaker_boost, d.note_boost) == (
        0.1,
        0.5,
        0.35,
        0.2,
        0.5,
    )
    assert (d.question_factor, d.turn_length) == (0.8, 0.3)
    off = {
        "REME_ES_RELATION_VECTOR_WEIGHT": "none",
        "REME_ES_DATE_BOOST": "0",
        "REME_ES_CONTEXT_BOOST": "0",
        "REME_ES_SPEAKER_BOOST": "0",
        "REME_ES_NOTE_BOOST": "0",
        "REME_ES_QUESTION_FACTOR": "1",
        "REME_ES_TURN_LENGTH": "0",
    }
    s = load_options(tmp_path, environ=off).search
    assert (s.question_factor, s.turn_length) == (1.0, 0.0)
    assert (s.relation_vector_weight, s.date_boost, s.context_boost, s.speaker_boost, s.note_boost) == (
        None,
        0.0,
        0.0,
        0.0,
        0.0,
    )
    leaning = load_options(tmp_path, environ={"REME_ES_RELATION_VECTOR_WEIGHT": "0.4"}).search
    assert leaning.relation_vector_weight == 0.4
    with pytest.raises(ConfigError, match="relation_vector_weight"):
        load_options(tmp_path, environ={"REME_ES_RELATION_VECTOR_WEIGHT": "1.5"})


def test_the_drop_in_keys_and_the_cli_flags_reach_the_store(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from reme_es.adapters.dialect import ClientSettings
    from reme_es.adapters.opensearch import OpenSearchDialect
    from reme_es.cli import search_command
    from reme_es.cli.search_command import search
    from reme_es.reme.keys import plugin_options
    from reme_es.store import MemoryStore

    given = plugin_options({"relation_vector_weight": 0.3, "date_boost": 0.5}, "opensearch").search
    assert (given.relation_vector_weight, given.date_boost) == (0.3, 0.5)
    settings = ClientSettings(hosts=["http://127.0.0.1:1"])
    store = MemoryStore(OpenSearchDialect(settings), "t-keys", search=given)  # never connected
    assert (store.indices.relation_vector_weight, store.indices.date_boost) == (0.3, 0.5)
    seen = []

    async def searched(settings, *rest):
        seen.append(settings.search)

    monkeypatch.setattr(search_command, "_search", searched)
    flags = ["q", "--relation-vector-weight", "0.3", "--date-boost", "0.5", "--workspace", str(tmp_path)]
    assert CliRunner().invoke(search, flags, env={"REME_ES_HOME": str(tmp_path)}).exit_code == 0
    assert (seen[0].relation_vector_weight, seen[0].date_boost) == (0.3, 0.5)


def _noted(cid: str, path: str, score: float) -> Hit:
    return Hit(chunk=Chunk(id=cid, path=path, text=""), scores={"score": score})


def test_note_rescore_lifts_a_hit_whose_note_holds_much_of_the_head():
    hits = [
        _noted("a", "daily/2026-01-01/x.md", 1.0),
        _noted("b", "daily/2026-01-02/y.md", 0.9),
        _noted("c", "daily/2026-01-02/y.md", 0.8),
        _noted("d", "daily/2026-01-03/z.md", 0.0),
    ]
    out = note_rescore(hits, 0.5)
    # y.md's two hits sum 0.9 + 0.8 (min-max: 0.9, 0.8) = 1.7, x.md's one 1.0: b = 0.9 + 0.5 beats a = 1.0 + 0.5 x 1/1.7
    assert [h.chunk.id for h in out] == ["b", "c", "a", "d"]
    assert out[0].scores["note"] == 1.0
    assert out[2].scores["note"] == pytest.approx(1.0 / 1.7)
    assert out[3].scores["note"] == 0.0


def test_note_rescore_off_or_one_hit_per_note_keeps_the_order():
    hits = [_noted("a", "a.md", 3.0), _noted("b", "b.md", 2.0), _noted("c", "c.md", 1.0)]
    assert note_rescore(hits, 0.0) is hits
    assert [h.chunk.id for h in note_rescore(hits, 2.0)] == ["a", "b", "c"]  # each note's mass is its own score


def test_note_rescore_reads_only_the_head():
    hits = [_noted("a", "a.md", 1.0), _noted("b", "b.md", 0.95), *(_noted(f"t{i}", "tail.md", 0.0) for i in range(3))]
    out = note_rescore(hits, 1.0, top=2)
    assert [h.chunk.id for h in out][:2] == ["a", "b"]
    assert all(h.scores["note"] == 0.0 for h in out[2:])  # tail.md has no hit among the first two


def test_chunk_contexts_hold_the_neighbours_in_line_order_per_file():
    from reme_es.store.sources import CONTEXT_CHARS, chunk_contexts

    def c(cid, path, line, text):
        return Chunk(id=cid, path=path, start_line=line, end_line=line, text=text)

    chunks = [
        c("b", "x.md", 2, "two"),
        c("a", "x.md", 1, "one"),
        c("c", "x.md", 3, "three" + "z" * CONTEXT_CHARS),
        c("alone", "y.md", 1, "only"),
    ]
    ctx = chunk_contexts(chunks)
    assert ctx == {"a": "two", "b": "one\n" + ("three" + "z" * CONTEXT_CHARS)[:CONTEXT_CHARS], "c": "two"}


def test_chunk_speaker_reads_a_dialog_turns_opening():
    from reme_es.store.sources import chunk_source, chunk_speaker

    assert chunk_speaker("Caroline: I went to a support group.") == "caroline"
    assert chunk_speaker("- **Sam:** Work has been hectic.") == "sam"
    assert chunk_speaker("- [19:42] Rafa Diaz: on my way") == "rafa diaz"
    assert chunk_speaker("the cat: sat") == ""  # not capitalised
    assert chunk_speaker("### 09:14 user\nhello") == ""
    assert chunk_speaker("A note without a speaker") == ""
    assert chunk_source(Chunk(id="a", path="p.md", text="Jon: hi"), speaker="jon")["speaker"] == "jon"
    assert "speaker" not in chunk_source(Chunk(id="a", path="p.md", text="Jon: hi"))  # its file decides (test_speakers)


def _spoken(cid: str, speaker: str, score: float) -> Hit:
    return Hit(chunk=Chunk(id=cid, path=f"{cid}.md", text="", speaker=speaker), scores={"score": score})


def test_speaker_rescore_lifts_the_one_named_speakers_turns():
    from reme_es.store.fusion import speaker_rescore

    hits = [
        _spoken("a", "melanie", 1.0),
        _spoken("b", "caroline", 0.9),
        _spoken("c", "", 0.85),
        _spoken("d", "caroline", 0.0),
    ]
    out = speaker_rescore(hits, "What did Caroline's class research?", 0.2)
    # min-max: a 1.0, b 0.9 + 0.2, c 0.85 / 1 = 0.85, d 0 + 0.2
    assert [h.chunk.id for h in out] == ["b", "a", "c", "d"]
    assert [h.scores["speaker"] for h in out] == [1.0, 0.0, 0.0, 1.0]
    assert out[0].score == pytest.approx(1.1)


def test_speaker_rescore_needs_exactly_one_named_speaker():
    from reme_es.store.fusion import query_names, speaker_rescore

    hits = [_spoken("a", "jon", 1.0), _spoken("b", "gina", 0.5)]
    assert speaker_rescore(hits, "How do Jon and Gina both like to destress?", 0.5) is hits
    assert speaker_rescore(hits, "What is the weather like?", 0.5) is hits
    assert speaker_rescore(hits, "Where did Gina go?", 0.0) is hits
    assert [h.chunk.id for h in speaker_rescore(hits, "Where did Gina go?", 1.5)] == ["b", "a"]
    assert query_names("What did Caroline’s friend In Rome say?") == {"caroline", "friend", "rome"} - {"friend"}


def test_speaker_rescore_leaves_a_question_about_someone_named_through_the_speaker():
    from reme_es.store.fusion import speaker_rescore

    hits = [_spoken("a", "kwame", 1.0), _spoken("b", "ines", 0.0)]
    assert speaker_rescore(hits, "What kind of restaurant did Kwame's stepsister open?", 5.0) is hits
    assert speaker_rescore(hits, "What did Kwame's old roommate buy?", 5.0) is hits
    assert [h.chunk.id for h in speaker_rescore(hits, "What did Ines's team win?", 5.0)] == ["b", "a"]


def test_chunk_asks_reads_a_question_with_its_trailing_aside_left_out():
    from reme_es.store.sources import chunk_asks, chunk_source

    assert chunk_asks("Melanie: What did you paint?")
    assert chunk_asks("Caroline: Nice! Where was it? [shares a photo of a lake]  ")
    assert chunk_asks("Is it done? (laughs) [shares a photo]")
    assert not chunk_asks("Caroline: I painted a lake. Did you see it? Yes, last week.")
    assert not chunk_asks("What? [shares a photo] and then a statement.")
    assert not chunk_asks("")
    assert chunk_source(Chunk(id="a", path="p.md", text="Jon: how's the studio?"))["question"] is True
    assert chunk_source(Chunk(id="a", path="p.md", text="Jon: how's the studio?"))["words"] == 4
    assert "question" not in chunk_source(Chunk(id="a", path="p.md", text="Jon: the studio opened."))


def _asks_by_the_pattern_alone(text: str) -> bool:
    """chunk_asks as the aside pattern alone decides it (no shortcut): the reference for the test below."""
    from reme_es.store.sources import _ASIDE

    text = text.rstrip()
    while (cut := _ASIDE.sub("", text)) != text:
        text = cut
    return text.endswith("?")


def test_chunk_asks_runs_the_aside_pattern_only_on_a_text_that_ends_with_a_bracket(monkeypatch):
    import random

    from reme_es.store import sources

    rng = random.Random(7)
    parts = ["Where?", "it", "was", "?", "[a photo]", "(laughs)", "]", ")", "(", "[", " ", "\n", "\t", "ok."]
    texts = ["".join(rng.choice(parts) for _ in range(rng.randint(0, 8))) for _ in range(3000)]
    assert [sources.chunk_asks(t) for t in texts] == [_asks_by_the_pattern_alone(t) for t in texts]

    class Counting:
        def __init__(self):
            self.calls = 0

        def sub(self, repl, text):
            self.calls += 1
            return sources._ASIDE_PATTERN.sub(repl, text)

    monkeypatch.setattr(sources, "_ASIDE_PATTERN", sources._ASIDE, raising=False)
    counting = Counting()
    monkeypatch.setattr(sources, "_ASIDE", counting)
    assert sources.chunk_asks("a hundred words that end in a question mark?  ")
    assert not sources.chunk_asks("a statement (with an aside) in the middle.")
    assert counting.calls == 0  # a bulk load's chunks mostly end this way: the pattern tries every position
    assert sources.chunk_asks("Where was it? [shares a photo]")
    assert counting.calls == 1  # the aside left out; what is left ends with "?", not a bracket


def _asked(cid: str, question: bool, score: float) -> Hit:
    return Hit(chunk=Chunk(id=cid, path=f"{cid}.md", text="", question=question), scores={"score": score})


def test_question_rescore_lowers_the_hits_that_are_questions():
    from reme_es.store.fusion import question_rescore

    hits = [_asked("q", True, 1.0), _asked("a", False, 0.9), _asked("b", False, 0.7)]
    out = question_rescore(hits, 0.8)
    # the question keeps 0.8 of its score: 0.8 < 0.9, > 0.7
    assert [h.chunk.id for h in out] == ["a", "q", "b"]
    assert out[1].score == pytest.approx(0.8) and out[1].scores["question"] == 1.0
    assert "question" not in out[0].scores
    assert question_rescore(hits, 1.0) is hits  # 1: off
    statements = [_asked("a", False, 1.0), _asked("b", False, 0.5)]
    assert question_rescore(statements, 0.5) is statements


def test_question_rescore_lowers_a_question_below_zero_too():
    from reme_es.store.fusion import question_rescore

    # z-score fusion gives scores below 0: the cut is taken above the lowest, so it lowers them as well
    hits = [_asked("a", False, -0.1), _asked("q", True, -0.05), _asked("b", False, -1.0)]
    out = question_rescore(hits, 0.5)
    assert [h.chunk.id for h in out] == ["a", "q", "b"]
    assert out[1].score == pytest.approx(-1.0 + 0.95 * 0.5)
    assert [h.chunk.id for h in question_rescore(hits, 0.99)] == ["q", "a", "b"]  # -1 + 0.95 x 0.99 > -0.1


def _turn(cid: str, speaker: str, words: int, score: float) -> Hit:
    return Hit(chunk=Chunk(id=cid, path=f"{cid}.md", text="", speaker=speaker, words=words), scores={"score": score})


def test_turn_length_rescore_lifts_long_turns_and_lowers_short_ones_against_the_median():
    import math

    from reme_es.store.fusion import MIN_LENGTH_FACTOR, turn_length_rescore

    hits = [_turn("wow", "mel", 3, 1.0), _turn("mid", "mel", 12, 0.9), _turn("long", "cal", 48, 0.8)]
    out = turn_length_rescore(hits, 0.3)
    # the median is 12 words: 3 words x (1 + 0.3 ln 0.25) = 0.584, 12 x 1, 48 x (1 + 0.3 ln 4) = 1.333
    assert [h.chunk.id for h in out] == ["long", "mid", "wow"]
    assert out[0].score == pytest.approx(0.8 * (1 + 0.3 * math.log(4)))
    assert out[2].scores["length"] == pytest.approx(1 + 0.3 * math.log(0.25))
    assert turn_length_rescore(hits, 0.0) is hits
    # a very short turn keeps at least MIN_LENGTH_FACTOR of its score
    tiny = turn_length_rescore([_turn("a", "x", 1, 1.0), _turn("b", "x", 1000, 0.1), _turn("c", "x", 30, 0.1)], 2.0)
    assert {h.chunk.id: h.scores["length"] for h in tiny}["a"] == MIN_LENGTH_FACTOR


def test_turn_length_rescore_leaves_chunks_without_a_speaker_or_a_word_count():
    from reme_es.store.fusion import turn_length_rescore

    notes = [_turn("a", "", 3, 1.0), _turn("b", "", 300, 0.5)]  # notes, sections, abstracts: no speaker
    assert turn_length_rescore(notes, 0.3) is notes
    mixed = [
        _turn("note", "", 2, 0.95),
        _turn("short", "jo", 2, 1.0),
        _turn("old", "jo", 0, 0.9),
        _turn("l", "jo", 8, 0.5),
    ]
    out = turn_length_rescore(mixed, 0.3)
    by_id = {h.chunk.id: h for h in out}
    assert "length" not in by_id["note"].scores and "length" not in by_id["old"].scores  # written before `words`
    assert by_id["note"].score == 0.95 and by_id["old"].score == 0.9
    assert by_id["short"].score < 1.0 and by_id["l"].score > 0.5  # the median of 2 and 8 words is 5
