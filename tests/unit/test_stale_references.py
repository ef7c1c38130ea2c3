"""Docs, docstrings and comments name only files that exist: a path like `reme_es/...`, `tests/...`, `docs/...` or
`bench/...` written in the README, docs/ or the code must be in the checkout (issue 41: docs/tests.md named the
CLI's integration module long after it was split in four). A path counts when it has a suffix or stands in
backquotes; globs are skipped."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PATH = re.compile(r"(?<![\w./-])((?:reme_es|tests|bench|docs|examples|memorie/src|memorie/test)/[\w./-]*\w)")
# Written by runs: the benchmarks' result files (git-ignored) and plots (`--png`; a page's missing image is what
# the strict docs build reports).
GENERATED = ("bench/results/", "docs/img/")


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return out.split()


def test_named_paths_exist():
    tracked = _tracked()
    folders = {str(Path(f).parents[i]) for f in tracked for i in range(len(Path(f).parts) - 1)}
    known = set(tracked) | folders
    readers = [
        f
        for f in tracked
        if f.endswith((".md", ".py")) and not f.startswith(("docs/history/", "memorie/")) and "HISTORY" not in f
    ]
    missing = []
    for name in readers:
        for number, line in enumerate((ROOT / name).read_text(encoding="utf-8").splitlines(), 1):
            for match in PATH.finditer(line):
                path = match.group(1).rstrip(".").split("::")[0]
                after, before = line[match.end() : match.end() + 1], line[match.start() - 1 : match.start()]
                named = "." in Path(path).name or (before == after == "`")  # not prose such as "docs/s"
                if not named or after in ("*", "{", "-") or path in known or path.startswith(GENERATED):
                    continue
                if (ROOT / path).exists():  # a new file not added yet (another change in progress)
                    continue
                missing.append(f"{name}:{number}: {path}")
    assert missing == []
