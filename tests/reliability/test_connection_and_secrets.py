"""Every host down, and credentials: errors come fast, say what to do, and never carry a secret.

The secrets are checked in the exception message, its whole chained traceback, repr() of the settings, and
everything the opensearch, urllib3, aiohttp and reme_es loggers print at DEBUG while the call fails.
"""

from __future__ import annotations

import base64
import gc
import json
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from reme_es.adapters.dialect import ClientSettings
from reme_es.core.errors import AuthError, ConnectionFailed
from reme_es.store.connect import open_store

from .conftest import free_port

PASSWORD = "s3cr3t-Pw"
API_KEY = "k3y-AbC123"
SECRETS = (PASSWORD, API_KEY, base64.b64encode(f"reme:{PASSWORD}".encode()).decode())


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def _full_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))


def test_settings_repr_hides_secrets():
    settings = ClientSettings(
        ["http://127.0.0.1:9"], username="reme", password=PASSWORD, api_key=API_KEY, client_key="/keys/client.key"
    )
    text = repr(settings) + str(settings)
    assert _leaks(text) == []
    assert "reme" in text and "127.0.0.1:9" in text


@pytest.mark.parametrize("engine", ["opensearch", "auto"])
async def test_every_host_down_fails_fast_with_advice(engine, debug_log):
    hosts = [f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"]
    settings = ClientSettings(hosts, username="reme", password=PASSWORD, timeout=1.0, max_retries=1)
    budget = 5.0
    started = time.monotonic()
    with pytest.raises(ConnectionFailed) as err:
        await open_store(settings, "rel-down", engine)
    elapsed = time.monotonic() - started

    assert elapsed < budget
    message = str(err.value)
    assert message.startswith(f"could not reach {hosts[0]}, {hosts[1]} (")
    assert "check that the server runs and the hosts/TLS settings are right" in message
    assert "reme-es server start" in message
    assert _leaks(_full_text(err.value)) == []
    assert any("127.0.0.1" in r for r in debug_log)  # the client did log the failed attempts
    assert _leaks("\n".join(debug_log)) == []
    del err
    gc.collect()
    assert [r for r in debug_log if "Unclosed" in r] == []  # connections marked dead were closed too


async def test_credentials_inside_host_urls_are_not_echoed(debug_log):
    hosts = [f"http://reme:{PASSWORD}@127.0.0.1:{free_port()}"]
    settings = ClientSettings(hosts, timeout=1.0, max_retries=0)
    with pytest.raises(ConnectionFailed) as err:
        await open_store(settings, "rel-down", "opensearch")
    assert "could not reach http://reme:***@127.0.0.1:" in str(err.value)
    assert _leaks(_full_text(err.value)) == []
    assert _leaks(repr(settings)) == []
    assert _leaks("\n".join(debug_log)) == []


class _Unauthorized(BaseHTTPRequestHandler):
    """Answers every request like a secured OpenSearch node given bad credentials; records what it received."""

    seen: list[str] = []

    def _answer(self) -> None:
        _Unauthorized.seen.append(self.headers.get("Authorization", ""))
        body = json.dumps(
            {
                "error": {
                    "root_cause": [{"type": "security_exception", "reason": "Unauthorized"}],
                    "type": "security_exception",
                    "reason": "Unauthorized",
                },
                "status": 401,
            }
        ).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("WWW-Authenticate", 'Basic realm="OpenSearch Security"')
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_HEAD = _answer

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def unauthorized_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Unauthorized)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Unauthorized.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("auth", ["basic", "api_key"])
async def test_401_names_the_fix_and_hides_the_credentials(auth, unauthorized_url, debug_log):
    creds = {"username": "reme", "password": PASSWORD} if auth == "basic" else {"api_key": API_KEY}
    settings = ClientSettings([unauthorized_url], timeout=2.0, max_retries=0, **creds)
    with pytest.raises(AuthError) as err:
        await open_store(settings, "rel-auth", "opensearch")

    sent = _Unauthorized.seen[0]
    assert sent == (f"Basic {SECRETS[2]}" if auth == "basic" else f"ApiKey {API_KEY}")  # the secret was sent
    assert str(err.value) == (
        "GET /_nodes/_local/plugins: the server answered 401 (Unauthorized); check the username/password or API "
        "key, and that the role may use this index prefix"
    )
    assert _leaks(_full_text(err.value)) == []
    assert _leaks("\n".join(debug_log)) == []
