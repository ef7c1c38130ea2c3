"""bench/quality/wordnet.py reads WordNet's plain database files (`man 5 wndb`): a made-up database of a few synsets,
written with the byte offsets the real files use, and the class words the reader finds in it."""

from __future__ import annotations

import pytest

from bench.quality.wordnet import WordNet

# name -> (words, [(pointer, target name)]); the real files' lines, shortened.
SYNSETS = {
    "municipality": (["municipality"], []),
    "city": (["city", "metropolis"], [("@", "municipality")]),
    "seattle": (["Seattle"], [("@i", "city")]),
    "utensil": (["utensil"], []),
    "ceramic_ware": (["ceramic_ware"], [("@", "utensil")]),
    "pottery": (["pottery", "clayware"], [("@", "ceramic_ware")]),
    "room": (["room"], []),
    "toilet": (["toilet", "john"], [("@", "room")]),
    "activity": (["activity"], []),
    "game": (["game"], [("@", "activity")]),
    "video_game": (["video_game"], [("@", "game")]),
    "go": (["go"], [("@", "game")]),  # the board game: as a verb "go" is tagged far more often
}
TAGS = {"game%1:04:00::": 38, "go%1:04:00::": 0, "go%2:38:00::": 598, "seattle%1:15:00::": 2, "pottery%1:06:00::": 10}


@pytest.fixture(scope="module")
def wordnet(tmp_path_factory) -> WordNet:
    folder = tmp_path_factory.mktemp("wordnet")
    header = "  1 This software and database is being provided to you, the LICENSEE, by  \n"

    def line(name: str, offsets: dict[str, int]) -> str:
        words, pointers = SYNSETS[name]
        ptrs = " ".join(f"{p} {offsets[t]:08d} n 0000" for p, t in pointers)
        body = f"04 n {len(words):02x} " + " ".join(f"{w} 0" for w in words) + f" {len(pointers):03d} {ptrs}"
        return f"{offsets[name]:08d} {body.replace('  ', ' ')}| a gloss  \n"

    offsets, at = {}, len(header)
    for name in SYNSETS:  # every line's length is the same whatever its offsets: 8 digits each
        offsets[name] = at
        at += len(line(name, {n: 0 for n in SYNSETS}).encode())
    (folder / "data.noun").write_text(header + "".join(line(n, offsets) for n in SYNSETS), encoding="utf-8")
    lemmas: dict[str, list[int]] = {}
    for name, (words, _) in SYNSETS.items():
        for w in words:
            lemmas.setdefault(w.lower(), []).append(offsets[name])
    index = "".join(f"{w} n {len(o)} 0 {len(o)} 0 {' '.join(f'{x:08d}' for x in o)}  \n" for w, o in lemmas.items())
    (folder / "index.noun").write_text(header + index, encoding="utf-8")
    (folder / "index.sense").write_text("".join(f"{k} 00000000 1 {n}\n" for k, n in TAGS.items()), encoding="utf-8")
    return WordNet(folder)


def test_plural_nouns_are_reduced_by_wordnets_suffix_rules(wordnet):
    assert [wordnet.noun(w) for w in ("cities", "games", "Seattle", "potteries", "xylophones")] == [
        "city",
        "game",
        "seattle",
        "pottery",
        None,
    ]


def test_nouns_pairs_first_and_no_word_more_often_a_verb(wordnet):
    assert wordnet.nouns("We go to Seattle to play video games.") == ["video_game", "seattle", "game"]
    assert wordnet.nouns("We go to Seattle to play video games.", rarer_than=30) == ["video_game", "seattle"]


def test_hypernyms_and_instance_hypernyms_levels_up(wordnet):
    assert wordnet.classes("seattle") == ["city", "metropolis"]
    assert wordnet.classes("seattle", levels=2) == ["city", "metropolis", "municipality"]
    assert wordnet.classes("seattle", kinds="instance") == ["city", "metropolis"]
    assert wordnet.classes("pottery", kinds="instance") == []
    assert wordnet.classes("pottery", levels=2) == ["ceramic ware", "utensil"]


def test_class_words_leave_out_the_speakers_and_the_texts_own_nouns(wordnet):
    text = "John: we did pottery and a video game, John"
    assert wordnet.class_words(text, skip=frozenset({"john"})) == ["ceramic ware", "activity"]  # not "game"
    assert wordnet.class_words(text) == ["room", "ceramic ware", "activity"]
