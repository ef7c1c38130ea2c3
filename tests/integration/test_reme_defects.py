"""Defects found by driving ReMe's own Application against this file store (issue 15), each through ReMe.

Configuration errors (a typo'd key, a mistyped URL scheme) must stop ReMe's Application when it is built, with a
message naming the problem and the valid choices, instead of being swallowed (`**kwargs`) or connecting in plain
HTTP.
"""

from __future__ import annotations

import pytest

pytest.importorskip("reme.application", reason="ReMe is not installed: pip install 'reme-es[reme]'")

from click.testing import CliRunner

from reme_es.cli import main
from reme_es.errors import ConfigError
from reme_es.reme.file_store import REME_PASS_THROUGH_KEYS
from tests.integration.test_reme import app_config, make_app


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
