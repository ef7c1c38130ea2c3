"""The cases every secured node must pass, whatever the engine: a mixin for one test class per engine.

A subclass sets ENGINE, provides the module fixture `secured` -> (url, ca path) of a node whose users are ADMIN
(all privileges) and WRITER (a role limited to `rsec-*`), and `roundtrip(settings, prefix)`: connect, write,
find, drop.
"""

from __future__ import annotations

import base64
import os
import shutil
import traceback
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from reme_es.adapters.dialect import ClientSettings
from reme_es.core.errors import AuthError, ConnectionFailed
from reme_es.server import node, secure
from reme_es.store.connect import open_store

from .conftest import free_port

# Fresh per session, and kept in the environment so that a holder process starting a secured node ahead
# (tests/containers/early.py) gives it the same passwords.
ADMIN, ADMIN_PW = secure.ADMIN, os.environ.setdefault("REME_ES_TEST_ADMIN_PW", f"Adm1n-{uuid.uuid4().hex[:10]}")
WRITER, WRITER_PW = "reme_writer", os.environ.setdefault("REME_ES_TEST_WRITER_PW", f"Wr1t-{uuid.uuid4().hex[:10]}")
WRONG_PW = "Wr0ng-" + uuid.uuid4().hex[:10]


@contextmanager
def secured_node(flavour: str, name: str, extra: secure.Extra) -> Iterator[tuple]:
    """Start a secured node the way `reme-es server start --secure` does (reme_es.server.secure), with ADMIN_PW as
    the admin's password and `extra` users and roles, on the basic licence (the tests start the trial themselves);
    yield (url, ca path), and stop and remove it afterwards, also when a test failed."""
    try:
        info = secure.start(
            flavour,
            name,
            free_port(),
            "384m",
            admin_password=ADMIN_PW,
            extra=extra,
            trial=False,
            timeout=300,  # started ahead, it shares the CPU with the running tests
        )
        assert info.url.startswith("https://127.0.0.1:")
        yield info.url, secure.credentials(name).ca_certs
    finally:
        node.stop(name)
        shutil.rmtree(node.node_dir(name), ignore_errors=True)


def prefix() -> str:
    """A fresh prefix inside the writer role's `rsec-*`."""
    return f"rsec-{uuid.uuid4().hex[:8]}"


class SecuredCases:
    """Right CA connects; missing CA names the option; wrong password hides secrets; the prefix role holds."""

    ENGINE = ""

    async def roundtrip(self, settings: ClientSettings, prefix: str) -> None:
        raise NotImplementedError

    async def test_right_ca_and_admin_password_connect(self, secured):
        url, ca = secured
        await self.roundtrip(ClientSettings([url], username=ADMIN, password=ADMIN_PW, ca_certs=ca), prefix())

    async def test_missing_ca_fails_with_the_option_to_set(self, secured):
        url, _ = secured
        settings = ClientSettings([url], username=ADMIN, password=ADMIN_PW, timeout=5.0, max_retries=0)
        with pytest.raises(ConnectionFailed) as err:
            await open_store(settings, prefix(), self.ENGINE)
        message = str(err.value)
        assert message.startswith(f"could not reach {url} (")
        assert "certificate verify failed" in message
        assert "set ca_certs to the CA file that signed the server certificate" in message
        assert ADMIN_PW not in "".join(traceback.format_exception(err.value))

    async def test_wrong_password_is_an_auth_error_without_the_secret(self, secured):
        url, ca = secured
        settings = ClientSettings([url], username=ADMIN, password=WRONG_PW, ca_certs=ca, max_retries=0)
        with pytest.raises(AuthError) as err:
            await open_store(settings, prefix(), self.ENGINE)
        message = str(err.value)
        assert message.startswith("GET /_nodes/_local/plugins: the server answered 401 (")
        assert "check the username/password or API key" in message
        full = "".join(traceback.format_exception(err.value)) + repr(settings)
        for secret in (WRONG_PW, ADMIN_PW, base64.b64encode(f"{ADMIN}:{WRONG_PW}".encode()).decode()):
            assert secret not in full

    async def test_prefix_role_works_inside_its_prefix(self, secured):
        url, ca = secured
        await self.roundtrip(ClientSettings([url], username=WRITER, password=WRITER_PW, ca_certs=ca), prefix())

    async def test_prefix_role_gets_403_outside_its_prefix(self, secured):
        url, ca = secured
        other = f"other-{uuid.uuid4().hex[:8]}"
        settings = ClientSettings([url], username=WRITER, password=WRITER_PW, ca_certs=ca, max_retries=0)
        with pytest.raises(AuthError) as err:
            await open_store(settings, other, self.ENGINE)
        message = str(err.value)
        assert "the server answered 403 (" in message
        assert f"{other}-" in message
        assert "and that the role may use this index prefix" in message
        assert WRITER_PW not in "".join(traceback.format_exception(err.value))
