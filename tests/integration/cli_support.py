"""What the `reme-es` command-line tests share: the example workspace, the `Cli` runner, helpers.

The tests (test_cli_sync, test_cli_commands, test_cli_embeddings, test_cli_defects) copy examples/workspace to a
temporary folder, use their own index prefix and their own reme-es home (for the local sync state), and drop their
indices afterwards; the `cli` and `node_url` fixtures are in this folder's conftest.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from click.testing import CliRunner

from reme_es.adapters.dialect import ClientSettings
from reme_es.cli import main
from reme_es.core.errors import MappingError
from reme_es.core.options import default_workspace_key
from reme_es.store import MemoryStore
from reme_es.store.connect import detect_engine, make_dialect, open_store

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workspace"
BUILTIN = ["--chunker", "builtin", "--dirs", "daily,digest,resource", "--suffix", "md,jsonl"]
EXAMPLE_FILES = [
    "daily/2026-05-18.md",
    "daily/2026-05-19/notes.md",
    "digest/indexing.md",
    "digest/project-atlas.md",
    "digest/search.md",
    "resource/conversations.jsonl",
    "resource/tools.jsonl",
]


async def _with_store(url: str, prefix: str, fn, workspace: str | None = None):
    cs = ClientSettings([url])
    store = MemoryStore(make_dialect(await detect_engine(cs), cs), prefix, workspace=workspace)
    try:
        return await fn(store)
    finally:
        await store.close()


async def _drop(url: str, prefix: str) -> None:
    """Drop the prefix's indices and its hybrid pipeline (a connected store knows the pipeline's name)."""
    try:
        store = await open_store(ClientSettings([url]), prefix, create=False)
    except MappingError:  # no indices (e.g. a dry run only)
        return await _with_store(url, prefix, lambda s: s.drop())
    try:
        await store.drop()
    finally:
        await store.close()


class Cli:
    """Runs `reme-es` in-process against the test node with this test's prefix."""

    def __init__(self, url: str, prefix: str, workspace: Path, home: Path):
        self.url, self.prefix, self.workspace, self.home = url, prefix, workspace, home

    @property
    def key(self) -> str:
        """The workspace key a sync of this test's workspace writes (every other command is pointed at it)."""
        return default_workspace_key(self.workspace)

    def __call__(self, *args: str, target: bool = True) -> object:
        extra = ["--hosts", self.url, "--index-prefix", self.prefix, "--workspace-key", self.key] if target else []
        if target and args and args[0] != "sync" and "-w" not in args:  # sync names its folder as its argument
            extra += ["-w", str(self.workspace)]
        result = CliRunner().invoke(main, [*args, *extra], env={"REME_ES_HOME": str(self.home)}, catch_exceptions=False)
        return result

    def sync(self, *args: str):
        return self("sync", str(self.workspace), *BUILTIN, *args)

    def search(self, query: str, *args: str) -> list[tuple[str, int, int]]:
        result = self("search", query, "--json", "--limit", "10", *args)
        assert result.exit_code == 0, result.stderr
        return [(h["path"], h["start_line"], h["end_line"]) for h in json.loads(result.stdout)["hits"]]

    def store(self, fn):
        return asyncio.run(_with_store(self.url, self.prefix, fn, self.key))

    def watch(self, url: str, stderr) -> subprocess.Popen:
        """`reme-es sync --watch` of the workspace against `url` in a child process (stdout piped, text)."""
        env = {**os.environ, "REME_ES_HOME": str(self.home), "PYTHONUNBUFFERED": "1"}
        cmd = [
            sys.executable,
            "-m",
            "reme_es.cli",
            "sync",
            str(self.workspace),
            *BUILTIN,
            "--watch",
            "--hosts",
            url,
            "--index-prefix",
            self.prefix,
        ]
        return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True)


def _summary(result) -> str:
    lines = [x for x in result.stdout.splitlines() if x.startswith(("synced:", "would sync:"))]
    assert lines, result.stdout + result.stderr
    return re.sub(r"; \d+ chunks in .*$", "", lines[-1])


def _touch(path: Path, text: str) -> None:
    """Write and move the mtime forward (coarse file-system clocks must not hide the change)."""
    before = path.stat().st_mtime if path.exists() else 0
    path.write_text(text, encoding="utf-8")
    os.utime(path, (time.time(), max(time.time(), before + 1)))


def _chunk_versions(cli, path: str) -> dict[str, tuple[int, int]]:
    """(seq_no, primary_term) of each stored chunk of `path`: a chunk written again gets a new one."""
    body = {"query": {"term": {"path": path}}, "seq_no_primary_term": True, "_source": ["chunk_id"], "size": 100}
    req = urllib.request.Request(
        f"{cli.url}/{cli.prefix}-chunks/_search",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        hits = json.loads(resp.read())["hits"]["hits"]
    return {h["_source"]["chunk_id"]: (h["_seq_no"], h["_primary_term"]) for h in hits}


def _local_model_installed() -> bool:
    from reme_es.embeddings.minilm import default_model_path, default_tokenizer_path

    return default_model_path() is not None and default_tokenizer_path() is not None


def _search_json(cli, query: str, *args: str, env: dict | None = None):
    result = CliRunner().invoke(
        main,
        [
            "search",
            query,
            "--json",
            "--no-links",
            *args,
            "--hosts",
            cli.url,
            "--index-prefix",
            cli.prefix,
            "--workspace-key",
            cli.key,
        ],
        env={"REME_ES_HOME": str(cli.home), **(env or {})},
    )
    return result, (json.loads(result.stdout) if result.exit_code == 0 else None)
