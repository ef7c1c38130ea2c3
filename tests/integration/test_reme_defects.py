"""Defects found by driving ReMe's own Application against this file store (issue 15), each through ReMe.

Configuration errors (a typo'd key, a mistyped URL scheme) must stop ReMe's Application when it is built, with a
message naming the problem and the valid choices, instead of being swallowed (`**kwargs`) or connecting in plain
HTTP. ReMe's health_check must show the cluster's counts, as it shows the local store's.
"""

from __future__ import annotations

import pytest

pytest.importorskip("reme.application", reason="ReMe is not installed: pip install 'reme-es[reme]'")

from click.testing import CliRunner

from reme_es.cli import main
from reme_es.errors import ConfigError
from reme_es.reme.file_store import REME_PASS_THROUGH_KEYS
from tests.integration.test_reme import app_config, es_prefix, make_app, write_workspace  # noqa: F401 (fixture)


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
    assert msg.startswith("file_store.default (OpenSearchFileStore): unknown keys 'hots' (did you mean 'hosts'?), "
                          "'hybird' (did you mean 'hybrid'?). Valid keys: hosts, index_prefix, embedding_store,")
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
            f"host {hosts!r} has the unknown scheme {scheme!r}: use http:// or https:// (the only schemes reme-es "
            "connects with), e.g. https://127.0.0.1:9200"
        )
    else:
        assert "needs a scheme" in str(err.value)


async def test_a_bad_scheme_in_reme_es_hosts_fails_the_file_store_start(tmp_path, monkeypatch):
    cfg = app_config(tmp_path, "opensearch", "http://127.0.0.1:9", "t-scheme-env")
    del cfg["components"]["file_store"]["default"]["hosts"]
    monkeypatch.setenv("REME_ES_HOSTS", "htps://127.0.0.1:9200")
    app = make_app(cfg)
    with pytest.raises(ConfigError, match=r"unknown scheme 'htps': use http:// or https://"):
        await app.start()
    await app.close()


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
