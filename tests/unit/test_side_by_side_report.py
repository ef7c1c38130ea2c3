"""The report of `./run bench-perf` (bench/perf/side_by_side.py) from saved runs: a cell per run, ingest to steady
state counted as upsert + dump + merging, and each target judged per run. Pure: the runs are JSON files written here."""

from __future__ import annotations

import json

from bench.perf.side_by_side import report


def lat(p50: float) -> dict:
    return {"p50": p50, "p95": p50 * 2, "n": 40}


def reme_rows(es_keyword: float, raw_keyword: float, es_vector: float, merge: float) -> list[dict]:
    faiss = {
        "backend": "faiss",
        "upsert_s": 50.0,
        "dump_s": 10.0,
        "restart_s": 4.0,
        "recall_at_10": 0.5,
        "latency": {"keyword": lat(1.0), "vector": lat(2.0)},
    }
    es = {
        "backend": "opensearch-3",
        "upsert_s": 70.0,
        "dump_s": 0.0,
        "merge_s": merge,
        "restart_s": 0.1,
        "recall_at_10": 0.98,
        "latency": {"keyword": lat(es_keyword), "vector": lat(es_vector)},
        "raw": {"keyword": lat(raw_keyword), "vector": lat(es_vector)},
    }
    return [faiss, es]


def memorie(add: float, load_s: float) -> dict:
    common = {"shape": "zipf", "size": 100_000, "loadN": 100_000}
    return {
        "rows": [
            {
                **common,
                "backend": "fts5 + brute force",
                "add": lat(0.2),
                "loadS": 5.0,
                "keyword": lat(1.0),
                "vector": lat(100.0),
                "recall": 1.0,
            },
            {
                **common,
                "backend": "reme-es (opensearch 3.5.0)",
                "add": lat(add),
                "loadS": load_s,
                "keyword": lat(4.0),
                "vector": lat(10.0),
                "recall": 0.99,
            },
        ]
    }


def test_two_runs_side_by_side_with_the_targets_judged_per_run(tmp_path):
    runs = {
        "run1": (reme_rows(6.0, 5.5, 12.0, merge=5.0), memorie(add=4.5, load_s=25.0)),
        "run2": (reme_rows(7.0, 5.0, 5.0, merge=0.0), memorie(add=5.5, load_s=15.0)),
    }
    for name, (rows, mem) in runs.items():
        d = tmp_path / name
        d.mkdir()
        (d / "hash.json").write_text(json.dumps(rows))
        (d / "memorie.json").write_text(json.dumps(mem))
        (d / "steps.json").write_text(json.dumps([{"step": "hash", "seconds": 60, "busy_before": 0.01}]))

    text = report(tmp_path)
    assert (tmp_path / "report.md").read_text() == text
    lines = text.splitlines()

    def row(start: str) -> str:
        return next(line for line in lines if line.startswith(start))

    # ingest to steady state: 70 + 0 + 5 = 75 s, then 70 s; faiss 60 s: 0.80x, then 0.86x its speed
    assert "75.0 / 70.0 (0.80x / 0.86x)" in row("| hash | opensearch-3 |")
    assert "| 6.00 / 7.00 |" in row("| hash | opensearch-3 |")
    # keyword against the same request raw: 6/5.5 = 1.09 (met), 7/5 = 1.40 (missed)
    assert row("| 2 (hash, opensearch-3) |").endswith("| 1.09 / 1.40 | yes / no |")
    # vector against faiss' 2 ms: 6x, then 2.5x
    assert row("| 3 (hash, opensearch-3) | vector").endswith("| 6.00 / 2.50 | no / yes |")
    assert row("| 4 (hash, opensearch-3) |").endswith("| 0.80 / 0.86 | yes / yes |")
    # Memorie: bulk 100,000 / 25 s = 4,000/s (missed), / 15 s = 6,667/s (met); add 4.5 ms met, 5.5 missed
    assert row("| 6 (Memorie, zipf) | bulk").endswith("| 4,000 / 6,667 | no / yes |")
    assert row("| 6 (Memorie, zipf) | add").endswith("| 4.50 / 5.50 | yes / no |")
    assert row("| 6 (Memorie, zipf) | keyword").endswith("| 4.0 / 4.0 | yes / yes |")


def test_a_missing_step_is_a_dash_not_a_failure(tmp_path):
    (tmp_path / "run1").mkdir()
    (tmp_path / "run1" / "hash.json").write_text(json.dumps(reme_rows(6.0, 5.5, 12.0, merge=5.0)))
    (tmp_path / "run2").mkdir()  # a run whose steps have not written anything yet
    text = report(tmp_path)
    assert "| 6.00 / - |" in text
    assert "Memorie, zipf" not in text
