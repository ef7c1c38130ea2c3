"""Secured OpenSearch nodes (opensearch-security plugin, TLS on HTTP and transport, internal users): reme-es
connects with the right CA, fails with advice without one, hides a wrong password, and stays inside a
prefix-limited role.

The secured flavours are launcher data (reme_es.server.flavours): `opensearch-2.19-security` always runs, like the
secured Elasticsearch node; `opensearch-3.4-security` is opt-in (REME_ES_TEST_OPENSEARCH3=1, or
REME_ES_TEST_FLAVOURS naming it). The security index is initialised from the config files
(`plugins.security.allow_default_init_securityindex`). The nodes start the way `reme-es server start --secure`
starts one (reme_es.server.secure; password hashes from the plugin's own Hasher), with the prefix writer added; the
team page's walkthrough runs on them (walkthrough_cases.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from reme_es.adapters.dialect import ClientSettings
from reme_es.core.options import IndexOptions
from reme_es.server import secure
from reme_es.server.flavours import get_flavour
from reme_es.store.connect import open_store
from reme_es.testing.data import DIMS, chunk, file_with, unit_vector
from tests.containers.early import EARLY, Call, needs
from tests.containers.servers import selected_flavours

from .access_cases import AccessCases, granted, memorie_granted  # noqa: F401 - the class fixtures of AccessCases
from .access_more_cases import AccessRoundTwo
from .secured_cases import WRITER, WRITER_PW, SecuredCases, secured_node
from .ui_grant_cases import UiGrantCases
from .walkthrough_cases import WalkthroughCases

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


@contextmanager
def secured_node_os(flavour_name: str) -> Iterator[tuple[str, str]]:
    """(url, ca path) of a node of a secured flavour, stopped and removed at exit."""
    name = f"rsecos-{uuid.uuid4().hex[:6]}"
    extra = secure.Extra({WRITER: WRITER_PW}, {"reme_prefix": PREFIX_ROLE}, {"reme_prefix": [WRITER]})
    with secured_node(flavour_name, name, extra) as url_and_ca:
        yield url_and_ca


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


class TestSecuredOpenSearch(SecuredCases, AccessCases, AccessRoundTwo, WalkthroughCases, UiGrantCases):
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
