"""The team page's walkthrough (docs/team-server.md, "From nothing: a secured node, two workspaces, two users"),
run as written with bash on a secured OpenSearch node: a mixin for the secured OpenSearch test class, so it runs on
the node that class started already (`secured` -> (url, ca path)) instead of starting one more.

The only change made to the page's commands is the node's name: `--name team` becomes the name of the class's node,
which `reme-es server start --secure` then finds running (the tests start their secured nodes through the same
`reme_es.server.secure.start`). The walkthrough runs with HOME in a fresh folder (its `~/team/...` workspaces),
the `reme-es` of this checkout first on PATH, and none of the session's REME_ES_HOSTS/CA/credential variables.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from reme_es.server import node

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "team-server.md"
MARK = "<!-- walkthrough: run as written"


def walkthrough() -> str:
    """The bash block right after the page's walkthrough mark."""
    text = PAGE.read_text(encoding="utf-8")
    found = re.search(re.escape(MARK) + r".*?-->\n```bash\n(.*?)^```", text, re.S | re.M)
    assert found, f"{PAGE} has no bash block after {MARK!r}"
    return found.group(1)


def node_at(url: str) -> str:
    """The name of the managed node that answers at `url` (its node.json names the port)."""
    port = int(url.rsplit(":", 1)[1])
    for record in (node.reme_es_home() / "nodes").glob("*/node.json"):
        if json.loads(record.read_text()).get("http_port") == port:
            return record.parent.name
    raise AssertionError(f"no managed node records port {port}")


def run_walkthrough(name: str, home: Path) -> subprocess.CompletedProcess:
    """The walkthrough with `--name team` replaced by `--name NAME`, under `bash -euo pipefail`."""
    script = walkthrough()
    assert script.count("--name team") == 2, script
    env = {k: v for k, v in os.environ.items() if not k.startswith("REME_ES_")}
    env.update(
        HOME=str(home),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        REME_ES_HOME=str(node.reme_es_home()),
    )
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script.replace("--name team", f"--name {name}")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


class WalkthroughCases:
    """The walkthrough ends with mia's note found and leo's workspace refused to her."""

    def test_team_walkthrough_runs_as_written(self, secured, tmp_path):
        url, _ = secured
        done = run_walkthrough(node_at(url), tmp_path)
        out = done.stdout + done.stderr
        assert done.returncode == 0, out
        assert "The blue heron nests by the north pond." in done.stdout, out
        assert "grey heron" not in out and "weir" not in out, out
        assert done.stdout.rstrip().endswith("mia may not read leo's workspace"), out
        assert "error: workspace leo-" in done.stderr and "has nothing in index set team" in done.stderr, out

    def test_server_status_and_env_name_the_secured_node(self, secured):
        url, ca = secured
        check_status_and_env(node_at(url), url, ca)


def check_status_and_env(name: str, url: str, ca: str) -> None:
    """`server status` shows the https URL, the admin, the password file (0600, the admin's password) and the CA;
    `server env` prints the four REME_ES_* lines a shell `eval`s."""
    from click.testing import CliRunner

    from reme_es.cli import main

    from .secured_cases import ADMIN, ADMIN_PW

    secret = node.node_dir(name) / "secret"
    password_file = secret / "admin.password"
    assert ca == str(secret / "ca.crt")
    assert password_file.read_text() == ADMIN_PW + "\n"
    assert (password_file.stat().st_mode & 0o777, secret.stat().st_mode & 0o777) == (0o600, 0o700)
    status = CliRunner().invoke(main, ["server", "status", "--name", name], env={"REME_ES_HOSTS": None})
    assert status.exit_code == 0, status.output
    lines = status.output.splitlines()
    assert lines[0].startswith(f"node {name!r}: ") and lines[0].split(" at ")[1].startswith(f"{url}, health ")
    assert lines[1:4] == [
        f"secured: user {ADMIN}, CA certificate {ca}",
        f"password of {ADMIN}: in {password_file} (0600)",
        f'connect: eval "$(reme-es server env --name {name})"',
    ]
    assert ADMIN_PW not in status.output
    view = json.loads(CliRunner().invoke(main, ["server", "status", "--json", "--name", name]).output)
    assert view["security"] == {"username": ADMIN, "password_file": str(password_file), "ca_certs": ca}
    env = CliRunner().invoke(main, ["server", "env", "--name", name])
    assert (env.exit_code, env.output.splitlines()) == (
        0,
        [
            f"export REME_ES_HOSTS={url}",
            f"export REME_ES_CA_CERTS={ca}",
            f"export REME_ES_USERNAME={ADMIN}",
            f'export REME_ES_PASSWORD="$(cat {password_file})"',
        ],
    )
