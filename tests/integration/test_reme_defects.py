"""Defects found by driving ReMe's own Application against this file store (issue 15), each through ReMe.

Configuration errors (a typo'd key, a mistyped URL scheme) must stop ReMe's Application when it is built, with a
message naming the problem and the valid choices, instead of being swallowed (`**kwargs`) or connecting in plain
HTTP. ReMe's health_check must show the cluster's counts, as it shows the local store's. Changes ReMe's watcher
could not write while the cluster was unreachable must reach it when it answers again, without a restart.
"""

from __future__ import annotations

import asyncio
import urllib.parse

import pytest

pytest.importorskip("reme.application", reason="ReMe is not installed: pip install 'reme-es[reme]'")

from click.testing import CliRunner

from reme_es.cli import main
from reme_es.core.errors import ConfigError
from reme_es.reme.keys import REME_PASS_THROUGH_KEYS
from tests.conftest import first_flavour_only
from tests.integration.test_reme import PATHS, app_config, make_app, write_workspace


def test_a_misspelled_file_store_key_stops_the_application_naming_the_valid_keys(tmp_path, monkeypatch):
    monkeypatch.delenv("REME_ES_HOSTS", raising=False)
    cfg = app_config(tmp_path, "opensearch", "http://127.0.0.1:9", "t-typo")
    store = cfg["components"]["file_store"]["default"]
    # `resolve_app_config` merged ReMe's default.yaml into the store's keys: its pass-through keys are there...
    assert set(REME_PASS_THROUGH_KEYS) <= set(store)
    make_app(cfg)  # ...and accepted.
    # A typo in `hosts` with no REME_ES_HOSTS used to be swallowed, and start() then launched a managed node.
    store["hots"] = store.pop("hosts")
    store["hybird"] = "client"
    with pytest.raises(ConfigError) as err:
        make_app(cfg)
    msg = str(err.value)
    assert msg.startswith(
        "file_store.default (OpenSearchFileStore): unknown keys 'hots' (did you mean 'hosts'?), "
        "'hybird' (did you mean 'hybrid'?). Valid keys: hosts, index_prefix, embedding_store,"
    )
    assert "(ReMe's store_name, keyword_index, file_graph are accepted and ignored)" in msg


@pytest.mark.parametrize("hosts", ["htps://127.0.0.1:9200", "tcp://127.0.0.1:9200", "127.0.0.1:9200"])
def test_only_http_and_https_urls_are_accepted_by_the_file_store(tmp_path, hosts, monkeypatch):
    monkeypatch.delenv("REME_ES_HOSTS", raising=False)
    cfg = app_config(tmp_path, "opensearch", hosts, "t-scheme")
    with pytest.raises(ConfigError) as err:
        make_app(cfg)
    scheme = hosts.partition("://")[0] if "://" in hosts else None
    if scheme:
        assert str(err.value) == (
            f"invalid settings (file_store.default): hosts: host {hosts!r} has the unknown scheme {scheme!r}: use "
            "http:// or https:// (the only schemes reme-es connects with), e.g. https://127.0.0.1:9200"
        )
    else:
        assert "needs a scheme" in str(err.value)


async def test_a_bad_scheme_in_reme_es_hosts_stops_the_file_store_naming_the_variable(tmp_path, monkeypatch):
    cfg = app_config(tmp_path, "opensearch", "http://127.0.0.1:9", "t-scheme-env")
    del cfg["components"]["file_store"]["default"]["hosts"]
    monkeypatch.setenv("REME_ES_HOSTS", "htps://127.0.0.1:9200")
    refused = r"\(environment, file_store\.default\): hosts: .*unknown scheme 'htps': use http:// or https://"
    with pytest.raises(ConfigError, match=refused):
        make_app(cfg)


def test_the_cli_and_the_config_file_refuse_a_bad_scheme_naming_it(tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["status", "-w", str(tmp_path), "--hosts", "htps://127.0.0.1:9200"])
    assert result.exit_code != 0
    assert "unknown scheme 'htps': use http:// or https://" in result.output
    (tmp_path / "reme-es.yaml").write_text("hosts: [ftp://127.0.0.1:9200]\n")
    result = runner.invoke(main, ["status", "-w", str(tmp_path)])
    assert result.exit_code != 0
    assert "unknown scheme 'ftp': use http:// or https://" in result.output


async def _health_after_indexing(backend: str, ws, url: str, prefix: str) -> dict:
    write_workspace(ws)
    app = make_app(app_config(ws, backend, url, prefix))
    await app.start()
    try:
        indexed = await app.run_job("index_once")
        assert indexed.success, indexed.answer
        resp = await app.run_job("health_check")
        assert resp.success, resp.answer
        return resp.metadata["health"]
    finally:
        await app.close()


async def test_health_check_reports_the_cluster_counts_like_the_local_store(server, es_prefix, tmp_path):
    es = await _health_after_indexing(server.engine, tmp_path / "es", server.url, es_prefix)
    local = await _health_after_indexing("local", tmp_path / "local", server.url, es_prefix)
    # ReMe's local store: 9 chunks, all embedded; 6 nodes in its graph; 9 docs in its BM25 index
    assert local["components"]["file_store"]["default"]["n_chunks"] == 9
    assert local["components"]["file_graph"]["default"]["n_nodes"] == 6
    assert local["components"]["keyword_index"]["default"]["n_docs"] == 9
    assert es["healthy"] is True
    store = es["components"]["file_store"]["default"]
    assert (store["is_started"], store["n_chunks"], store["n_chunks_with_embedding"]) == (True, 9, 9)
    graph = es["components"]["file_graph"]["default"]
    # nodes = files; edges = every stored wikilink edge (7 in the workspace, 1 of them to digest/missing.md)
    assert (graph["is_started"], graph["n_nodes"], graph["n_edges"], graph["n_virtual"]) == (True, 6, 7, None)
    keyword = es["components"]["keyword_index"]["default"]
    assert (keyword["is_started"], keyword["n_docs"]) == (True, 9)


class TcpProxy:
    """A TCP proxy on 127.0.0.1 in front of a node: `stop()` drops the listener and every connection (the cluster
    becomes unreachable), `start()` listens again on the same port."""

    def __init__(self, target: str):
        parts = urllib.parse.urlsplit(target)
        self.target = (parts.hostname, parts.port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        """The proxy's URL."""
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        """Listen (on the previous port after a stop)."""
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Stop listening and cut every open connection."""
        self._server.close()
        for w in list(self._writers):
            w.close()
        self._writers.clear()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        self._writers |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


async def _until(check, what: str, timeout: float = 90.0):
    """Poll `check()` (async) until it returns a truthy value; fail naming `what` after `timeout` seconds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        if result := await check():
            return result
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(0.5)


@first_flavour_only
async def test_changes_made_while_the_cluster_is_unreachable_are_applied_when_it_answers(
    server, es_prefix, tmp_path, monkeypatch
):
    monkeypatch.delenv("REME_ES_HOSTS", raising=False)
    proxy = TcpProxy(server.url)
    await proxy.start()
    ws = tmp_path / "ws"
    write_workspace(ws)
    cfg = app_config(ws, server.engine, proxy.url, es_prefix)
    # ReMe's own watcher (default.yaml's index_update_loop: start-up scan, then watchfiles) over daily/ and digest/
    cfg["jobs"]["index_update_loop"]["enabled"] = True
    app = make_app(cfg)
    await app.start()
    fs = app.context.components["file_store"]["default"]
    markdown = sorted(p for p in PATHS if p.endswith(".md"))
    # ReMe's watcher job scans twice (its first step, then the watch step once subscribed); count its get_nodes calls
    scans = []
    reme_get_nodes = fs.get_nodes

    async def counted_get_nodes(paths=None):
        scans.append(paths)
        return await reme_get_nodes(paths)

    fs.get_nodes = counted_get_nodes

    async def node_paths() -> list[str]:
        return sorted(f.path for f in await fs.store.links.get_files(None))

    async def keyword_paths(query: str) -> list[str]:
        resp = await app.run_job("search", query=query, limit=20, vector_weight=0.0)
        assert resp.success, resp.answer
        return sorted({r["path"] for r in resp.metadata["results"]})

    try:
        await _until(lambda: _eq(node_paths(), markdown), "ReMe's start-up scan")
        await _until(lambda: _value(len(scans) >= 2), "ReMe's watcher to subscribe and rescan")
        assert await keyword_paths("alerting") == ["daily/2026-06-02.md"]

        await proxy.stop()  # the cluster is unreachable from here on
        (ws / "digest/zebrafish.md").write_text("# Zebrafish\n\nZebrafish regenerate their fins.\n")
        (ws / "daily/2026-06-02.md").unlink()
        wanted = {"upserts": ["digest/zebrafish.md"], "deletes": ["daily/2026-06-02.md"]}
        # ReMe's update_changes logged "Failed to upsert/delete"; the store kept both changes
        await _until(lambda: _eq(_value(fs.pending_changes), wanted), "the failed changes to be kept")

        await proxy.start()  # the cluster answers again: no restart of ReMe
        expected = sorted([*(p for p in markdown if p != "daily/2026-06-02.md"), "digest/zebrafish.md"])
        await _until(lambda: _eq(node_paths(), expected), "the kept changes to be applied")
        assert fs.pending_changes == {"upserts": [], "deletes": []}
        assert await keyword_paths("zebrafish") == ["digest/zebrafish.md"]
        assert await keyword_paths("alerting") == []
    finally:
        await app.close()
        await proxy.stop()


async def _eq(awaitable, expected) -> bool:
    return await awaitable == expected


async def _value(value):
    return value
