"""Session-wide test servers and per-test stores.

Flavours under test (tests.containers.servers.selected_flavours): opensearch-3 (the flavour users get by default)
and elasticsearch-9; opensearch-2.19 runs the contract suite; `REME_ES_TEST_FLAVOURS=a,b` picks. Secured flavours need
TLS material and users, so the `server` fixture leaves them to tests/reliability/test_secured_opensearch.py.
Every store gets its own index prefix and is dropped afterwards, so tests never see each other's data.
Dedicated nodes some tests need are started in the background once collection is over (tests/containers/early.py).
"""

from __future__ import annotations

import os
import uuid
from contextlib import ExitStack

import pytest

from reme_es.server.flavours import get_flavour
from tests.containers.early import EARLY
from tests.containers.servers import SHORT_LIVED_JAVA_OPTS, Server, selected_flavours, server_for

pytest_plugins = ["reme_es.testing.pytest_plugin"]  # the contract suite's store_factory (tests/contract)

# Set before collection ends, so the nodes started ahead (tests/containers/early.py) get it too.
os.environ.setdefault("REME_ES_JAVA_OPTS", SHORT_LIVED_JAVA_OPTS)

FLAVOURS = [f for f in selected_flavours() if get_flavour(f).security_plugin is None]

# For tests of what the client does when the node fails it (retries waited out, an outage, a killed process): the
# engine takes no part in that, so they run on the first flavour under test only (OpenSearch 3 by default) and
# spend their waiting once; what each engine stores after such a failure is tested per flavour (test_sync_crash.py,
# the contract suite).
first_flavour_only = pytest.mark.parametrize("server", FLAVOURS[:1], indirect=True, scope="session")


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the dedicated nodes the selected tests need in the background, in the order they need them."""
    if not session.config.option.collectonly:
        EARLY.plan(session.items)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop the nodes started ahead that no test took."""
    EARLY.close()


class _Servers:
    """Starts each flavour on first use and keeps it for the session."""

    def __init__(self) -> None:
        self._stack = ExitStack()
        self._servers: dict[str, Server] = {}

    def get(self, flavour: str) -> Server:
        if flavour not in self._servers:
            self._servers[flavour] = self._stack.enter_context(server_for(flavour))
        return self._servers[flavour]

    def close(self) -> None:
        self._stack.close()


@pytest.fixture(scope="session")
def servers():
    """Lazily started test servers, stopped at the end of the session."""
    s = _Servers()
    try:
        yield s
    finally:
        s.close()


@pytest.fixture(scope="session", params=FLAVOURS)
def server(request, servers) -> Server:
    """Each flavour under test in turn (tests using it run once per flavour)."""
    return servers.get(request.param)


@pytest.fixture(scope="session")
def node_url(servers) -> str:
    """URL of the first flavour's test server (OpenSearch 3 by default)."""
    return servers.get(FLAVOURS[0]).url


@pytest.fixture
def prefix() -> str:
    """A fresh index prefix for one test."""
    return f"t-{uuid.uuid4().hex[:12]}"
