"""One way into the store (docs/ARCHITECTURE.md): no caller outside `reme_es/store/` makes a dialect, a port or a
transport of its own, and the port's cluster check guards a view of the dialect's transport, never the transport."""

from __future__ import annotations

import re
from pathlib import Path

import reme_es
from reme_es.adapters.opensearch import OpenSearchDialect
from reme_es.adapters.port import IndexPort
from reme_es.adapters.transport import ClientSettings

PACKAGE = Path(reme_es.__file__).parent
# Below the store, and the store itself, may (and the launcher, `server/`, which talks to its own node); the rest of
# the package goes through MemoryStore or store.connect.
ALLOWED = ("store", "adapters", "server")
# (a dialect's capability flags may be read: the contract suite's requirements do)
REACHING = re.compile(
    r"make_dialect\(|IndexPort\(|Dialect\(|dialect\.transport\b|\.transport\.(request|bulk|send_once|close|client|guard)\b"
    r"|\.dialect\.settings"
)


def test_no_caller_outside_the_store_makes_a_dialect_or_touches_a_transport() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        part = path.relative_to(PACKAGE).parts
        if part[0] in ALLOWED:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if REACHING.search(code) and not code.lstrip().startswith(("from ", "import ")):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}")
    # one docstring example: a third party's dialect plugged into the contract suite (reme_es.testing)
    assert [f for f in found if "MyDialect(settings)" not in f] == []


def test_the_cluster_check_guards_a_view_of_the_transport_not_the_transport() -> None:
    dialect = OpenSearchDialect(ClientSettings(["http://127.0.0.1:1"]))
    port = IndexPort(dialect)
    own, view = dialect.transport, port.transport
    assert own.guard is None and view.guard is port.identity
    assert view is not own and type(view) is type(own)
    assert (view.settings, view.policies, view.clock) == (own.settings, own.policies, own.clock)
    assert view.policies is own.policies and view.clock is own.clock
    client = object()
    own._client = client  # one client: made once, seen (and closed) by both
    assert view._client is client
    view._client = None
    assert own._client is None
    other = IndexPort(dialect)  # a second port (another store on the dialect) has its own check
    assert other.transport.guard is other.identity and own.guard is None
    assert port.unscoped().transport is view  # the unscoped port shares the view and its check


def test_the_port_asks_for_the_cluster_past_its_own_check() -> None:
    dialect = OpenSearchDialect(ClientSettings(["http://127.0.0.1:1"]))
    port = IndexPort(dialect)
    sent = []

    async def request(method, path, body=None, params=None):
        sent.append(("request", method, path))
        return {"metadata": {"cluster_uuid": "u1"}}

    async def send_once(method, path, body=None, params=None):
        sent.append(("once", method, path))
        return {"metadata": {"cluster_uuid": "u1"}}

    dialect.transport.request = request  # type: ignore[method-assign]
    dialect.transport.send_once = send_once  # type: ignore[method-assign]

    import asyncio

    asyncio.run(port.identity.record("set-*"))
    assert port.identity.uuid == "u1"
    asyncio.run(port.identity.verify(force=True))
    assert [(kind, method) for kind, method, _ in sent] == [("request", "GET"), ("once", "GET")]
    assert all("set-*" in path for _, _, path in sent)
