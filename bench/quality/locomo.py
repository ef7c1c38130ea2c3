"""Retrieval quality on LoCoMo's development half: the drop-in's default path beside ReMe's own `local` store.

    python -m bench.quality.locomo --url http://127.0.0.1:9200 [--es-url http://127.0.0.1:9201]
                                   [--data /work/shared/data/locomo-dev]
                                   [--prefix bench-locomo] [--variants default,off] [--png docs/img/locomo.png]
                                   [--out bench/results/locomo.txt]

LoCoMo ("Evaluating Very Long-Term Conversational Memory of LLM Agents", ACL 2024) holds ten long conversations; five
are the development half in `--data` (26, 30, 41, 42, 43), the other five are the project's held-out check and are
never read here. It measures what the held-out check measures (the data folder's README):
  * each conversation is one workspace of one index set; each session one note `daily/<session date>/<conv>-session-
    <n>.md`; each turn one chunk `"<speaker>: <text>"` (` [shares <caption>]` where a photo was shared), written
    through ReMe's file-store interface (`upsert`), with offline MiniLM vectors;
  * every question of categories 1-4 is searched through the drop-in's default path (`es_search_step`: the store's
    ranked search, 50 candidates per branch, top 10);
  * recall@k = the share of a question's evidence turns in the top k, averaged over questions, overall and per
    category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop).
ReMe's `local` store is measured in the same run the same way: keyword, vector, and ReMe's own fusion (its search
step) at vector weights 0.7, 0.5 and 0.3.

Settings are chosen on conversations 26, 30 and 41 ("tune") and reported on 42 and 43 ("report") beside the whole
half, so an overfit shows. `--variants` adds rows of the drop-in with store settings changed (bench/quality/locomo.py's
VARIANTS: each a named set of `SearchOptions` fields), searched through `ranked_search` at the same depth.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.common import PLOTS, RESULTS, Report, table
from bench.quality import memory_quality as mq

CONVERSATIONS = ("26", "30", "41", "42", "43")
TUNE, REPORT = ("26", "30", "41"), ("42", "43")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
DEPTH, LIMIT = 50, 10  # what ReMe's search step asks each branch for at limit 10, and the top it shows
REME_WEIGHTS = (0.7, 0.5, 0.3)
# Rows of the drop-in with some search settings changed (IndexSet attributes, as SearchOptions names them).
VARIANTS: dict[str, dict] = {
    "default (ranked_search)": {},
    "before the fifth round": {
        "note_boost": 0.0,
        "context_boost": 0.0,
        "speaker_boost": 0.0,
        "date_boost": 0.2,
        "question_factor": 1.0,
        "turn_length": 0.0,
    },
    "before this round": {"question_factor": 1.0, "turn_length": 0.0},
    "context 0": {"context_boost": 0.0},
    "context 0.2": {"context_boost": 0.2},
    "context 0.6": {"context_boost": 0.6},
    "speaker boost 0": {"speaker_boost": 0.0},
    "speaker boost 0.1": {"speaker_boost": 0.1},
    "speaker boost 0.3": {"speaker_boost": 0.3},
    "note boost 0": {"note_boost": 0.0},
    "note boost 0.25": {"note_boost": 0.25},
    "note boost 1": {"note_boost": 1.0},
    "date boost 0": {"date_boost": 0.0},
    "date boost 0.2": {"date_boost": 0.2},
    "date boost 1": {"date_boost": 1.0},
    "feedback 0": {"feedback": 0},
    "vector weight 0.45": {"vector_weight": 0.45},
    "vector weight 0.65": {"vector_weight": 0.65},
    "depth 100": {"_depth": 100},
    "depth 200": {"_depth": 200},
    "question factor 1 (off)": {"question_factor": 1.0},
    "question factor 0.7": {"question_factor": 0.7},
    "question factor 0.9": {"question_factor": 0.9},
    "turn length 0 (off)": {"turn_length": 0.0},
    "turn length 0.2": {"turn_length": 0.2},
    "turn length 0.4": {"turn_length": 0.4},
}
PLOTTED = (
    "reme-es default (es_search_step)",
    "reme-es before this round",
    "ReMe local, keyword",
    "ReMe local, vector",
    "ReMe local, ReMe fusion 0.3",
)
_DATE = re.compile(r"(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})")
_DIA = re.compile(r"^D:?(\d+):(\d+)$")


def session_date(raw: str) -> dt.date:
    """A session's date from LoCoMo's `1:56 pm on 8 May, 2023`."""
    m = _DATE.search(raw)
    if not m:
        raise ValueError(f"unreadable session date {raw!r}")
    return dt.datetime.strptime(f"{m[1]} {m[2][:3]} {m[3]}", "%d %b %Y").date()


def turn_text(turn: dict) -> str:
    """A turn as one chunk: `<speaker>: <text>`, with the shared photo's caption where there is one."""
    text = f"{turn['speaker']}: {turn['text']}"
    return f"{text} [shares {turn['blip_caption']}]" if turn.get("blip_caption") else text


def evidence_ids(raw: list[str], by_dia: dict[str, str]) -> list[str]:
    """The chunk ids of a question's evidence turns. The files hold a few malformed entries ("D8:6; D9:17",
    "D:11:26"): each `D<session>:<turn>` found is read, and one that names no turn of the conversation is dropped."""
    out = []
    for entry in raw:
        for part in re.split(r"[;,\s]+", entry.strip()):
            m = _DIA.match(part)
            if m and (cid := by_dia.get(f"D{m[1]}:{m[2]}")):
                out.append(cid)
    return list(dict.fromkeys(out))


def conversation(path: Path) -> mq.Dataset:
    """One conversation as a Dataset: a note per session, a chunk per turn; its questions of categories 1-4 with
    evidence; `kinds` holds each question's category name."""
    raw = json.loads(path.read_text())
    conv = raw.get("conversation", raw)
    name = path.stem
    files: dict[str, list[tuple[str, int, str]]] = {}
    by_dia: dict[str, str] = {}
    n = 1
    while f"session_{n}" in conv:
        date = session_date(conv[f"session_{n}_date_time"])
        note = f"daily/{date.isoformat()}/conv-{name}-session-{n}.md"
        for line, turn in enumerate(conv[f"session_{n}"], start=1):
            cid = f"{note}#{line}"
            by_dia[turn["dia_id"]] = cid
            files.setdefault(note, []).append((cid, line, turn_text(turn)))
        n += 1
    queries, gains, kinds = [], [], []
    for qa in raw["qa"]:
        if qa.get("category") not in CATEGORIES:
            continue
        evidence = evidence_ids(qa.get("evidence", []), by_dia)
        if not evidence:
            continue
        queries.append(str(qa["question"]))
        gains.append({c: 1 for c in evidence})
        kinds.append(CATEGORIES[qa["category"]])
    return mq.Dataset(name, files, queries, gains, kinds)


# ------------------------------------------------------------------------------------------ runs


async def drop_in(
    sets: list[mq.Dataset],
    url: str,
    prefix: str,
    work: Path,
    variants: list[str],
    today: dt.date | None = None,
    engine: str = "opensearch",
):
    """Per conversation and row: the ranked chunk ids of every question; and the milliseconds per search. `today`:
    what the stores' date hints count from (None: the current date); `engine`: the file store's backend
    (opensearch, elasticsearch) at `url`. Beside the default path and `variants`, each branch alone (the store's
    `keyword_search` and `vector_search`, top 10)."""
    runs: dict[str, dict[str, list[list[str]]]] = {}
    ms: dict[str, list[float]] = {}
    apps = []
    try:
        for d in sets:
            ws = work / f"locomo-{engine}-{d.name}"
            ws.mkdir(parents=True, exist_ok=True)
            app = mq.make_app(mq.app_config(ws, engine, url, prefix))
            await app.start()
            apps.append(app)
            fs = app.context.components["file_store"]["default"]
            await fs.clear()
            await mq.index(fs, d, mq.PASSAGE_VECTORS)
        for d, app in zip(sets, apps):
            fs = app.context.components["file_store"]["default"]
            ix = fs.store.indices
            ix.today = today
            for q in d.queries:
                t0 = time.perf_counter()
                resp = await app.run_job("search_es", query=q, limit=LIMIT)
                ms.setdefault("default (es_search_step)", []).append((time.perf_counter() - t0) * 1000)
                runs.setdefault("default (es_search_step)", {}).setdefault(d.name, []).append(
                    [r["id"] for r in resp.metadata.get("results", [])]
                )
                for label, branch in (("keyword branch", fs.keyword_search), ("vector branch", fs.vector_search)):
                    hits = await branch(q, LIMIT, {})
                    runs.setdefault(label, {}).setdefault(d.name, []).append([c.id for c in hits])
                for name in variants:
                    settings = dict(VARIANTS[name])
                    depth = settings.pop("_depth", DEPTH)  # not a setting: the depth the search is asked for
                    with searching(ix, **settings):
                        t0 = time.perf_counter()
                        fused, _ = await fs.ranked_search(q, depth, {}, 0.0, LIMIT)
                        ms.setdefault(name, []).append((time.perf_counter() - t0) * 1000)
                    runs.setdefault(name, {}).setdefault(d.name, []).append([c.id for c in fused[:LIMIT]])
    finally:
        for app in apps:
            fs = app.context.components["file_store"]["default"]
            await fs.clear()
        if apps:
            await apps[-1].context.components["file_store"]["default"].store.drop()
        for app in apps:
            await app.close()
    return runs, {k: statistics.median(v) for k, v in ms.items()}


class searching:
    """The store's search settings (the index set's attributes) changed for a `with` block, then put back."""

    def __init__(self, ix, **settings):
        self.ix, self.settings, self.saved = ix, settings, {}

    def __enter__(self):
        for k, v in self.settings.items():
            self.saved[k] = getattr(self.ix, k)
            setattr(self.ix, k, v)

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            setattr(self.ix, k, v)


async def reme_local(sets: list[mq.Dataset], work: Path) -> dict[str, dict[str, list[list[str]]]]:
    """ReMe's `local` store: keyword, vector and ReMe's own fusion at each of REME_WEIGHTS."""
    runs: dict[str, dict[str, list[list[str]]]] = {}
    for d in sets:
        ws = work / f"local-{d.name}"
        ws.mkdir(parents=True, exist_ok=True)
        app = mq.make_app(mq.app_config(ws, "local", "", ""))
        await app.start()
        fs = app.context.components["file_store"]["default"]
        try:
            await mq.index(fs, d, mq.VECTORS)
            for q in d.queries:
                runs.setdefault("keyword", {}).setdefault(d.name, []).append(
                    [c.id for c in await fs.keyword_search(q, LIMIT, {})]
                )
                runs.setdefault("vector", {}).setdefault(d.name, []).append(
                    [c.id for c in await fs.vector_search(q, LIMIT, {})]
                )
                for w in REME_WEIGHTS:
                    resp = await app.run_job("search", query=q, limit=LIMIT, vector_weight=w)
                    runs.setdefault(f"ReMe fusion {w}", {}).setdefault(d.name, []).append(
                        [r["id"] for r in resp.metadata.get("results", [])]
                    )
        finally:
            await app.close()
    return runs


# ------------------------------------------------------------------------------------------ report


def figures(runs: dict[str, list[list[str]]], sets: dict[str, mq.Dataset], names: tuple[str, ...]) -> dict:
    """recall@5 and @10 over the questions of conversations `names`, and recall@10 per category."""
    r5, r10, kinds = [], [], {}
    for name in names:
        d = sets[name]
        for ranked, gains, kind in zip(runs[name], d.gains, d.kinds):
            r5.append(mq.recall_at(ranked, gains, 5))
            r10.append(mq.recall_at(ranked, gains, 10))
            kinds.setdefault(kind, []).append(r10[-1])
    return {
        "R@5": statistics.fmean(r5),
        "R@10": statistics.fmean(r10),
        **{k: statistics.fmean(kinds.get(k, [float("nan")])) for k in CATEGORIES.values()},
    }


def plot(rows: list[tuple[str, dict]], path: Path) -> None:
    """Recall@10 per category and overall, one group of bars per row."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    cols = ["R@10", *CATEGORIES.values()]
    fig, ax = plt.subplots(figsize=(11, 4.8))
    width = 0.8 / len(rows)
    for i, (label, f) in enumerate(rows):
        xs = np.arange(len(cols)) + i * width
        ax.bar(xs, [f[c] for c in cols], width, label=label)
    ax.set_xticks(np.arange(len(cols)) + 0.4 - width / 2, ["overall", *CATEGORIES.values()])
    ax.set_ylabel("recall@10 of evidence turns")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7, loc="upper left")
    ax.set_title("LoCoMo development half (5 conversations, 760 questions), top 10, MiniLM (bench/quality/locomo.py)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def finish(report: Report, runs: dict, ms: dict, sets: dict[str, mq.Dataset], args) -> None:
    """The tables (whole half, tune and report parts, per category), the plot, the saved report."""
    every = tuple(sets)
    tune = tuple(n for n in TUNE if n in sets)
    rep = tuple(n for n in REPORT if n in sets)
    rows = []
    for label, per_conv in runs.items():
        whole = figures(per_conv, sets, every)
        rows.append(
            (
                label,
                whole,
                figures(per_conv, sets, tune) if tune else None,
                figures(per_conv, sets, rep) if rep else None,
            )
        )
    head = ["store, row", "R@5", "R@10", *CATEGORIES.values(), "tune R@10", "report R@10", "p50 ms"]
    report(
        table(
            head,
            [
                [
                    label,
                    f"{w['R@5']:.3f}",
                    f"{w['R@10']:.3f}",
                    *(f"{w[k]:.3f}" for k in CATEGORIES.values()),
                    f"{t['R@10']:.3f}" if t else "",
                    f"{r['R@10']:.3f}" if r else "",
                    f"{ms[label.removeprefix('reme-es ')]:.1f}" if label.removeprefix("reme-es ") in ms else "",
                ]
                for label, w, t, r in rows
            ],
            title=f"\n## LoCoMo development half ({', '.join(every)}): tune {', '.join(tune)}; report {', '.join(rep)}",
        )
    )
    report.save(args.out, "locomo", "opensearch")
    Path(args.out or RESULTS / "locomo.txt").with_suffix(".json").write_text(json.dumps({"runs": runs, "ms": ms}))
    if args.png:
        plot([(label, w) for label, w, _, _ in rows if label in PLOTTED], Path(args.png))


async def generated(args, report: Report) -> None:
    """`--generated`: the drop-in's default and its state before this round, and ReMe's local store, on generated
    sets (bench/quality/heldout.py's, with their TODAY), recall@10 overall and per kind of question."""
    from bench.data import memory2, memory3
    from bench.quality import heldout

    modules = {"memory2": memory2, "memory3": memory3}
    mq.use_model(args.model)
    for name in args.generated.split(","):
        d = heldout.generated_set(name, modules[name])
        texts = [t for cs in d.files.values() for _, _, t in cs]
        mq.embed_all(texts + d.queries)
        mq.embed_all(texts, side="passage")
        work = Path(tempfile.mkdtemp(prefix="reme-es-locomo-"))
        try:
            runs, _ = await drop_in([d], args.url, args.prefix, work, ["before this round"], today=heldout.TODAY[name])
            runs.update({f"ReMe local, {k}": v for k, v in (await reme_local([d], work)).items()})
        finally:
            shutil.rmtree(work, ignore_errors=True)
        kinds = list(dict.fromkeys(d.kinds))
        rows = []
        for label, per in runs.items():
            r10 = [mq.recall_at(r, g, LIMIT) for r, g in zip(per[d.name], d.gains)]
            rows.append(
                [
                    label,
                    f"{statistics.fmean(r10):.3f}",
                    *(f"{statistics.fmean(v for v, k in zip(r10, d.kinds) if k == kind):.3f}" for kind in kinds),
                ]
            )
        report(table(["store, row", "R@10", *kinds], rows, title=f"\n## {name}: {len(d.queries)} questions"))
    report.save(args.out, "locomo-generated", "opensearch")


def without_analysis() -> None:
    """Elasticsearch nodes taken as lacking the `english` and `cjk` analyzers (and so the stemmers): the chunks index
    falls back as it did on the managed node before reme-es' test analysis plugin gave them (issue 50 item 4)."""
    from reme_es.adapters.elasticsearch import ElasticsearchDialect

    probed = ElasticsearchDialect.capabilities

    def capabilities(node: dict, analyzers: dict[str, bool], license_type: str | None = None):
        return probed(node, {**analyzers, "english": False, "cjk": False}, license_type)

    ElasticsearchDialect.capabilities = staticmethod(capabilities)  # type: ignore[method-assign]


def engines(args) -> list[tuple[str, str]]:
    """The (backend, url) pairs the drop-in runs on: OpenSearch at --url (unless empty), Elasticsearch at --es-url."""
    out = [("opensearch", args.url)] if args.url else []
    return out + ([("elasticsearch", args.es_url)] if args.es_url else [])


async def main() -> None:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:9200", help="an OpenSearch node ('': none)")
    p.add_argument(
        "--es-url", default="", help="an Elasticsearch node: the drop-in's rows again on it, in the same run"
    )
    p.add_argument("--data", default="/work/shared/data/locomo-dev")
    p.add_argument("--prefix", default="bench-locomo", help="the index set of the run, dropped at the end")
    p.add_argument("--conversations", default=",".join(CONVERSATIONS))
    p.add_argument("--variants", default=",".join(VARIANTS), help="rows of the drop-in with settings changed")
    p.add_argument("--no-local", action="store_true", help="leave ReMe's local store out")
    p.add_argument(
        "--es-without-analysis",
        action="store_true",
        help="the Elasticsearch node taken as lacking the english/cjk analyzers (the fallback before issue 50)",
    )
    p.add_argument("--model", default="minilm", help="the encoder of every vector (bench/quality/memory_models.py)")
    p.add_argument(
        "--generated",
        default="",
        help="instead of LoCoMo: bench/quality/heldout.py's generated sets by name "
        "(memory2, memory3), whole, through the same runners (the default, 'before this round', ReMe local)",
    )
    p.add_argument("--png", default=str(PLOTS / "locomo.png"))
    p.add_argument("--out", default=str(RESULTS / "locomo.txt"))
    args = p.parse_args()
    report = Report()
    if args.es_without_analysis:
        without_analysis()
    if args.generated:
        return await generated(args, report)
    sets = {c: conversation(Path(args.data) / f"{c}.json") for c in args.conversations.split(",")}
    report(
        ", ".join(
            f"{d.name}: {sum(len(c) for c in d.files.values())} turns in {len(d.files)} sessions, "
            f"{len(d.queries)} questions"
            for d in sets.values()
        )
    )
    texts = [t for d in sets.values() for cs in d.files.values() for _, _, t in cs]
    mq.use_model(args.model)
    questions = [q for d in sets.values() for q in d.queries]
    # ReMe's local store embeds its texts as ReMe's interface does (the question side); the drop-in the passage side
    mq.embed_all(questions if args.no_local else texts + questions)
    mq.embed_all(texts, side="passage")
    variants = [v for v in args.variants.split(",") if v]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        raise SystemExit(f"--variants takes {', '.join(VARIANTS)}, not {', '.join(unknown)}")
    work = Path(tempfile.mkdtemp(prefix="reme-es-locomo-"))
    runs: dict[str, dict] = {}
    try:
        ms = {}
        for engine, url in engines(args):
            t0 = time.perf_counter()
            es_runs, es_ms = await drop_in(list(sets.values()), url, args.prefix, work, variants, engine=engine)
            label = "reme-es " if engine == "opensearch" else f"reme-es on {engine}: "
            runs.update({f"{label}{k}": v for k, v in es_runs.items()})
            ms.update({f"{label}{k}".removeprefix("reme-es "): v for k, v in es_ms.items()})
            print(f"drop-in on {engine}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        if not args.no_local:
            t0 = time.perf_counter()
            runs.update({f"ReMe local, {k}": v for k, v in (await reme_local(list(sets.values()), work)).items()})
            print(f"ReMe local: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    finish(report, runs, ms, sets, args)


if __name__ == "__main__":
    asyncio.run(main())
