"""Secured OpenSearch nodes (opensearch-security plugin, TLS on HTTP and transport, internal users): reme-es
connects with the right CA, fails with advice without one, hides a wrong password, and stays inside a
prefix-limited role.

The secured flavours are launcher data (reme_es.server.flavours): `opensearch-2.19-security` always runs, like the
secured Elasticsearch node; `opensearch-3.4-security` is opt-in (REME_ES_TEST_OPENSEARCH3=1, or
REME_ES_TEST_FLAVOURS naming it). The security index is initialised from the config files
(`plugins.security.allow_default_init_securityindex`). Password hashes come from the plugin's own Hasher.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from reme_es.adapters.dialect import ClientSettings
from reme_es.core.options import IndexOptions
from reme_es.server import node
from reme_es.server.flavours import Flavour, get_flavour
from reme_es.store.connect import open_store
from reme_es.testing.data import DIMS, chunk, file_with, unit_vector
from tests.containers.early import EARLY, Call, needs
from tests.containers.servers import selected_flavours

from .access_cases import AccessCases, granted, memorie_granted  # noqa: F401 - the class fixtures of AccessCases
from .access_more_cases import AccessRoundTwo
from .secured_cases import ADMIN, ADMIN_PW, WRITER, WRITER_PW, SecuredCases, secured_node, tls_files

# The permissions the prefix role needs for connect, upsert, keyword search and drop (verified by these tests).
PREFIX_ROLE = {
    "cluster_permissions": [
        "cluster_composite_ops",
        "cluster_monitor",
        "cluster:admin/search/pipeline/put",
        "cluster:admin/search/pipeline/delete",
    ],
    "index_permissions": [
        {"index_patterns": ["rsec-*"], "allowed_actions": ["crud", "create_index", "manage"]},
        # POST /_analyze without an index, and GET /_alias/<alias> (drop), are checked against every index
        {"index_patterns": ["*"], "allowed_actions": ["indices:admin/analyze", "indices:admin/aliases/get"]},
    ],
}


def _hashes(flavour: Flavour, home: Path, passwords: list[str]) -> list[str]:
    """bcrypt hashes made by the plugin's Hasher tool (no bcrypt package needed)."""
    java, _ = node.find_java(flavour.java_min, flavour.java_max)
    plugin = home / "plugins" / "opensearch-security"
    classpath = f"{plugin}/*:{plugin}/deps/*:{home}/lib/*"
    out = []
    for password in passwords:
        proc = subprocess.run(
            [f"{java}/bin/java", "-cp", classpath, "org.opensearch.security.tools.Hasher", "-p", password],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        out.append(proc.stdout.strip().splitlines()[-1])
    return out


def _yml(kind: str, body: dict) -> bytes:
    return json.dumps({"_meta": {"type": kind, "config_version": 2}, **body}).encode()  # JSON is YAML


@contextmanager
def secured_node_os(flavour_name: str) -> Iterator[tuple[str, str]]:
    """(url, ca path) of a node of a secured flavour, stopped and removed at exit."""
    flavour = get_flavour(flavour_name)
    name = f"rsecos-{uuid.uuid4().hex[:6]}"
    home = node.install(flavour)
    admin_hash, writer_hash = _hashes(flavour, home, [ADMIN_PW, WRITER_PW])
    folder = Path(tempfile.mkdtemp(prefix="reme-es-secured-os-"))
    files, ca_path = tls_files(name, folder)
    shipped = home / "plugins" / "opensearch-security" / "config"
    for shipped_file in ("action_groups.yml", "tenants.yml", "nodes_dn.yml", "allowlist.yml", "audit.yml"):
        files[f"opensearch-security/{shipped_file}"] = (shipped / shipped_file).read_bytes()
    basic = {
        "http_enabled": True,
        "transport_enabled": True,
        "order": 0,
        "http_authenticator": {"type": "basic", "challenge": True},
        "authentication_backend": {"type": "intern"},
    }
    files["opensearch-security/config.yml"] = _yml(
        "config", {"config": {"dynamic": {"http": {"anonymous_auth_enabled": False}, "authc": {"basic": basic}}}}
    )
    files["opensearch-security/internal_users.yml"] = _yml(
        "internalusers", {ADMIN: {"hash": admin_hash}, WRITER: {"hash": writer_hash}}
    )
    files["opensearch-security/roles.yml"] = _yml("roles", {"reme_prefix": PREFIX_ROLE})
    files["opensearch-security/roles_mapping.yml"] = _yml(
        "rolesmapping", {"all_access": {"users": [ADMIN]}, "reme_prefix": {"users": [WRITER]}}
    )
    pem = {
        "pemcert_filepath": "certs/node.crt",
        "pemkey_filepath": "certs/node.key",
        "pemtrustedcas_filepath": "certs/ca.crt",
    }
    settings = {
        "plugins.security.ssl.http.enabled": True,
        "plugins.security.ssl.transport.enforce_hostname_verification": False,
        "plugins.security.allow_default_init_securityindex": True,
        "plugins.security.nodes_dn": [f"CN={name}"],
        "plugins.security.authcz.admin_dn": ["CN=reme-es-admin"],
        "plugins.security.audit.type": "noop",
        # the security REST API (`reme-es access`: roles, role mappings, users) for ADMIN's all_access role
        "plugins.security.restapi.roles_enabled": ["all_access"],
    }
    for layer in ("http", "transport"):
        settings.update({f"plugins.security.ssl.{layer}.{k}": v for k, v in pem.items()})
    try:
        with secured_node(flavour.name, name, settings, files, ca_path) as url_and_ca:
            yield url_and_ca
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _secured_start(flavour_name: str) -> tuple[str, Call]:
    return f"secured-{flavour_name}", Call(__name__, "secured_node_os", (flavour_name,))


# started in the background ahead of the tests (tests/containers/early.py)
needs(__name__, "secured", lambda item: _secured_start(item.cls.FLAVOUR))


@pytest.fixture(scope="class")
def secured(request):
    """(url, ca path) of a node of the class's secured FLAVOUR; stopped at the end of the class even when a test
    fails."""
    with EARLY.take(*_secured_start(request.cls.FLAVOUR)) as url_and_ca:
        yield url_and_ca


class TestSecuredOpenSearch(SecuredCases, AccessCases, AccessRoundTwo):
    """The shared secured-node cases on opensearch 2.19, and per-workspace access (`reme-es access`)."""

    ENGINE = "opensearch"
    FLAVOUR = "opensearch-2.19-security"

    async def roundtrip(self, settings: ClientSettings, prefix: str) -> None:
        """Connect (with vectors where the flavour has k-NN; with neural-search the hybrid search pipeline is put and
        deleted too), upsert one file, find it by keyword, drop the prefix."""
        flavour = get_flavour(self.FLAVOUR)
        knn = flavour.has_plugin("opensearch-knn")
        # fusion None: the server's native fusion, so the role must be allowed to put and delete the pipeline
        options = IndexOptions(dims=DIMS if knn else None)
        store = await open_store(settings, prefix, "opensearch", options, fusion=None)
        try:
            assert store.native_pipeline_wanted() is flavour.has_plugin("neural-search")
            c = chunk("notes/tls.md", f"lighthouse keeper {prefix}", vector=unit_vector(1) if knn else None)
            outcome = await store.upsert([file_with("notes/tls.md", [c])])
            assert outcome.failures == []
            hits = await store.keyword_search("lighthouse", 5)
            assert [h.chunk.id for h in hits] == [c.id]
            await store.drop()
        finally:
            await store.close()


@pytest.mark.skipif(
    "opensearch-3.4-security" not in selected_flavours(),
    reason="opt-in: REME_ES_TEST_OPENSEARCH3=1 or REME_ES_TEST_FLAVOURS=opensearch-3.4-security",
)
class TestSecuredOpenSearch3(TestSecuredOpenSearch):
    """The same cases on opensearch 3.4 (no k-NN in that flavour: the roundtrip stores no vectors)."""

    FLAVOUR = "opensearch-3.4-security"
