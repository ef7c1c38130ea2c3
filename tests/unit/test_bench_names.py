"""The bench scripts that use `reme_backends` as `rb` only name what it has (a split once left `rb.DIMS` dangling,
and bench/perf/concurrency.py failed at its first ingest)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
USERS = sorted(p for p in BENCH.rglob("*.py") if "import reme_backends as rb" in p.read_text())


def test_the_bench_scripts_that_use_reme_backends_are_found():
    assert {p.name for p in USERS} >= {"concurrency.py", "settle.py", "vector_options.py"}


@pytest.mark.parametrize("script", USERS, ids=lambda p: p.name)
def test_every_name_a_bench_script_takes_from_reme_backends_exists(script):
    pytest.importorskip("reme", reason="the bench runs ReMe: pip install 'reme-es[reme]'")
    rb = importlib.import_module("bench.compare.reme_backends")
    used = set(re.findall(r"\brb\.([A-Za-z_][A-Za-z0-9_]*)", script.read_text()))
    assert used, script
    assert sorted(n for n in used if not hasattr(rb, n)) == []
