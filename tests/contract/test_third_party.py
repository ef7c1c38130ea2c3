"""The contract suite runs from another package with only the suite's plugin and a cluster: no project conftest,
no `asyncio_mode = auto`, no knowledge of this repository's fixtures.

A pytest child process collects a module written into a fresh folder (its own rootdir and ini file, strict
asyncio mode) that subclasses contract mixins, and runs selected cases against the current flavour's server.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

THIRD_PARTY = textwrap.dedent(
    '''
    from reme_es.testing import HybridContract, LinkContract, WriteContract


    class TestMyAdapter(WriteContract, LinkContract, HybridContract):
        """A third party's adapter tests: nothing but the mixins."""
    '''
)
CASES = (
    "upsert_then_keyword_search_finds_exactly_the_matching_chunk or upsert_replaces_every_chunk_of_the_path "
    "or link_scopes_follow_the_target or native_and_client_fusion_give_the_same_ranking"
)


def test_the_suite_runs_from_a_separate_package_with_only_its_plugin(server, tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # its own config: strict asyncio mode, no project settings
    (tmp_path / "test_my_adapter.py").write_text(THIRD_PARTY)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REME_ES_TEST", "PYTEST"))}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
            "-p",
            "reme_es.testing.pytest_plugin",
            "--rootdir",
            str(tmp_path),
            "--reme-es-hosts",
            server.url,
            "--reme-es-engine",
            server.engine,
            "-k",
            CASES,
            str(tmp_path),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "PytestUnhandledCoroutineWarning" not in out and "coroutine" not in out  # every case ran as async
    summary = proc.stdout.strip().splitlines()[-1]
    passed = int(re.search(r"(\d+) passed", summary).group(1))
    skipped = int(m.group(1)) if (m := re.search(r"(\d+) skipped", summary)) else 0
    assert (passed + skipped, passed >= 3) == (4, True), out  # the fusion case may skip, with its reason
    assert "error" not in summary and "warning" not in summary, out
    if skipped:
        assert "lacks native hybrid search for the configured fusion" in out


PARTNER_DIALECT = textwrap.dedent(
    '''
    """A dialect of another package: the {engine} dialect under its own engine name."""
    from reme_es.adapters.{module} import {base}


    class PartnerDialect({base}):
        engine = "partner"
    '''
)
PARTNER_TESTS = textwrap.dedent(
    """
    from reme_es.testing import WriteContract


    class TestPartnerAdapter(WriteContract):
        async def test_the_store_runs_on_the_dialect_the_entry_point_names(self, store_factory):
            store = await store_factory()
            dialect = type(store.dialect)
            assert (dialect.__module__, dialect.__name__, store.dialect.engine) == (
                "partner_dialect", "PartnerDialect", "partner"
            )
    """
)


def test_an_out_of_tree_dialect_plugs_in_through_the_entry_point_and_passes_a_contract_case(server, tmp_path):
    """A package that is not reme-es registers a dialect in `reme_es.dialects`; `--reme-es-engine` names it."""
    module, base = (
        ("opensearch", "OpenSearchDialect")
        if server.engine == "opensearch"
        else ("elasticsearch", "ElasticsearchDialect")
    )
    package = tmp_path / "site"
    dist = package / "partner_dialect-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: partner-dialect\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[reme_es.dialects]\npartner = partner_dialect:PartnerDialect\n")
    (package / "partner_dialect.py").write_text(PARTNER_DIALECT.format(engine=server.engine, module=module, base=base))
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "pytest.ini").write_text("[pytest]\n")
    (tests / "test_partner.py").write_text(PARTNER_TESTS)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REME_ES_TEST", "PYTEST"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(package), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "reme_es.testing.pytest_plugin",
            "--rootdir",
            str(tests),
            "--reme-es-hosts",
            server.url,
            "--reme-es-engine",
            "partner",
            "-k",
            "runs_on_the_dialect or upsert_then_keyword_search_finds_exactly_the_matching_chunk",
            str(tests),
        ],
        cwd=tests,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert proc.stdout.strip().splitlines()[-1].startswith("2 passed"), out
