"""Every ReMe YAML a user would copy from the docs resolves, through ReMe's own config resolution and Application, to
reme-es' file store: a `file_store:` outside `components:` (silently ignored by ReMe, which then keeps its local
store), a missing `extends: default` or `plugins: [reme-es]`, or an unknown backend or step fails here. No node is
needed: ReMe builds its components at construction and the store connects only at start.

A sample with an `extends:` line is a whole file; a sample without one is an addition to the page's last whole file
(as the pages say: "three more lines")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

pytest.importorskip("reme.application", reason="ReMe is not installed: pip install 'reme-es[reme]'")

from reme.application import Application
from reme.config import resolve_app_config
from reme.config.config_parser import deep_merge_config
from reme.schema.application_config import ApplicationConfig

ROOT = Path(__file__).resolve().parents[2]
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md", ROOT / "reme_es" / "reme" / "README.md"]
# Top-level keys that make a YAML block a ReMe configuration (file_store: the mistake of putting it at the top).
REME_KEYS = {"extends", "plugins", "components", "jobs", "workspace_dir", "service", "file_store"}
TOP_LEVEL = {"extends", *ApplicationConfig.model_fields}


def samples() -> list[tuple[str, dict | None, str]]:
    """(page:line, the config to resolve, what is wrong with it) for every ReMe YAML block of the pages, additions
    merged onto their base."""
    found = []
    for page in PAGES:
        text, base = page.read_text(encoding="utf-8"), None
        for match in re.finditer(r"^```yaml\n(.*?)^```", text, re.S | re.M):
            body = yaml.safe_load(match.group(1))
            if not isinstance(body, dict) or not REME_KEYS & set(body):
                continue  # a role or a settings file, not ReMe's
            where = f"{page.relative_to(ROOT)}:{text[: match.start()].count(chr(10)) + 1}"
            if unknown := set(body) - TOP_LEVEL:
                found.append((where, None, f"ReMe ignores top-level {sorted(unknown)} (belongs under `components:`?)"))
            elif "extends" in body:
                base = body
                found.append((where, body, ""))
            elif base is None:
                found.append((where, None, "no `extends: default`, and no whole file (with it) before it on the page"))
            else:
                found.append((where, deep_merge_config(base, body), ""))
    return found


SAMPLES = samples()


def test_the_pages_have_their_samples():
    pages = {where.split(":")[0] for where, _, _ in SAMPLES}
    assert {"README.md", "docs/reme.md", "docs/team-server.md", "reme_es/reme/README.md"} <= pages
    assert len(SAMPLES) >= 8


@pytest.mark.parametrize("where, config, problem", SAMPLES, ids=[w for w, _, _ in SAMPLES])
def test_a_doc_sample_runs_reme_on_the_reme_es_file_store(where, config, problem, tmp_path):
    if problem:
        pytest.fail(f"{where}: {problem}")
    path = tmp_path / "memory.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    resolved = resolve_app_config(
        config=str(path),
        workspace_dir=str(tmp_path / "ws"),
        log_config=False,
        log_to_file=False,
        log_to_console=False,
        enable_logo=False,
    )
    app = Application(**resolved)  # an unregistered backend or step raises here
    store = app.context.components["file_store"]["default"]
    assert type(store).__module__.startswith("reme_es."), f"{where}: ReMe runs on {type(store).__name__}"
    for job in config.get("jobs", {}):
        assert job in app.context.jobs, f"{where}: job {job} is not built"
