"""The screenshots of docs/ui.md, made by Debian's Chromium from a real `reme-es ui` run.

    python -m bench.ui.screenshots --url http://127.0.0.1:9200 [--out docs/img]   (`./run ui-screenshots`)

Syncs two copies of examples/workspace (offline MiniLM vectors) into a set of its own, writes a Memorie tenant's
memories and relations (tests/ui/memorie_docs.py: the package's templates and document shapes), starts `reme-es ui`
on it with --allow-writes, opens each page (overview, workspace, file, search, forget, access, Memorie tenant) and
saves `ui-<page>.png`; the set and the Memorie indices are dropped afterwards. Nothing is forgotten: the forget page
is shown, not submitted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from tests.ui.conftest import CHROMIUM, FLAGS, UiRun
from tests.ui.memorie_docs import bulk, http, memorie_index, memory, relation

ROOT = Path(__file__).resolve().parents[2]
QUERY = "why did a search miss a note"
TENANT = "helpdesk"
MEMORIES = [
    "The customer prefers answers in French",
    "Ticket 4411: the export to CSV times out above 50k rows",
    "Workaround for slow exports: export by month",
    "Export timeouts were fixed in release 2.8",
    "The customer asked twice about SSO setup",
]


def _memorie(url: str, prefix: str) -> None:
    """A Memorie tenant (and another one with the same texts, which its page must not show)."""
    memories, relations = memorie_index(url, prefix, "memories"), memorie_index(url, prefix, "relations")
    bulk(memories, [memory(t, n, text) for t in (TENANT, "other") for n, text in enumerate(MEMORIES)])
    links = [(2, 1, "resolves", "r-1"), (3, 1, "supersedes", "r-2"), (3, 2, "related_to", "r-3")]
    bulk(relations, [relation(TENANT, a, b, kind, rid) for a, b, kind, rid in links])


def _cli(*args: str, home: Path) -> None:
    env = {**os.environ, "REME_ES_HOME": str(home)}
    subprocess.run([sys.executable, "-m", "reme_es.cli", *args], check=True, env=env, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="a running node")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    prefix = f"ui-shots-{uuid.uuid4().hex[:6]}"
    with tempfile.TemporaryDirectory() as tmp:
        home, keys = Path(tmp) / "home", []
        for name in ("team-notes", "agent-7"):
            folder = Path(tmp) / name
            shutil.copytree(ROOT / "examples" / "workspace", folder)
            _cli("sync", str(folder), "--hosts", args.url, "--index-prefix", prefix, "--embedding", "local", home=home)
            from reme_es.core.options import default_workspace_key

            keys.append(default_workspace_key(folder))
        _memorie(args.url, prefix)
        run = UiRun(["--hosts", args.url, "--index-prefix", prefix, "--allow-writes"], home)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
                page = browser.new_page(viewport={"width": 1200, "height": 800})
                page.goto(run.url)
                ws = f"{run.base}/w/{keys[0]}"
                shots = {
                    "overview": run.base + "/",
                    "workspace": ws,
                    "file": f"{ws}/file?path=digest%2Fproject-atlas.md",
                    "search": f"{ws}/search?q={QUERY.replace(' ', '+')}&limit=3",
                    "forget": f"{ws}/forget",
                    "access": f"{run.base}/access",
                    "memorie": f"{run.base}/m/{TENANT}?q=export+timeout&limit=2",
                }
                args.out.mkdir(parents=True, exist_ok=True)
                for name, url in shots.items():
                    page.goto(url)
                    if name == "search":
                        page.locator("#stages summary").click()
                    page.screenshot(path=str(args.out / f"ui-{name}.png"), full_page=name != "search")
                    print(f"wrote {args.out / f'ui-{name}.png'}")
                browser.close()
        finally:
            run.stop()
            for kind in ("memories", "relations"):
                http("DELETE", f"{args.url}/{prefix}-memorie-{kind}")
            _cli("drop", "--set", "--yes", "--hosts", args.url, "--index-prefix", prefix, home=home)


if __name__ == "__main__":
    main()
